package resilience

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// A pipeline states quantiles only once it has enough samples, over its last LatencyWindow,
// and moving averages that follow a change of level within a few calls.
func TestLatency_QuantilesAndAverages(t *testing.T) {
	p, err := New(testOptions())
	if err != nil {
		t.Fatal(err)
	}
	r := p.Route("m")
	if _, ok := r.LatencyQuantile(0.95); ok {
		t.Fatal("a quantile before any sample")
	}
	for i := range MinLatencySamples - 1 {
		r.ObserveLatency(LatencySample{FirstContent: time.Duration(i+1) * time.Millisecond, Stream: true})
	}
	if _, ok := r.LatencyQuantile(0.5); ok {
		t.Fatal("a quantile before MinLatencySamples")
	}
	// 100 samples: 95 at 100 ms, 5 stragglers at 10 s; the window holds the last 64.
	for i := range 100 {
		d := 100 * time.Millisecond
		if i%20 == 19 {
			d = 10 * time.Second
		}
		r.ObserveLatency(LatencySample{FirstContent: d, Stream: true})
	}
	if q, ok := r.LatencyQuantile(0.5); !ok || q != 100*time.Millisecond {
		t.Fatalf("p50 %v %v", q, ok)
	}
	if q, ok := r.LatencyQuantile(0.99); !ok || q != 10*time.Second {
		t.Fatalf("p99 %v %v", q, ok)
	}
	if p.Latency().Samples != 0 {
		t.Fatal("a route's samples reached its deployment")
	}
	// The first-token average follows a tripling within eight calls.
	for range 8 {
		r.ObserveLatency(LatencySample{FirstContent: 300 * time.Millisecond, Stream: true})
	}
	if ft := r.Latency().FirstToken; ft < 270*time.Millisecond || ft > 330*time.Millisecond+time.Second {
		t.Fatalf("first token average %v after eight calls at 300 ms", ft)
	}
	r.ObserveLatency(LatencySample{FirstContent: 2 * time.Second, OutputTokens: 100})
	if pt := r.Latency().PerOutputToken; pt != 20*time.Millisecond {
		t.Fatalf("per output token %v", pt)
	}
	for range 20 {
		r.ObserveLatency(LatencySample{Failed: true})
	}
	if e := r.Latency().ErrorRate; e < 0.99 {
		t.Fatalf("error rate %v after 20 failures", e)
	}
	for _, q := range []float64{0, 1, -1, 2} {
		if _, ok := r.LatencyQuantile(q); ok {
			t.Fatalf("quantile %v accepted", q)
		}
	}
}

// The error rate starts from none: one failure after a run of successes moves it a quarter of
// the way, not to 1. A first-token limit that ran out counts both as a time (the wait, so the
// tail shows it) and as a failure; a hedge that lost (censored alone) as a time only.
func TestLatency_FailuresAndCutOffs(t *testing.T) {
	p, _ := New(testOptions())
	for range 10 {
		p.ObserveLatency(LatencySample{FirstContent: 100 * time.Millisecond, Stream: true})
	}
	p.ObserveLatency(LatencySample{Failed: true})
	if e := p.LatencyAverages().ErrorRate; e != 0.25 {
		t.Fatalf("error rate %v after one failure among successes, want 0.25", e)
	}
	p.ObserveLatency(LatencySample{FirstContent: 10 * time.Second, Stream: true, Censored: true, Failed: true})
	l := p.LatencyAverages()
	if l.Samples != 11 || l.FirstToken <= 100*time.Millisecond || l.ErrorRate <= 0.25 {
		t.Fatalf("after a first-token limit: %+v", l)
	}
	p.ObserveLatency(LatencySample{FirstContent: 10 * time.Second, Stream: true, Censored: true})
	if l2 := p.LatencyAverages(); l2.Samples != 12 || l2.ErrorRate >= l.ErrorRate {
		t.Fatalf("after a lost hedge: %+v", l2)
	}
	if q, _ := p.LatencyQuantile(0.95); q != 10*time.Second {
		t.Fatalf("p95 %v: the cut-offs do not show in the tail", q)
	}
}

// The window keeps times to the microsecond, rounded up: a time under a microsecond is still a
// complete time (not a cut-off, which the sign marks), and one beyond the window's range is
// kept as its longest, never wrapped into a cut-off or a negative time.
func TestLatency_WindowKeepsMicroseconds(t *testing.T) {
	p, _ := New(testOptions())
	for range MinLatencySamples {
		p.ObserveLatency(LatencySample{FirstContent: time.Nanosecond, Stream: true})
	}
	if q, ok := p.HedgeQuantile(0.5); !ok || q != time.Microsecond {
		t.Fatalf("hedge p50 of times of 1 ns: %v %v, want 1µs", q, ok)
	}
	p.ObserveLatency(LatencySample{FirstContent: 1500 * time.Nanosecond, Stream: true})
	p.ObserveLatency(LatencySample{FirstContent: math.MaxInt64, Stream: true})
	p.ObserveLatency(LatencySample{FirstContent: 3 * time.Millisecond, Stream: true, Censored: true})
	got := p.RecentLatencies(nil)[MinLatencySamples:]
	want := []time.Duration{2 * time.Microsecond, maxRingTime * time.Microsecond, 3 * time.Millisecond}
	if !slices.Equal(got, want) {
		t.Fatalf("recent latencies %v, want %v", got, want)
	}
	if q, _ := p.LatencyQuantile(0.99); q != maxRingTime*time.Microsecond {
		t.Fatalf("p99 %v, want the longest the window keeps", q)
	}
}

