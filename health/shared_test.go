package health

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/steadyllm/steady/resilience"
)

// store is a shared-state store whose trouble the test sets.
type store struct{ err atomic.Pointer[error] }

func (s *store) Err() error {
	if p := s.err.Load(); p != nil {
		return *p
	}
	return nil
}
func (s *store) Advise(string, resilience.Advice) {}
func (s *store) Advice(string) resilience.Advice  { return resilience.Advice{} }

// set is a circuit set that shares its state through a store, as the steady client does.
type set struct {
	p *resilience.Pipeline
	s resilience.SharedState
}

func (c set) Circuits() map[string]*resilience.Pipeline {
	return map[string]*resilience.Pipeline{"openai": c.p}
}
func (c set) SharedState() resilience.SharedState { return c.s }

// A shared-state store in trouble is a warning, never a failure, and its error is not shown.
func TestChecker_SharedStateIsAWarning(t *testing.T) {
	p, err := resilience.New(resilience.DefaultOptions(), resilience.WithName("openai"))
	if err != nil {
		t.Fatal(err)
	}
	st := &store{}
	c := NewChecker()
	c.AddSet(set{p: p, s: st})
	if r := c.Report(); r.Status != StatusPass || len(r.SharedStates) != 1 || !r.SharedStates[0].Up {
		t.Fatalf("store up: %+v", r)
	}
	down := errors.New("dial tcp 127.0.0.1:6379: connection refused")
	st.err.Store(&down)
	rec := httptest.NewRecorder()
	c.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/ready", nil))
	var doc struct {
		Status string                         `json:"status"`
		Checks map[string][]map[string]string `json:"checks"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	ck := doc.Checks["shared:shared-state"]
	if rec.Code != 200 || doc.Status != "warn" || len(ck) != 1 || ck[0]["observedValue"] != "down" || ck[0]["status"] != "warn" {
		t.Fatalf("store down: %d %s", rec.Code, rec.Body)
	}
	if c.Check(context.Background()) != nil {
		t.Fatal("a store in trouble failed the check")
	}
	if got := rec.Body.String(); strings.Contains(got, "refused") || strings.Contains(got, "6379") {
		t.Fatalf("the store's error leaked: %s", got)
	}
	// An open circuit still fails; the store does not soften it.
	p.Isolate()
	if r := c.Report(); r.Status != StatusFail {
		t.Fatalf("isolated circuit with the store down: %v", r.Status)
	}
}
