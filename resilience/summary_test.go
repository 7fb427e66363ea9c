package resilience

import (
	"net/http"
	"testing"
	"time"
)

// What a deployment serves is the summary of its routes with its own circuit: a provider whose
// only model is open reads open, not its host's closed circuit; one model of two open reads
// degraded, 1 of 2 serving; a model pausing after a rate limit reads degraded with the pause
// (no outage, even when nothing else serves); a half-open model reads probing, never serving; a
// model nobody calls any more is not counted.
func TestSummary_ADeploymentReadsWhatItsRoutesServe(t *testing.T) {
	s := newModelServer(t)
	clk := newManualClock()
	o := escalationOptions(1)
	o.TimeoutSeconds = 30 // a route's use is noted with its deadline
	c, p := client(t, o, WithName("openai"), WithClock(clk))

	s.set("a", http.StatusServiceUnavailable, "")
	_, _ = callModel(t, c, s.url(), "a", 0)
	info := p.CircuitInfo()
	if info.State != CircuitOpen || info.Host != CircuitClosed || info.Routes != 1 || info.Serving != 0 ||
		info.NextProbeIn <= 0 || p.CircuitState() != CircuitOpen {
		t.Fatalf("the only model open: %+v, want open with the next probe", info)
	}

	_, _ = callModel(t, c, s.url(), "b", 0)
	if info = p.CircuitInfo(); info.State != CircuitClosed || !info.Degraded || info.Routes != 2 || info.Serving != 1 {
		t.Fatalf("one model of two open: %+v, want closed, degraded, 1 of 2 serving", info)
	}

	s.set("b", http.StatusTooManyRequests, "20")
	_, _ = callModel(t, c, s.url(), "b", 0)
	if info = p.CircuitInfo(); info.State != CircuitClosed || !info.Degraded || info.Serving != 0 || info.CoolingFor < 19*time.Second {
		t.Fatalf("a open and b pausing: %+v, want degraded, none serving, with b's pause (a rate limit is no outage)", info)
	}

	clk.Advance(p.Route("a").CircuitInfo().NextProbeIn) // a's break ends: half-open, probing
	if info = p.CircuitInfo(); info.State != CircuitHalfOpen || info.Probing != 1 || info.Serving != 0 {
		t.Fatalf("a probing and b pausing: %+v, want half-open (probing), none serving", info)
	}

	// A model nobody calls for routeIdle leaves the summary; the one in use decides it.
	clk.Advance(routeIdle + time.Minute)
	s.set("c", http.StatusOK, "")
	_, _ = callModel(t, c, s.url(), "c", 0)
	if info = p.CircuitInfo(); info.State != CircuitClosed || info.Degraded || info.Routes != 1 || info.Serving != 1 {
		t.Fatalf("a and b idle for %s, c serving: %+v", routeIdle, info)
	}
}

// A route whose calls fail for a reason of its configuration reads as failing — not serving —
// without its circuit opening; the deployment's summary says why when nothing else serves, and
// a call that succeeds clears it.
func TestSummary_AFailingRouteIsVisibleWithoutACircuit(t *testing.T) {
	s := newModelServer(t)
	o := escalationOptions(1)
	o.TimeoutSeconds = 30
	c, p := client(t, o, WithName("anthropic"))
	s.set("gpt-4o-mini", http.StatusNotFound, "")
	for range 3 {
		_, _ = callModel(t, c, s.url(), "gpt-4o-mini", 0)
		p.Route("gpt-4o-mini").NoteFailing("not_found: model: gpt-4o-mini")
	}
	r := p.Route("gpt-4o-mini").CircuitInfo()
	if r.State != CircuitClosed || r.Failing != "not_found: model: gpt-4o-mini" || r.FailingCalls != 3 {
		t.Fatalf("the route: %+v, want closed and failing, 3 calls", r)
	}
	info := p.CircuitInfo()
	if info.Serving != 0 || !info.Degraded || info.Failing != r.Failing || info.State == CircuitOpen {
		t.Fatalf("the deployment: %+v, want nothing serving, failing with the route's reason, no circuit open", info)
	}
	s.set("gpt-4o-mini", http.StatusOK, "")
	_, _ = callModel(t, c, s.url(), "gpt-4o-mini", 0)
	if r := p.Route("gpt-4o-mini").CircuitInfo(); r.Failing != "" {
		t.Fatalf("after a success: %+v, want no longer failing", r)
	}
	if info := p.CircuitInfo(); info.Serving != 1 || info.Degraded {
		t.Fatalf("after a success: %+v", info)
	}
}