// Recording a sample and asking for a cached quantile take no allocation.
func TestLatency_NoAllocations(t *testing.T) {
	p, _ := New(testOptions())
	for range 20 {
		p.ObserveLatency(LatencySample{FirstContent: time.Millisecond, Stream: true})
	}
	if n := testing.AllocsPerRun(100, func() {
		p.ObserveLatency(LatencySample{FirstContent: time.Millisecond, Stream: true})
		_, _ = p.LatencyQuantile(0.95)
	}); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

func BenchmarkLatency_ObserveAndQuantile(b *testing.B) {
	p, _ := New(testOptions())
	b.ReportAllocs()
	for i := range b.N {
		p.ObserveLatency(LatencySample{FirstContent: time.Duration(i%1000) * time.Microsecond, Stream: true})
		_, _ = p.LatencyQuantile(0.95)
	}
}

// Hedging's options are checked only when hedging is on, each naming its range.
func TestHedge_OptionsAreValidated(t *testing.T) {
	o := DefaultOptions()
	o.HedgeQuantile, o.MaxHedges = 7, 9 // unused while HedgeAfterSeconds is 0
	if err := o.Validate(); err != nil {
		t.Fatalf("hedging off: %v", err)
	}
	o.HedgeAfterSeconds = 1
	err := o.Validate()
	for _, want := range []string{"HedgeQuantile = 7: must be 0 (a fixed delay) or a quantile between 0.5 and 0.999",
		"MaxHedges = 9"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%v, want %q", err, want)
		}
	}
	o = DefaultOptions()
	o.HedgeAfterSeconds = 601
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "HedgeAfterSeconds = 601") {
		t.Fatalf("%v", err)
	}
	o.HedgeAfterSeconds, o.HedgeQuantile = 2, 0.95
	pol, err := NewPolicy("p", o)
	if err != nil {
		t.Fatal(err)
	}
	if h := pol.Hedge(); h.After != 2*time.Second || h.Quantile != 0.95 || h.MinDelay != 100*time.Millisecond || h.Max != 1 {
		t.Fatalf("%+v", h)
	}
}

// The hedge quantile ranks a cut-off above every complete time without trusting the time it
// had waited: with stragglers cut off by hedges, the delay stays at the complete calls' tail
// instead of ratcheting up with the times the hedges chose.
func TestLatency_HedgeQuantileIgnoresWhereCutsFell(t *testing.T) {
	p, _ := New(testOptions())
	for i := range LatencyWindow {
		if i%16 == 15 { // one in 16 cut off after 30 ms, later than every complete time
			p.ObserveLatency(LatencySample{FirstContent: 30 * time.Millisecond, Stream: true, Censored: true})
			continue
		}
		p.ObserveLatency(LatencySample{FirstContent: time.Duration(10+i%5) * time.Millisecond, Stream: true})
	}
	if q, _ := p.HedgeQuantile(0.95); q != 14*time.Millisecond {
		t.Fatalf("hedge p95 %v, want the longest complete time", q)
	}
	if q, _ := p.LatencyQuantile(0.95); q != 30*time.Millisecond {
		t.Fatalf("p95 %v, want the cut-offs at their waits", q)
	}
	if q, _ := p.HedgeQuantile(0.5); q != 12*time.Millisecond {
		t.Fatalf("hedge p50 %v", q)
	}
	for range LatencyWindow {
		p.ObserveLatency(LatencySample{FirstContent: time.Second, Censored: true})
	}
	if q, _ := p.HedgeQuantile(0.95); q != time.Second {
		t.Fatalf("hedge p95 %v with only cut-offs, want the shortest", q)
	}
}

// A reading of the budgets serves routers without a lock, yet never hides a change: a call's
// debit shows at once, and so does the refill once the reading is older than a millisecond.
func TestHeadroom_AReadingFollowsEveryChange(t *testing.T) {
	clock := newManualClock()
	o := testOptions()
	o.PaceRequestsPerMinute = 60 // a request a second
	p, err := New(o, WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	if h := p.HeadroomAt(clock.Now()); h.Requests != 1 || h.RequestsPerMinute != 60 {
		t.Fatalf("%+v", h)
	}
	if err := p.pace.admit(context.Background(), 0, func() time.Duration { return 0 }); err != nil {
		t.Fatal(err)
	}
	if h := p.HeadroomAt(clock.Now()); h.Requests*60 > 59.01 {
		t.Fatalf("after a debit: %+v, the reading hid it", h)
	}
	clock.Advance(30 * time.Second)
	if h := p.HeadroomAt(clock.Now()); h.Requests != 1 {
		t.Fatalf("after the refill: %+v", h)
	}
	if n := testing.AllocsPerRun(100, func() { _ = p.HeadroomAt(clock.Now()) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}
