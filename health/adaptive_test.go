package health

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/steadyllm/steady/resilience"
)

func TestHandler_ShowsTheAdaptiveConcurrencyLimit(t *testing.T) {
	o := resilience.DefaultOptions()
	o.AdaptiveConcurrency = true
	o.BulkheadMaxConcurrency = 12
	adaptive, err := resilience.New(o, resilience.WithName("adaptive"))
	if err != nil {
		t.Fatal(err)
	}
	fixed, err := resilience.New(resilience.DefaultOptions(), resilience.WithName("fixed"))
	if err != nil {
		t.Fatal(err)
	}
	c := NewChecker()
	c.Add("adaptive", adaptive)
	c.Add("fixed", fixed)
	rec := httptest.NewRecorder()
	c.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	var doc struct {
		Checks map[string][]map[string]any `json:"checks"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc.Checks["adaptive:circuit"][0]["concurrencyLimit"]; got != 12.0 {
		t.Errorf("adaptive: concurrencyLimit %v, want 12", got)
	}
	if _, ok := doc.Checks["fixed:circuit"][0]["concurrencyLimit"]; ok {
		t.Errorf("a fixed limit is shown: %s", rec.Body.String())
	}
}
