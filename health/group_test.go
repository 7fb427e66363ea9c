package health

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/steadyllm/steady/resilience"
)

// grouped is a circuit set whose provider "p" has three deployments, beside a provider "q".
type grouped map[string]*resilience.Pipeline

func (g grouped) Circuits() map[string]*resilience.Pipeline { return g }
func (g grouped) CircuitGroups() map[string][]string {
	return map[string][]string{"p": {"p/d0", "p/d1", "p/d2"}}
}

func newGrouped(t *testing.T) grouped {
	g := grouped{}
	for _, n := range []string{"p/d0", "p/d1", "p/d2", "q"} {
		p, err := resilience.New(resilience.DefaultOptions(), resilience.WithName(n))
		if err != nil {
			t.Fatal(err)
		}
		g[n] = p
	}
	return g
}

// Readiness is honest about deployments: one isolated or taken out among deployments that can
// serve makes the provider a warning; the set fails only when a provider has nothing that can
// serve.
func TestChecker_ADeploymentDownIsAWarningWhileAnotherServes(t *testing.T) {
	g := newGrouped(t)
	c := NewChecker()
	c.AddSet(g)
	status := func() (Status, map[string]any, error) {
		rec := httptest.NewRecorder()
		c.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		var doc map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		r := c.Report()
		if got := Status(doc["status"].(string)); got != r.Status || rec.Code != r.Status.HTTPStatus() {
			t.Fatalf("document %v, HTTP %d, report %s", doc["status"], rec.Code, r.Status)
		}
		return r.Status, doc["checks"].(map[string]any), c.Check(context.Background())
	}
	observed := func(checks map[string]any, key string) string {
		return checks[key].([]any)[0].(map[string]any)["observedValue"].(string)
	}

	if s, checks, _ := status(); s != StatusPass || observed(checks, "p:deployments") != "3 of 3 serving" {
		t.Fatalf("all well: %s %v", s, checks)
	}
	g["p/d0"].Isolate()
	g["p/d1"].OpenFor(time.Minute) // taken out for a refused key
	s, checks, err := status()
	if s != StatusWarn || err != nil || observed(checks, "p:deployments") != "1 of 3 serving" {
		t.Fatalf("two of three down: %s %v %v, want warn", s, checks, err)
	}
	if observed(checks, "p/d0:circuit") != "isolated" || observed(checks, "p/d1:circuit") != "open" {
		t.Fatalf("each deployment keeps its own check: %v", checks)
	}
	g["p/d2"].Isolate()
	s, _, err = status()
	var ue *UnhealthyError
	if s != StatusFail || !errors.As(err, &ue) || len(ue.Failing) != 3 {
		t.Fatalf("none can serve: %s %v, want fail naming the three", s, err)
	}
	g["p/d2"].Reset()
	g["q"].Isolate() // a provider that stands alone still fails the set when it is down
	s, _, err = status()
	if s != StatusFail || !errors.As(err, &ue) || len(ue.Failing) != 1 || ue.Failing[0].Name != "q" {
		t.Fatalf("q down: %s %v", s, err)
	}
}
