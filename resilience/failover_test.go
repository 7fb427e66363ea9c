package resilience

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// retryingOptions retry three times at once (no backoff, so a manual clock need not move)
// and have no time limits of their own.
func retryingOptions(threshold int) Options {
	o := escalationOptions(threshold)
	o.RetryCount, o.RetryBaseDelaySeconds = 3, 0
	return o
}

// newCall is a Call over the background context.
func newCall() *Call {
	c := &Call{}
	c.Init(context.Background(), false)
	return c
}

// A half-open probe makes one attempt although its policy retries three times: its failure
// reopens the circuit at once, and says why the call was not retried.
func TestProbe_MakesOneAttemptWhateverItsPolicy(t *testing.T) {
	clk := newManualClock()
	s := newScript(t, status(503, `down`))
	var rec recorder
	c, p := client(t, retryingOptions(1), WithClock(clk), OnEvent(rec.observe))
	call := newCall()
	if _, err := doCtx(t, c, call, s.url()); err != nil || call.Info.Attempts != 4 || s.hits.Load() != 4 {
		t.Fatalf("a call of a closed circuit: %v, %+v, %d requests; want its 4 attempts", err, call.Info, s.hits.Load())
	}
	clk.Advance(p.CircuitInfo().NextProbeIn)
	probe := newCall()
	probe.Policy = p.Policy() // a policy of its own does not change it either
	if _, err := doCtx(t, c, probe, s.url()); err != nil {
		t.Fatal(err)
	}
	if n := s.hits.Load(); n != 5 || probe.Info.Attempts != 1 || probe.Info.GaveUp != GaveUpProbe {
		t.Fatalf("the probe: %+v, %d requests in all; want one attempt", probe.Info, n)
	}
	if st := p.CircuitState(); st != CircuitOpen {
		t.Fatalf("state %v after a failed probe", st)
	}
	gave := rec.kind(EventGaveUp)
	if last := gave[len(gave)-1]; last.GaveUp != GaveUpProbe || last.Reason != GaveUpProbe.Description() || last.Status != 503 {
		t.Fatalf("gave-up event %+v", last)
	}
}

// The same holds for the probe a fleet elects: an instance that adopted another's opening
// probes with one attempt when its election comes.
func TestProbe_TheFleetsElectedProbeMakesOneAttempt(t *testing.T) {
	var calls atomic.Int32
	s := newScript(t, func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusBadGateway)
	})
	shared := &memShared{}
	clk := newManualClock()
	o := retryingOptions(2)
	a, pa := client(t, o, WithName("openai"), WithClock(clk), WithSharedState(&memFleet{memShared: shared, id: "a"}))
	b, pb := client(t, o, WithName("openai"), WithClock(clk), WithSharedState(&memFleet{memShared: shared, id: "b"}))
	for range 2 {
		_, _ = doCtx(t, a, context.Background(), s.url())
	}
	if pa.CircuitState() != CircuitOpen || pb.CircuitState() != CircuitOpen || calls.Load() != 8 {
		t.Fatalf("a %v, b %v after %d requests", pa.CircuitState(), pb.CircuitState(), calls.Load())
	}
	clk.Advance(pb.CircuitInfo().NextProbeIn)
	if st := pb.CircuitState(); st != CircuitHalfOpen {
		t.Fatalf("b %v once the adopted break is over", st)
	}
	probe := newCall()
	if _, err := doCtx(t, b, probe, s.url()); err != nil {
		t.Fatal(err)
	}
	if probe.Info.Attempts != 1 || probe.Info.GaveUp != GaveUpProbe || calls.Load() != 9 {
		t.Fatalf("b's elected probe: %+v, %d requests in all", probe.Info, calls.Load())
	}
	if pb.CircuitState() != CircuitOpen || pa.CircuitState() != CircuitOpen {
		t.Fatalf("after the failed probe: a %v, b %v", pa.CircuitState(), pb.CircuitState())
	}
}

