package health

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/steadyllm/steady/resilience"
)

// A pipeline that keeps its state per model shows each model it served as a check of its own:
// one model's open circuit while another serves is a warning, and a refused key (the
// deployment's own circuit) fails every model.
func TestChecker_ModelsOfAPipelineAreJudgedTogether(t *testing.T) {
	o := resilience.DefaultOptions()
	o.CircuitBreakerThreshold = 1
	p, err := resilience.New(o, resilience.WithName("openai"))
	if err != nil {
		t.Fatal(err)
	}
	c := NewChecker()
	c.Add("openai", p)
	p.Route("gpt-4o").OpenFor(60e9)
	_ = p.Route("gpt-4o-mini")
	r := c.Report()
	if r.Status != StatusWarn || len(r.Checks) != 3 || len(r.Groups) != 1 || r.Groups[0].Serving != 1 {
		t.Fatalf("one model down: %+v", r)
	}
	p.Isolate() // the deployment's own circuit: no model can serve
	r = c.Report()
	err = c.Check(context.Background())
	var ue *UnhealthyError
	if r.Status != StatusFail || !errors.As(err, &ue) || len(ue.Failing) != 2 {
		t.Fatalf("the deployment isolated: %s, %v", r.Status, err)
	}
	rec := httptest.NewRecorder()
	c.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("readiness %d", rec.Code)
	}
}
