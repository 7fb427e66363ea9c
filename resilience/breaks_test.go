package resilience

import (
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// escalationOptions: no retries and no timers of the timeout layer, so that a manual clock
// moves nothing but the circuit's breaks.
func escalationOptions(threshold int) Options {
	o := testOptions()
	o.RetryCount, o.CircuitBreakerThreshold = 0, threshold
	o.TimeoutSeconds, o.StreamIdleTimeoutSeconds = 0, 0
	return o
}

// A primary down for a minute, called every 4 s: it serves again within 5 s of its recovery,
// with a handful of one-attempt probes during the outage. (With a constant 30 s break, or
// breaks that only double up to 30 s, it serves again 8 to 16 s after.)
func TestBreaks_AMinuteOutageCostsSecondsAfterItEnds(t *testing.T) {
	for _, threshold := range []int{1, 2} {
		clk := newManualClock()
		start := clk.Now()
		var down atomic.Bool
		var during atomic.Int32 // requests that reached the primary while it was down
		s := newScript(t, func(w http.ResponseWriter, _ *http.Request) {
			if down.Load() {
				during.Add(1)
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			w.WriteHeader(http.StatusOK)
		})
		c, _ := client(t, escalationOptions(threshold), WithClock(clk))
		down.Store(true)
		recovered := start.Add(time.Minute)
		var servedAt time.Time
		for i := 0; i < 40 && servedAt.IsZero(); i++ {
			now := clk.Now()
			down.Store(now.Before(recovered))
			code, err := doCall(t, c, s.url())
			if err != nil && !errors.Is(err, ErrCircuitOpen) {
				t.Fatal(err)
			}
			if err == nil && code == http.StatusOK {
				servedAt = now
			}
			clk.Advance(4 * time.Second)
		}
		late := servedAt.Sub(recovered)
		probes := int(during.Load()) - threshold // the calls that opened the circuit are no probes
		t.Logf("threshold %d: served again %v after the recovery, %d probes during the outage", threshold, late, probes)
		if servedAt.IsZero() || late > 5*time.Second {
			t.Fatalf("threshold %d: the primary served again %v after it recovered, want at most 5s", threshold, late)
		}
		if probes > 8 {
			t.Fatalf("threshold %d: %d probes during a one-minute outage", threshold, probes)
		}
	}
}

// Each failed probe lengthens the break — never more than twofold, never beyond a tenth of
// the outage so far (nor below the minimum), never beyond the longest — until the longest
// break is reached; CircuitInfo, the error and the shared advice tell the break in force.
func TestBreaks_GrowWithTheOutageUpToTheLongest(t *testing.T) {
	clk := newManualClock()
	o := DefaultOptions()
	o.CircuitBreakerThreshold = 1
	cb := newCircuit(o, clk)
	if cb.minFor != defaultMinBreak || cb.openFor != 30*time.Second {
		t.Fatalf("breaks %v..%v, want the defaults 5s..30s", cb.minFor, cb.openFor)
	}
	var opened change
	fail := func() {
		t.Helper()
		tk, rej, _ := cb.admit()
		if rej != nil {
			t.Fatalf("rejected %+v", *rej)
		}
		opened = cb.report(tk, verdictFailure)
	}
	began := clk.Now()
	fail()
	prev := time.Duration(0)
	var breaks []time.Duration
	for range 60 {
		info, _ := cb.info()
		b := info.NextProbeIn
		if info.State != CircuitOpen {
			t.Fatalf("state %v after a failure", info.State)
		}
		if adv := cb.opening(); adv.OpenUntil.Sub(clk.Now()) != b || opened.to != CircuitOpen || opened.brk != b {
			t.Fatalf("advice until %v, event's break %v, break %v", adv.OpenUntil, opened.brk, b)
		}
		age := clk.Now().Sub(began)
		switch {
		case prev == 0 && b != 5*time.Second:
			t.Fatalf("first break %v, want the minimum", b)
		case prev != 0 && (b < prev || b > 2*prev || b > 30*time.Second || (b > 5*time.Second && b > age/breakShare)):
			t.Fatalf("after %v of outage a break of %v follows one of %v", age, b, prev)
		}
		breaks = append(breaks, b)
		prev = b
		clk.Advance(b)
		fail() // the probe fails
	}
	if prev != 30*time.Second {
		t.Fatalf("breaks %v never reach the longest", breaks)
	}
	if breaks[9] != 5*time.Second {
		t.Fatalf("breaks %v: the first minute of an outage should be probed every few seconds", breaks)
	}
}

// Once the circuit closes, the next outage starts from the minimum again — but only after
// the circuit has stayed closed as long as its last break: a provider that fails again sooner
// (that flaps) goes on with the break it had reached.
func TestBreaks_StartOverAfterAPeriodOfHealthOnly(t *testing.T) {
	clk := newManualClock()
	o := DefaultOptions()
	o.CircuitBreakerThreshold = 1
	cb := newCircuit(o, clk)
	step := func(v verdict) {
		t.Helper()
		tk, rej, _ := cb.admit()
		if rej != nil {
			t.Fatalf("rejected %+v", *rej)
		}
		cb.report(tk, v)
	}
	nextProbe := func() time.Duration { info, _ := cb.info(); return info.NextProbeIn }
	step(verdictFailure) // an outage that lasts 5 minutes
	for clk.Now().Sub(cb.epoch) < 5*time.Minute {
		clk.Advance(nextProbe())
		step(verdictFailure)
	}
	last := nextProbe()
	if last != 30*time.Second {
		t.Fatalf("break %v after five minutes down", last)
	}
	clk.Advance(last)
	step(verdictSuccess) // closed
	clk.Advance(last / 2)
	step(verdictFailure) // fails again before a break's worth of health: goes on
	if b := nextProbe(); b != 30*time.Second {
		t.Fatalf("break %v for a provider that failed again %v after recovering, want 30s", b, last/2)
	}
	clk.Advance(30 * time.Second)
	step(verdictSuccess)
	clk.Advance(30 * time.Second)
	step(verdictFailure) // a break's worth of health: a new outage
	if b := nextProbe(); b != 5*time.Second {
		t.Fatalf("break %v for a new outage, want the minimum", b)
	}
	cb.reset()
	step(verdictFailure) // Reset forgets the escalation at once
	if b := nextProbe(); b != 5*time.Second {
		t.Fatalf("break %v after Reset, want the minimum", b)
	}
}

// The minimum equal to the longest keeps a constant break; 0 means 5 s, or the longest when
// that is shorter.
func TestBreaks_ConstantAndAutomaticMinimum(t *testing.T) {
	for _, tc := range []struct {
		min, max float64
		want     []time.Duration
	}{
		{30, 30, []time.Duration{30 * time.Second, 30 * time.Second, 30 * time.Second}},
		{0, 2, []time.Duration{2 * time.Second, 2 * time.Second, 2 * time.Second}},
		{0.5, 2, []time.Duration{500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond}},
	} {
		clk := newManualClock()
		o := DefaultOptions()
		o.CircuitBreakerThreshold = 1
		o.CircuitBreakerMinDurationSeconds, o.CircuitBreakerDurationSeconds = tc.min, tc.max
		if err := o.Validate(); err != nil {
			t.Fatal(err)
		}
		cb := newCircuit(o, clk)
		for i, want := range tc.want {
			tk, _, _ := cb.admit()
			cb.report(tk, verdictFailure)
			info, _ := cb.info()
			if info.NextProbeIn != want {
				t.Fatalf("min %g max %g: break %d is %v, want %v", tc.min, tc.max, i+1, info.NextProbeIn, want)
			}
			clk.Advance(want)
		}
	}
}

// An instance that adopts the fleet's long break and then probes, and fails, goes on with the
// fleet's break rather than restarting at the minimum, so the fleet's escalation does not
// depend on which instance probes.
func TestBreaks_AFailedProbeDoublesTheFleetsBreak(t *testing.T) {
	s := newScript(t, status(503, `down`))
	shared := &memShared{}
	clk := newManualClock()
	o := escalationOptions(1)
	a, pa := client(t, o, WithName("openai"), WithClock(clk), WithSharedState(shared))
	b, pb := client(t, o, WithName("openai"), WithClock(clk), WithSharedState(shared))
	doCall(t, a, s.url())
	for pa.CircuitInfo().NextProbeIn < 30*time.Second { // a's own outage, long enough for the longest break
		clk.Advance(pa.CircuitInfo().NextProbeIn)
		doCall(t, a, s.url())
	}
	if info := pb.CircuitInfo(); info.State != CircuitOpen || info.NextProbeIn != 30*time.Second {
		t.Fatalf("b adopted %+v, want a's 30s break", info)
	}
	clk.Advance(30 * time.Second)
	if _, err := doCall(t, b, s.url()); err != nil { // b's probe fails
		t.Fatal(err)
	}
	if info := pb.CircuitInfo(); info.State != CircuitOpen || info.NextProbeIn != 30*time.Second {
		t.Fatalf("b after its failed probe: %+v, want the fleet's 30s break", info)
	}
}
