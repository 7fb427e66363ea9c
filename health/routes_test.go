package health

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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

// Each route shows what the client measured of its calls — first token, time per output
// token, p50 and p95, error rate, samples — without changing its status; a route that measured
// nothing shows none of it.
func TestChecker_ShowsEachRoutesLatency(t *testing.T) {
	p, err := resilience.New(resilience.DefaultOptions(), resilience.WithName("openai"))
	if err != nil {
		t.Fatal(err)
	}
	r := p.Route("gpt-4o")
	for range resilience.MinLatencySamples {
		r.ObserveLatency(resilience.LatencySample{FirstContent: 300 * time.Millisecond, Stream: true})
	}
	r.ObserveLatency(resilience.LatencySample{FirstContent: 2 * time.Second, OutputTokens: 400})
	r.ObserveLatency(resilience.LatencySample{Failed: true})
	_ = p.Route("gpt-4o-mini")
	c := NewChecker()
	c.Add("openai", p)
	rep := c.Report()
	var got CheckResult
	for _, cr := range rep.Checks {
		if cr.Route == "gpt-4o" {
			got = cr
		}
	}
	if rep.Status != StatusPass || got.Latency.Samples != 11 || got.Latency.FirstToken != 300*time.Millisecond ||
		got.Latency.PerOutputToken != 5*time.Millisecond || got.Latency.ErrorRate != 0.25 {
		t.Fatalf("report %s %+v", rep.Status, got)
	}
	b, _ := rep.MarshalJSON()
	for _, want := range []string{`"firstToken":"300ms"`, `"perOutputToken":"5ms"`, `"latencyP50":"300ms"`, `"latencyP95":"2s"`,
		`"errorRate":"0.25"`, `"latencySamples":11`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("no %s in %s", want, b)
		}
	}
	if n := strings.Count(string(b), `"latencySamples"`); n != 1 {
		t.Errorf("%d checks show latency, want the measured route's alone: %s", n, b)
	}
}
