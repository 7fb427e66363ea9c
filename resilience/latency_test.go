package resilience

import (
	"context"
	"math"
	"math/rand/v2"
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
	// 100 samples: 95 at 100 ms, 5 stragglers at 10 s.
	for i := range 100 {
		d := 100 * time.Millisecond
		if i%20 == 19 {
			d = 10 * time.Second
		}
		r.ObserveLatency(LatencySample{FirstContent: d, Stream: true})
	}
	if q, ok := r.LatencyQuantile(0.5); !ok || q != kept(100*time.Millisecond) {
		t.Fatalf("p50 %v %v", q, ok)
	}
	if q, ok := r.LatencyQuantile(0.99); !ok || q != kept(10*time.Second) {
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
	if q, _ := p.LatencyQuantile(0.95); q != kept(10*time.Second) {
		t.Fatalf("p95 %v: the cut-offs do not show in the tail", q)
	}
}

// kept is the time the window keeps for d.
func kept(d time.Duration) time.Duration { return ringDuration(ringTime(d)) }

// The window keeps times to within a thousandth — to the microsecond, rounded up, below
// 2,048 µs — in the order of the times, a round time as it is: a time under a microsecond is
// still a complete time
// (not a cut-off, which the sign marks), and one beyond the window's range is kept as its
// longest, never wrapped into a cut-off or a negative time.
func TestLatency_WindowKeepsAThousandth(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	prev := time.Duration(0)
	for i := range 200000 {
		// Every 25 ns up to 2.5 ms, then times spread over every scale up to an hour.
		d := time.Duration(i) * time.Microsecond / 40
		if i >= 200000/2 {
			d = time.Duration(math.Exp(rng.Float64() * math.Log(float64(time.Hour))))
		}
		if d <= 0 {
			continue
		}
		us := (d + time.Microsecond - 1) / time.Microsecond * time.Microsecond
		got := kept(d)
		switch {
		case d > maxRingTime*time.Microsecond:
			if got != kept(maxRingTime*time.Microsecond) || got < 35*time.Minute {
				t.Fatalf("%v kept as %v, want the longest", d, got)
			}
		case us < 2048*time.Microsecond && got != us:
			t.Fatalf("%v kept as %v, want %v", d, got, us)
		case float64(max(got-us, us-got)) > float64(us)/1000:
			t.Fatalf("%v kept as %v: more than a thousandth off", d, got)
		}
		if c := ringTime(d); c <= 0 {
			t.Fatalf("%v coded %d", d, c)
		}
		if i < 200000/2 && got < prev {
			t.Fatalf("%v kept as %v, below the shorter time's %v", d, got, prev)
		}
		prev = got
	}
	for _, d := range []time.Duration{10 * time.Millisecond, 300 * time.Millisecond, 1500 * time.Millisecond,
		2 * time.Second, 45 * time.Second, 2 * time.Minute, 30 * time.Minute, 2047 * time.Microsecond, 2048 * time.Microsecond,
		123456 * time.Microsecond} {
		if got := kept(d); got != d && d != 123456*time.Microsecond {
			t.Errorf("%v kept as %v", d, got)
		}
	}
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
	want := []time.Duration{2 * time.Microsecond, kept(maxRingTime * time.Microsecond), 3 * time.Millisecond}
	if !slices.Equal(got, want) {
		t.Fatalf("recent latencies %v, want %v", got, want)
	}
	if q, _ := p.LatencyQuantile(0.99); q != kept(maxRingTime*time.Microsecond) {
		t.Fatalf("p99 %v, want the longest the window keeps", q)
	}
}

// Recording a sample (a raced one too) and asking for a quantile take no allocation.
func TestLatency_NoAllocations(t *testing.T) {
	p, _ := New(testOptions())
	for range 20 {
		p.ObserveLatency(LatencySample{FirstContent: time.Millisecond, Stream: true})
	}
	if n := testing.AllocsPerRun(100, func() {
		p.ObserveLatency(LatencySample{FirstContent: time.Millisecond, Stream: true})
		p.ObserveLatency(LatencySample{FirstContent: 5 * time.Millisecond, Stream: true, Raced: time.Millisecond})
		_, _ = p.LatencyQuantile(0.95)
		_, _ = p.HedgeQuantile(0.95)
	}); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

// BenchmarkLatency_ObserveAndQuantile records a time (10–20 ms) and asks for a quantile, as a
// hedged call does (the hedge quantile, with one try in 20 raced and one in 20 cut off) and as a
// view does (the plain one).
func BenchmarkLatency_ObserveAndQuantile(b *testing.B) {
	for _, hedge := range []bool{false, true} {
		name := "plain"
		if hedge {
			name = "hedge"
		}
		b.Run(name, func(b *testing.B) {
			p, _ := New(testOptions())
			b.ReportAllocs()
			for i := range b.N {
				s := LatencySample{FirstContent: 10*time.Millisecond + time.Duration(i%1000)*10*time.Microsecond, Stream: true}
				if hedge {
					switch i % 20 {
					case 7:
						s.Raced = s.FirstContent / 2
					case 13:
						s.Censored = true
					}
					p.ObserveLatency(s)
					_, _ = p.HedgeQuantile(0.95)
					continue
				}
				p.ObserveLatency(s)
				_, _ = p.LatencyQuantile(0.95)
			}
		})
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
	if q, _ := p.HedgeQuantile(0.95); q != kept(time.Second) {
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

// hedgeSim races one route's tries, as the client does, against hedges whose times come from
// the same distribution, with a learnt delay (HedgeQuantile 0.95 between 2 ms and 100 ms):
// first-token times of 9–11 ms, and with probability 5 % a straggler's 200 ms, drawn from a
// seeded source; after calls, slow (if not 0) becomes every try's first-token time for as
// many calls again. raced says whether a try still waiting when its hedge went out is
// reported as raced (LatencySample.Raced), as the client does, or at its full time, as it did
// before. It returns the share of the first calls (after their first fifth, which may find
// the delay where the first samples put it) whose delay sat at its ceiling, the share
// hedged, their p95 and p99 first-token times, and the delay at the end.
func hedgeSim(seed uint64, calls int, raced bool, slow time.Duration) (atCeiling, hedged float64, p95, p99, last time.Duration) {
	return hedgeSimAfter(seed, 0, calls, raced, slow)
}

// hedgeSimAfter is hedgeSim after a prelude of calls whose every try waits 150 ms (a route
// overloaded for a while), which lifts the delay to its ceiling; the figures are of the calls
// after it.
func hedgeSimAfter(seed uint64, prelude, calls int, raced bool, slow time.Duration) (atCeiling, hedged float64, p95, p99, last time.Duration) {
	h := Hedge{After: 100 * time.Millisecond, Quantile: 0.95, MinDelay: 2 * time.Millisecond, Max: 1}
	return hedgeSimWith(h, seed, prelude, calls, raced, slow)
}

// hedgeSimWith is hedgeSimAfter under hedging h; atCeiling is then the share of calls whose
// delay was above h.MinDelay + 10 ms when h.MinDelay is above 10 ms.
func hedgeSimWith(h Hedge, seed uint64, prelude, calls int, raced bool, slow time.Duration) (atCeiling, hedged float64, p95, p99, last time.Duration) {
	p, _ := New(testOptions())
	rng := rand.New(rand.NewPCG(seed, 36))
	draw := func(i int) time.Duration {
		switch {
		case i < 0:
			return 150 * time.Millisecond
		case i >= calls:
			return slow
		case rng.Float64() < 0.05:
			return 200 * time.Millisecond
		}
		return 9*time.Millisecond + time.Duration(rng.Int64N(int64(2*time.Millisecond)))
	}
	ttft := make([]time.Duration, 0, calls)
	var ceiling, hedges int
	total := calls
	if slow > 0 {
		total *= 2
	}
	for i := -prelude; i < total; i++ {
		d := h.Delay(p)
		high := d == h.After || h.MinDelay > 10*time.Millisecond && d > h.MinDelay+10*time.Millisecond
		if high && i >= calls/5 && i < calls {
			ceiling++
		}
		first, took := draw(i), time.Duration(0)
		s := LatencySample{FirstContent: first, Stream: true}
		if first > d {
			if i >= 0 && i < calls {
				hedges++
			}
			if raced {
				s.Raced = d
			}
			if second := draw(i); d+second < first { // the hedge won: the first try is cancelled then
				s.FirstContent, s.Censored = d+second, true
			}
		}
		took = s.FirstContent
		p.ObserveLatency(s)
		if i >= 0 && i < calls {
			ttft = append(ttft, took)
		}
	}
	slices.Sort(ttft)
	n := len(ttft)
	return float64(ceiling) / float64(calls-calls/5), float64(hedges) / float64(calls),
		ttft[int(math.Ceil(0.95*float64(n)))-1], ttft[int(math.Ceil(0.99*float64(n)))-1], h.Delay(p)
}

// With random stragglers — 5 % at 20 times the usual first-token time, the share the
// quantile 0.95 sits on — a straggler whose hedge straggles too still finishes; reported as
// raced, it is cut off at twice the hedge's send, so the learnt delay never climbs to its
// ceiling, the hedges stay near 5 % (a window that happens to hold fewer stragglers puts the
// delay a little into the usual times) and p99 stays within twice p95. Reported at its full
// time (as before), the same seeds put the delay at its ceiling for a good share of the calls.
func TestLatency_HedgeQuantileWithRandomStragglers(t *testing.T) {
	for seed := range uint64(5) {
		atCeiling, hedged, p95, p99, _ := hedgeSim(seed, 5000, true, 0)
		if atCeiling != 0 || hedged > 0.07 || p99 > 2*p95 {
			t.Errorf("seed %d: delay at its ceiling for %.1f%% of calls, %.1f%% hedged, p95 %v p99 %v",
				seed, 100*atCeiling, 100*hedged, p95, p99)
		}
	}
	worst := 0.0
	for seed := range uint64(5) {
		atCeiling, _, _, _, _ := hedgeSim(seed, 5000, false, 0)
		worst = max(worst, atCeiling)
	}
	if worst < 0.05 {
		t.Errorf("at full times, the delay sat at its ceiling for at most %.1f%% of calls: the test no longer shows the flaw", 100*worst)
	}
}

// After a spell of overload that lifted the delay to its ceiling (100 ms, where twice the
// delay would reach a straggler's 200 ms), the delay comes down and stays off the ceiling: a
// raced straggler is cut off a median time after the hedge's send, not at twice the delay.
func TestLatency_HedgeQuantileLeavesTheCeiling(t *testing.T) {
	for seed := range uint64(3) {
		if atCeiling, hedged, _, _, _ := hedgeSimAfter(seed, 300, 5000, true, 0); atCeiling > 0.01 || hedged > 0.07 {
			t.Errorf("seed %d: after an overload, the delay sat at its ceiling for %.1f%% of calls, %.1f%% hedged",
				seed, 100*atCeiling, 100*hedged)
		}
	}
}

// A share of tries beyond a gap — more than twice the times before it — that exceeds 1−q by
// less than 1.5 standard errors of such a share in the window is a tie: the window cannot
// tell whether more than 1−q of the tries are that slow, and the hedge quantile is the time
// before the gap, from which they are hedged. A clearly larger share, or a tail without a
// gap, gives the quantile as it is.
func TestLatency_HedgeQuantileTieAcrossAGap(t *testing.T) {
	for _, c := range []struct {
		slow         time.Duration
		n            int // of LatencyWindow tries, the slow ones
		hedge, plain time.Duration
	}{
		{200 * time.Millisecond, 26, 10 * time.Millisecond, 200 * time.Millisecond},  // 5.1 %: a tie
		{200 * time.Millisecond, 32, 10 * time.Millisecond, 200 * time.Millisecond},  // 6.25 %: still within 1.5 errors (6.44 %)
		{200 * time.Millisecond, 37, 200 * time.Millisecond, 200 * time.Millisecond}, // 7.2 %: more than 1−q are that slow
		{15 * time.Millisecond, 26, 15 * time.Millisecond, 15 * time.Millisecond},    // no gap: the order statistic
	} {
		p, _ := New(testOptions())
		for i := range LatencyWindow {
			d := 10 * time.Millisecond
			if i%(LatencyWindow/c.n) == 0 && i/(LatencyWindow/c.n) < c.n {
				d = c.slow
			}
			p.ObserveLatency(LatencySample{FirstContent: d, Stream: true})
		}
		if q, _ := p.HedgeQuantile(0.95); q != kept(c.hedge) {
			t.Errorf("%d of %d at %v: hedge p95 %v, want %v", c.n, LatencyWindow, c.slow, q, c.hedge)
		}
		if q, _ := p.LatencyQuantile(0.95); q != kept(c.plain) {
			t.Errorf("%d of %d at %v: p95 %v, want %v", c.n, LatencyWindow, c.slow, q, c.plain)
		}
	}
	// Beyond every complete time: 3 complete at 200 ms and 28 cut off later (6.05 % beyond the
	// gap) still tie; with 37 cut off (7.8 %), the longest complete time.
	for _, c := range []struct {
		cut  int
		want time.Duration
	}{{28, 10 * time.Millisecond}, {37, 200 * time.Millisecond}} {
		p, _ := New(testOptions())
		for i := range LatencyWindow {
			s := LatencySample{FirstContent: 10 * time.Millisecond, Stream: true}
			switch {
			case i < 3:
				s.FirstContent = 200 * time.Millisecond
			case i < 3+c.cut:
				s.FirstContent, s.Censored = 310*time.Millisecond, true
			}
			p.ObserveLatency(s)
		}
		if q, _ := p.HedgeQuantile(0.95); q != c.want {
			t.Errorf("3 complete at 200 ms, %d cut off at 310 ms: hedge p95 %v, want %v", c.cut, q, c.want)
		}
	}
	// The median that sets a raced try's horizon takes no tie: 53 % at 500 ms is the median.
	p, _ := New(testOptions())
	for i := range LatencyWindow {
		d := 5 * time.Millisecond
		if i%2 == 0 || i < 32 {
			d = 500 * time.Millisecond
		}
		p.ObserveLatency(LatencySample{FirstContent: d, Stream: true})
	}
	p.lat.mu.Lock()
	median := p.lat.medianLocked(0)
	p.lat.mu.Unlock()
	if median != 500*time.Millisecond {
		t.Errorf("median %v, want 500ms", median)
	}
	if q, _ := p.HedgeQuantile(0.5); q != 5*time.Millisecond {
		t.Errorf("hedge p50 %v: the tie is the hedge quantile's", q)
	}
}

// A raced time so long that adding the median would overflow is cut off at the longest time,
// not wrapped into a short one.
func TestLatency_RacedNeverOverflows(t *testing.T) {
	p, _ := New(testOptions())
	p.ObserveLatency(LatencySample{FirstContent: math.MaxInt64, Raced: math.MaxInt64/2 + 1, Stream: true})
	if got := p.RecentLatencies(nil); len(got) != 1 || got[0] != kept(maxRingTime*time.Microsecond) {
		t.Fatalf("%v", got)
	}
}

// With a ceiling above a straggler's time, a delay that reached the stragglers (at the
// start, before the route has its samples, the ceiling is the delay and they complete at
// their full time) lets the next ones complete too, keeping it there for as long as their
// share stays above 1−q — with 5 % stragglers, as long as chance says, and in a window of
// 512, for thousands of calls: the tie across the gap breaks that, so the stragglers are
// hedged and p99 stays within twice p95 for every seed.
func TestLatency_HedgeQuantileDoesNotSettleOnTheStragglers(t *testing.T) {
	h := Hedge{After: 300 * time.Millisecond, Quantile: 0.95, MinDelay: 2 * time.Millisecond, Max: 1}
	for seed := range uint64(30) {
		if _, hedged, p95, p99, _ := hedgeSimWith(h, seed, 0, 5000, true, 0); p99 > 2*p95 || hedged > 0.07 {
			t.Errorf("seed %d: p95 %v p99 %v, %.1f%% hedged", seed, p95, p99, 100*hedged)
		}
	}
}

// With a floor on the delay at half a straggler's time (MinDelay 100 ms, stragglers at
// 200 ms), a straggler whose hedge straggles too would complete within twice the delay; cut
// off a median time after the hedge's send instead, it never enters at its full time, and the
// delay stays at its floor instead of climbing to where stragglers are no longer hedged.
func TestLatency_HedgeQuantileWithAHighFloor(t *testing.T) {
	h := Hedge{After: 300 * time.Millisecond, Quantile: 0.95, MinDelay: 100 * time.Millisecond, Max: 1}
	for seed := range uint64(30) {
		if above, _, _, _, _ := hedgeSimWith(h, seed, 0, 5000, true, 0); above != 0 {
			t.Errorf("seed %d: the delay was above its floor for %.1f%% of calls", seed, 100*above)
		}
	}
}

// A route slowed down as a whole (every first token after 15, 30 or 80 ms, where it took 10)
// lifts the delay to its new times within a few hundred calls: when most of its latest tries
// outlast the estimate, the estimate rises to the shortest of them (latency.lifted), from
// where the next ones complete within their horizon; it waited for the usual times to leave
// the window before (534 calls at 30 ms, 1,078 at 80 ms).
func TestLatency_HedgeQuantileFollowsASlowdown(t *testing.T) {
	for _, c := range []struct {
		slow   time.Duration
		within int
	}{{15 * time.Millisecond, 60}, {30 * time.Millisecond, 120}, {80 * time.Millisecond, 300}} {
		for seed := range uint64(3) {
			if lag := slowdownLag(seed, c.slow); lag < 0 || lag > c.within {
				t.Errorf("seed %d: every try took %v from call 2,000; the delay reached 90 %% of it after %d calls, want within %d",
					seed, c.slow, lag, c.within)
			}
		}
		if _, _, _, _, last := hedgeSim(1, 2000, true, c.slow); last < c.slow {
			t.Errorf("after every try took %v, the hedge delay is %v", c.slow, last)
		}
	}
}

// slowdownLag runs hedgeSim's route for 2,000 calls with 5 % stragglers, then makes every try
// take slow, and returns after how many slow calls the hedge delay reached 90 % of slow (-1:
// not within 4,000).
func slowdownLag(seed uint64, slow time.Duration) int {
	h := Hedge{After: 100 * time.Millisecond, Quantile: 0.95, MinDelay: 2 * time.Millisecond, Max: 1}
	p, _ := New(testOptions())
	rng := rand.New(rand.NewPCG(seed, 36))
	draw := func(i int) time.Duration {
		switch {
		case i >= 2000:
			return slow
		case rng.Float64() < 0.05:
			return 200 * time.Millisecond
		}
		return 9*time.Millisecond + time.Duration(rng.Int64N(int64(2*time.Millisecond)))
	}
	for i := range 6000 {
		d := h.Delay(p)
		if i >= 2000 && d >= slow*9/10 {
			return i - 2000
		}
		s := LatencySample{FirstContent: draw(i), Stream: true}
		if s.FirstContent > d {
			s.Raced = d
			if second := draw(i); d+second < s.FirstContent {
				s.FirstContent, s.Censored = d+second, true
			}
		}
		p.ObserveLatency(s)
	}
	return -1
}
