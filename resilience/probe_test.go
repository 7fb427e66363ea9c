package resilience

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// provider is a loopback provider that is down or up, with a cheap health endpoint for the
// active probe; it counts the requests each path received.
type provider struct {
	s             *script
	down          atomic.Bool
	hold          chan struct{} // when set, each health check waits for it (or the client)
	health, calls atomic.Int32
}

func newProvider(t *testing.T) *provider {
	pr := &provider{}
	pr.s = newScript(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			pr.health.Add(1)
			if pr.hold != nil {
				select {
				case <-pr.hold:
				case <-r.Context().Done():
					return
				}
			}
		} else {
			pr.calls.Add(1)
		}
		if pr.down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	return pr
}

// check is the application's active probe: GET /health through the pipeline's transport.
func (pr *provider) check(ctx context.Context, rt http.RoundTripper, _ string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, pr.s.srv.URL+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 500 {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// probed waits until n active probes have finished, and returns the last one's event.
func probed(t *testing.T, rec *recorder, n int) Event {
	t.Helper()
	eventually(t, fmt.Sprintf("%d probes", n), func() bool { return len(rec.kind(EventProbeFinished)) >= n })
	done := rec.kind(EventProbeFinished)
	if len(done) != n {
		t.Fatalf("%d probes finished, want %d", len(done), n)
	}
	return done[n-1]
}

// activeClient is a client over a pipeline with pr's active probe, closed at the test's end.
func activeClient(t *testing.T, pr *provider, o Options, opts ...Option) (*http.Client, *Pipeline) {
	c, p := client(t, o, append(opts, WithActiveProbe(pr.check, 10*time.Second))...)
	t.Cleanup(func() { _ = p.Close() })
	return c, p
}

// The probe tests the provider when each break ends, without a caller's call: a failure
// reopens the circuit for the next break, a success closes it. No timer runs while closed.
func TestActiveProbe_ClosesTheCircuitWhenTheBreakEndsWithoutACall(t *testing.T) {
	pr := newProvider(t)
	clk := newManualClock()
	var rec recorder
	c, p := activeClient(t, pr, escalationOptions(1), WithClock(clk), OnEvent(rec.observe))
	if p.breaker.active.timer != nil {
		t.Fatal("a timer armed while the circuit is closed")
	}
	pr.down.Store(true)
	doCall(t, c, pr.s.url()) // opens the circuit
	brk := p.CircuitInfo().NextProbeIn
	clk.Advance(brk)
	if e := probed(t, &rec, 1); e.Err == nil {
		t.Fatal("the probe of a provider still down succeeded")
	}
	if info := p.CircuitInfo(); info.State != CircuitOpen || info.NextProbeIn <= 0 {
		t.Fatalf("after a failed probe: %+v", info)
	}
	pr.down.Store(false)
	clk.Advance(p.CircuitInfo().NextProbeIn)
	if e := probed(t, &rec, 2); e.Err != nil {
		t.Fatalf("the probe of a provider back up: %v", e.Err)
	}
	if st := p.CircuitState(); st != CircuitClosed {
		t.Fatalf("state %v after a successful probe", st)
	}
	if pr.calls.Load() != 1 || pr.health.Load() != 2 {
		t.Fatalf("%d calls and %d probes reached the provider, want 1 and 2", pr.calls.Load(), pr.health.Load())
	}
	var path []CircuitState
	for _, e := range rec.kind(EventBreakerStateChanged) {
		path = append(path, e.To)
		if (e.To == CircuitOpen) != (e.Delay > 0) {
			t.Fatalf("state change %v → %v with Delay %v: an opening tells its break, only an opening", e.From, e.To, e.Delay)
		}
	}
	if first := rec.kind(EventBreakerStateChanged)[0]; first.Delay != brk {
		t.Fatalf("opening event's break %v, CircuitInfo's %v", first.Delay, brk)
	}
	want := []CircuitState{CircuitOpen, CircuitHalfOpen, CircuitOpen, CircuitHalfOpen, CircuitClosed}
	if fmt.Sprint(path) != fmt.Sprint(want) {
		t.Fatalf("states %v, want %v", path, want)
	}
}

// While the probe is out, calls are rejected as during any half-open probe, without reaching
// the provider.
func TestActiveProbe_CallsAreRejectedWhileItRuns(t *testing.T) {
	pr := newProvider(t)
	pr.hold = make(chan struct{})
	clk := newManualClock()
	var rec recorder
	c, p := activeClient(t, pr, escalationOptions(1), WithClock(clk), OnEvent(rec.observe))
	pr.down.Store(true)
	doCall(t, c, pr.s.url())
	pr.down.Store(false)
	clk.Advance(p.CircuitInfo().NextProbeIn)
	eventually(t, "the probe to reach the provider", func() bool { return pr.health.Load() == 1 })
	_, err := doCall(t, c, pr.s.url())
	var coe *CircuitOpenError
	if !errors.As(err, &coe) || coe.State != CircuitHalfOpen || pr.calls.Load() != 1 {
		t.Fatalf("a call while the probe is out: %v, %d calls reached the provider", err, pr.calls.Load())
	}
	close(pr.hold)
	probed(t, &rec, 1)
	if code, err := doCall(t, c, pr.s.url()); err != nil || code != 200 {
		t.Fatalf("after the probe: %d %v", code, err)
	}
}

// A probe that outlasts its timeout, on the pipeline's clock, has failed.
func TestActiveProbe_TimesOutOnThePipelinesClock(t *testing.T) {
	pr := newProvider(t)
	pr.hold = make(chan struct{})
	defer close(pr.hold)
	clk := newManualClock()
	var rec recorder
	c, p := activeClient(t, pr, escalationOptions(1), WithClock(clk), OnEvent(rec.observe))
	pr.down.Store(true)
	doCall(t, c, pr.s.url())
	clk.Advance(p.CircuitInfo().NextProbeIn)
	eventually(t, "the probe to reach the provider", func() bool { return pr.health.Load() == 1 })
	clk.Advance(10 * time.Second)
	e := probed(t, &rec, 1)
	var te *TimeoutError
	if !errors.As(e.Err, &te) || te.Limit != TimeoutProbe || te.After != 10*time.Second {
		t.Fatalf("probe error %v, want the probe's timeout", e.Err)
	}
	if st := p.CircuitState(); st != CircuitOpen {
		t.Fatalf("state %v after a probe that timed out", st)
	}
}

// Close stops the timer of an open circuit and cancels a probe in flight, waiting for it;
// calls then probe as without an active probe. Closing twice is fine.
func TestActiveProbe_CloseStopsTheTimerAndTheProbeInFlight(t *testing.T) {
	t.Run("timer", func(t *testing.T) {
		pr := newProvider(t)
		clk := newManualClock()
		c, p := activeClient(t, pr, escalationOptions(1), WithClock(clk))
		pr.down.Store(true)
		doCall(t, c, pr.s.url())
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Minute)
		pr.down.Store(false)
		if code, err := doCall(t, c, pr.s.url()); err != nil || code != 200 || pr.health.Load() != 0 {
			t.Fatalf("a call after Close: %d %v, %d probes", code, err, pr.health.Load())
		}
		_ = p.Close()
	})
	t.Run("in flight", func(t *testing.T) {
		pr := newProvider(t)
		pr.hold = make(chan struct{}) // never released: only Close ends the probe
		clk := newManualClock()
		var rec recorder
		c, p := activeClient(t, pr, escalationOptions(1), WithClock(clk), OnEvent(rec.observe))
		pr.down.Store(true)
		doCall(t, c, pr.s.url())
		clk.Advance(p.CircuitInfo().NextProbeIn)
		eventually(t, "the probe to reach the provider", func() bool { return pr.health.Load() == 1 })
		_ = p.Close() // returns once the probe has
		if n := len(rec.kind(EventProbeFinished)); n != 0 || p.CircuitState() != CircuitHalfOpen {
			t.Fatalf("after Close: %d probes reported, state %v", n, p.CircuitState())
		}
		pr.down.Store(false)
		if code, err := doCall(t, c, pr.s.url()); err != nil || code != 200 || p.CircuitState() != CircuitClosed {
			t.Fatalf("a caller's probe after Close: %d %v, %v", code, err, p.CircuitState())
		}
	})
}

// With a fleet, one instance's active probe tests the provider; its success closes the
// circuit of every instance.
func TestActiveProbe_OneForTheFleetAndItsClosingIsShared(t *testing.T) {
	pr := newProvider(t)
	shared := &memShared{}
	clk := newManualClock()
	o := escalationOptions(1)
	var ra, rb recorder
	a, pa := activeClient(t, pr, o, WithName("openai"), WithClock(clk), OnEvent(ra.observe),
		WithSharedState(&memFleet{memShared: shared, id: "a"}))
	_, pb := activeClient(t, pr, o, WithName("openai"), WithClock(clk), OnEvent(rb.observe),
		WithSharedState(&memFleet{memShared: shared, id: "b"}))
	pr.down.Store(true)
	doCall(t, a, pr.s.url())
	if pa.CircuitState() != CircuitOpen || pb.CircuitState() != CircuitOpen {
		t.Fatalf("a %v, b %v", pa.CircuitState(), pb.CircuitState())
	}
	pr.down.Store(false)
	clk.Advance(pa.CircuitInfo().NextProbeIn)
	eventually(t, "a probe", func() bool { return len(ra.kind(EventProbeFinished))+len(rb.kind(EventProbeFinished)) == 1 })
	eventually(t, "both closed", func() bool {
		return pa.CircuitState() == CircuitClosed && pb.CircuitState() == CircuitClosed
	})
	clk.Advance(storeRetry) // the loser's next look finds the closing, and does not probe
	if n := pr.health.Load(); n != 1 {
		t.Fatalf("%d probes for the fleet, want 1", n)
	}
}

// laggingFleet is a memFleet whose instance hears of other instances' advice late: while lag
// is set, Advice returns what it knew when lag was set (as a store that refreshes its copy
// every so often does).
type laggingFleet struct {
	*memFleet
	lag  atomic.Bool
	mu   sync.Mutex
	seen map[string]Advice
}

func (f *laggingFleet) Advice(name string) Advice {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lag.Load() {
		return f.seen[name]
	}
	a := f.memFleet.Advice(name)
	if f.seen == nil {
		f.seen = map[string]Advice{}
	}
	f.seen[name] = a
	return a
}

// An instance whose break ends just after another's probe closed the circuit, before its store
// brought it the closing, does not probe a provider the fleet already knows well: the instance
// that probed keeps the election a moment (keepClosing), the other is refused it, looks again
// a moment later and finds the closing. (Given back at once, the election went to the other,
// which probed again.)
func TestActiveProbe_AClosingKeepsTheElectionUntilTheFleetHeardOfIt(t *testing.T) {
	pr := newProvider(t)
	shared := &memShared{}
	clk := newManualClock()
	o := escalationOptions(1)
	var ra, rb recorder
	lagging := &laggingFleet{memFleet: &memFleet{memShared: shared, id: "b"}}
	a, pa := activeClient(t, pr, o, WithName("openai"), WithClock(clk), OnEvent(ra.observe),
		WithSharedState(&memFleet{memShared: shared, id: "a"}))
	_, pb := activeClient(t, pr, o, WithName("openai"), WithClock(clk), OnEvent(rb.observe), WithSharedState(lagging))
	pr.down.Store(true)
	doCall(t, a, pr.s.url())
	if pa.CircuitState() != CircuitOpen || pb.CircuitState() != CircuitOpen {
		t.Fatalf("a %v, b %v", pa.CircuitState(), pb.CircuitState())
	}
	// a's probe alone: b's timer is stopped until a has probed.
	pb.breaker.active.mu.Lock()
	pb.breaker.active.timer.Stop()
	pb.breaker.active.mu.Unlock()
	pr.down.Store(false)
	lagging.lag.Store(true) // from now on b does not hear of a's closing
	clk.Advance(pa.CircuitInfo().NextProbeIn)
	eventually(t, "a's probe", func() bool { return len(ra.kind(EventProbeFinished)) == 1 })
	eventually(t, "a closed", func() bool { return pa.CircuitState() == CircuitClosed })
	// b's break ends now: it has not heard of the closing, and asks the fleet for the probe.
	pb.breaker.active.arm(0)
	clk.Advance(0)
	eventually(t, "b to be refused the probe", func() bool { return pb.breaker.elsewhere.Load() != 0 })
	lagging.lag.Store(false) // b's store brings it the closing
	clk.Advance(storeRetry)
	eventually(t, "b closed by the fleet's closing", func() bool { return pb.CircuitState() == CircuitClosed })
	if n := pr.health.Load(); n != 1 || len(rb.kind(EventProbeFinished)) != 0 {
		t.Fatalf("%d probes for the fleet (b's %d), want a's alone", n, len(rb.kind(EventProbeFinished)))
	}
}

// A break made longer after the timer was armed (OpenFor) is found when the timer fires: the
// probe waits for the end of the longer break.
func TestActiveProbe_WaitsForABreakMadeLonger(t *testing.T) {
	pr := newProvider(t)
	clk := newManualClock()
	var rec recorder
	c, p := activeClient(t, pr, escalationOptions(1), WithClock(clk), OnEvent(rec.observe))
	pr.down.Store(true)
	doCall(t, c, pr.s.url())
	first := p.CircuitInfo().NextProbeIn
	p.OpenFor(time.Minute)
	pr.down.Store(false)
	clk.Advance(first)
	eventually(t, "the timer to re-arm", func() bool {
		a := p.breaker.active
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.timer.(*manualTimer).isActive()
	})
	if pr.health.Load() != 0 || p.CircuitState() != CircuitOpen {
		t.Fatalf("probed %d times during the longer break, state %v", pr.health.Load(), p.CircuitState())
	}
	clk.Advance(time.Minute - first)
	probed(t, &rec, 1)
	if st := p.CircuitState(); st != CircuitClosed || pr.health.Load() != 1 {
		t.Fatalf("state %v after %d probes", st, pr.health.Load())
	}
}

// A route's circuit is probed by the deployment's active probe, told the route under test:
// model a's probe asks for model a, closes a's circuit when a serves again, and never touches
// model b. Close stops the routes' probes too.
func TestActiveProbe_ProbesEachRoutesCircuitWithItsRoute(t *testing.T) {
	s := newModelServer(t)
	s.set("a", http.StatusServiceUnavailable, "")
	var routes []string
	var mu sync.Mutex
	probe := func(ctx context.Context, rt http.RoundTripper, route string) error {
		mu.Lock()
		routes = append(routes, route)
		mu.Unlock()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.srv.URL+"/models", nil)
		req.Header.Set("X-Model", route)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	clk := newManualClock()
	var rec recorder
	c, p := client(t, escalationOptions(1), WithName("openai"), WithClock(clk), OnEvent(rec.observe),
		WithActiveProbe(probe, 5*time.Second))
	t.Cleanup(func() { _ = p.Close() })
	_, _ = callModel(t, c, s.url(), "a", 0)
	a := p.Route("a")
	// The deployment's own circuit stays closed; what it serves — its one route in use — is open.
	if a.CircuitState() != CircuitOpen || p.OwnCircuit().State != CircuitClosed || p.CircuitState() != CircuitOpen {
		t.Fatalf("route a %v, deployment %v (its own circuit %v)", a.CircuitState(), p.CircuitState(), p.OwnCircuit().State)
	}
	clk.Advance(a.CircuitInfo().NextProbeIn)
	if e := probed(t, &rec, 1); e.Err == nil || e.Route != "a" {
		t.Fatalf("probe of a model still down: route %q, err %v", e.Route, e.Err)
	}
	s.set("a", http.StatusOK, "")
	clk.Advance(a.CircuitInfo().NextProbeIn)
	if e := probed(t, &rec, 2); e.Err != nil {
		t.Fatalf("probe of a model back up: %v", e.Err)
	}
	if a.CircuitState() != CircuitClosed {
		t.Fatalf("route a is %v after a successful probe", a.CircuitState())
	}
	mu.Lock()
	got := fmt.Sprint(routes)
	mu.Unlock()
	if got != "[a a]" || s.count("b") != 0 || s.count("a") != 3 {
		t.Fatalf("probed routes %s; a saw %d requests, b %d", got, s.count("a"), s.count("b"))
	}

	// Close reaches the routes: a's next opening arms no probe that runs.
	s.set("a", http.StatusServiceUnavailable, "")
	_, _ = callModel(t, c, s.url(), "a", 0)
	_ = p.Close()
	clk.Advance(time.Hour)
	if n := len(rec.kind(EventProbeFinished)); n != 2 || s.count("a") != 4 {
		t.Fatalf("after Close: %d probes, %d requests to a", n, s.count("a"))
	}
}