// silentOptions: one retry at once, and a 2 s attempt timeout on the manual clock.
func silentOptions() Options {
	o := escalationOptions(100)
	o.RetryCount, o.RetryBaseDelaySeconds = 1, 0
	o.AttemptTimeoutSeconds = 2
	return o
}

// An attempt that hangs until the attempt timeout is not retried on the same route when the
// caller can go elsewhere; it is when the caller cannot.
func TestSilent_AHangingRouteIsLeftAtOnceWhenAnotherCanServe(t *testing.T) {
	done := make(chan struct{})
	defer close(done)
	arrived := make(chan struct{}, 10)
	hang := stall(done)
	s := newScript(t, func(w http.ResponseWriter, r *http.Request) { arrived <- struct{}{}; hang(w, r) })
	clk := newManualClock()
	c, _ := client(t, silentOptions(), WithClock(clk))
	for _, tc := range []struct {
		elsewhere bool
		attempts  int
		gaveUp    GaveUp
	}{{true, 1, GaveUpSilent}, {false, 2, GaveUpExhausted}} {
		call := newCall()
		call.Elsewhere = tc.elsewhere
		errc := make(chan error, 1)
		go func() { _, err := doCtx(t, c, call, s.url()); errc <- err }()
		sent := 0
		var err error
	wait:
		for {
			select {
			case <-arrived: // each attempt hangs until its timeout
				sent++
				clk.Advance(2 * time.Second)
			case err = <-errc:
				break wait
			}
		}
		var te *TimeoutError
		if !errors.As(err, &te) || te.Limit != TimeoutAttempt || sent != tc.attempts || call.Info.Attempts != tc.attempts ||
			call.Info.GaveUp != tc.gaveUp {
			t.Fatalf("Elsewhere %v: %v, %+v, %d requests; want %d attempts, gave up %q", tc.elsewhere, err, call.Info, sent,
				tc.attempts, tc.gaveUp)
		}
	}
}

// A connection closed or reset before any response is silence too; a refused connection is
// not (it costs no wait), and neither is a 503 (the route answers).
func TestSilent_AClosedConnectionIsLeftARefusedOneRetried(t *testing.T) {
	closeConn := func(w http.ResponseWriter, _ *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		_ = conn.Close()
	}
	refused := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		url := "http://" + ln.Addr().String() + "/v1/chat/completions"
		_ = ln.Close()
		return url
	}()
	for _, tc := range []struct {
		name     string
		url      func() (string, func() int32)
		attempts int
		gaveUp   GaveUp
	}{
		{"closed", func() (string, func() int32) { s := newScript(t, closeConn); return s.url(), s.hits.Load }, 1, GaveUpSilent},
		{"reset", func() (string, func() int32) { s := newScript(t, reset()); return s.url(), s.hits.Load }, 1, GaveUpSilent},
		{"refused", func() (string, func() int32) { return refused, func() int32 { return -1 } }, 2, GaveUpExhausted},
		{"503", func() (string, func() int32) {
			s := newScript(t, status(503, `x`))
			return s.url(), s.hits.Load
		}, 2, GaveUpExhausted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, hits := tc.url()
			var rec recorder
			c, _ := client(t, silentOptions(), WithClock(newManualClock()), OnEvent(rec.observe))
			call := newCall()
			call.Elsewhere = true
			_, _ = doCtx(t, c, call, url)
			if call.Info.Attempts != tc.attempts || call.Info.GaveUp != tc.gaveUp {
				t.Fatalf("%+v; want %d attempts, gave up %q", call.Info, tc.attempts, tc.gaveUp)
			}
			if n := hits(); n >= 0 && int(n) != tc.attempts {
				t.Fatalf("%d requests reached the server for %d attempts", n, tc.attempts)
			}
			if started := len(rec.kind(EventAttemptStarted)); started != tc.attempts {
				t.Fatalf("%d attempts started", started)
			}
		})
	}
}
