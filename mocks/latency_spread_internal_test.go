package mocks

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The draws of a profile with a Spread, taken from latencyState.draw itself: thousands of
// them cost nothing, and the seeded source makes each run the same.

// profileSource is a source like a profile's, for the tests to draw by hand what draw should.
func profileSource(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x1a7e)) }

func TestLatencySpread_DrawsALogNormalWhoseMedianIsFirstToken(t *testing.T) {
	const n = 20_000
	p := LatencyProfile{FirstToken: 10 * time.Millisecond, Spread: 0.25, Seed: 3}
	l := newLatencyState(p)
	ds := make([]time.Duration, n)
	for i := range ds {
		d := l.draw()
		if d.straggler || d.firstToken <= 0 {
			t.Fatalf("draw %d: %v straggler %t, want a positive delay and no straggler", i, d.firstToken, d.straggler)
		}
		ds[i] = d.firstToken
	}
	// Exactly FirstToken × exp(Spread × Z), Z the source's next normal: a wrong scale (Z
	// alone, Spread², 1/Spread) or a wrong base shows here before it could hide in a percentile.
	rng := profileSource(p.Seed)
	for i, d := range ds[:100] {
		if want := time.Duration(math.Round(float64(p.FirstToken) * math.Exp(p.Spread*rng.NormFloat64()))); d != want {
			t.Fatalf("draw %d: %v, want %v", i, d, want)
		}
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	at := func(q float64) float64 { return float64(sorted[int(q*float64(n-1))]) }
	median := at(0.5)
	t.Logf("median %v, p95 %.3f ×, p99 %.3f ×, p1 %.3f ×", time.Duration(median), at(0.95)/median, at(0.99)/median, at(0.01)/median)
	if r := median / float64(p.FirstToken); r < 0.98 || r > 1.02 {
		t.Errorf("median %v, want within 2 %% of %v", time.Duration(median), p.FirstToken)
	}
	// exp(1.645 × 0.25) = 1.509, exp(2.326 × 0.25) = 1.789.
	if r := at(0.95) / median; r < 1.45 || r > 1.57 {
		t.Errorf("p95/median %.3f, want 1.45–1.57 (about 1.51)", r)
	}
	if r := at(0.99) / median; r < 1.68 || r > 1.92 {
		t.Errorf("p99/median %.3f, want 1.68–1.92 (about 1.79)", r)
	}
	// Skewed to the right: the tail above the median is longer than the one below it.
	if up, down := at(0.99)/median, median/at(0.01); math.Abs(up-down) > 0.1 || at(0.99)-median <= median-at(0.01) {
		t.Errorf("p99 %.3f × the median, p1 1/%.3f ×: want a log-symmetric spread, longer above", up, down)
	}
}

func TestLatencySpread_ZeroDrawsWhatTheProfileAlwaysDrew(t *testing.T) {
	// Without a Spread the source gives the straggler's draw, then the jitter's, as before
	// Spread existed: seeded tests and benchmarks keep their numbers.
	p := LatencyProfile{FirstToken: 10 * time.Millisecond, Jitter: 5 * time.Millisecond,
		StragglerRate: 0.2, Straggler: time.Second, Seed: 42}
	l, rng := newLatencyState(p), profileSource(p.Seed)
	stragglers := 0
	for i := range 2000 {
		got := l.draw()
		want := p.Straggler
		straggler := rng.Float64() < p.StragglerRate
		if !straggler {
			want = p.FirstToken + time.Duration(rng.Int64N(int64(p.Jitter)+1))
		} else {
			stragglers++
		}
		if got.firstToken != want || got.straggler != straggler {
			t.Fatalf("draw %d: %v straggler %t, want %v straggler %t", i, got.firstToken, got.straggler, want, straggler)
		}
	}
	if stragglers == 0 {
		t.Fatal("no stragglers in 2000 draws at 0.2: the replay proves nothing about their draw")
	}

	// With a Spread and a Jitter: the straggler's draw, the normal, then the jitter on top.
	p.Spread = 0.4
	l, rng = newLatencyState(p), profileSource(p.Seed)
	for i := range 2000 {
		got := l.draw()
		want := p.Straggler
		straggler := rng.Float64() < p.StragglerRate
		if !straggler {
			want = time.Duration(math.Round(float64(p.FirstToken)*math.Exp(p.Spread*rng.NormFloat64()))) +
				time.Duration(rng.Int64N(int64(p.Jitter)+1))
		}
		if got.firstToken != want || got.straggler != straggler {
			t.Fatalf("spread and jitter, draw %d: %v straggler %t, want %v straggler %t", i, got.firstToken, got.straggler, want, straggler)
		}
	}
}

func TestLatencySpread_StragglersKeepTheirRateAndTheirDelay(t *testing.T) {
	const n = 20_000
	p := LatencyProfile{FirstToken: 100 * time.Millisecond, Spread: 0.5, StragglerRate: 0.05,
		Straggler: 3 * time.Second, Seed: 9}
	l := newLatencyState(p)
	stragglers, spread := 0, 0
	for range n {
		d := l.draw()
		switch {
		case d.straggler:
			stragglers++
			if d.firstToken != p.Straggler {
				t.Fatalf("a straggler waits %v, want exactly %v", d.firstToken, p.Straggler)
			}
		case d.firstToken != p.FirstToken:
			spread++
		}
	}
	t.Logf("%d stragglers in %d draws", stragglers, n)
	// 5 % of 20,000 is 1,000, give or take 31 (one standard deviation).
	if stragglers < 850 || stragglers > 1150 {
		t.Errorf("%d stragglers in %d draws, want about 1000 (5 %%)", stragglers, n)
	}
	if spread != n-stragglers {
		t.Errorf("%d of the %d that did not straggle waited other than FirstToken, want all", spread, n-stragglers)
	}

	// StragglerEvery: every 4th exactly, the others spread.
	p.StragglerRate, p.StragglerEvery = 0, 4
	l = newLatencyState(p)
	for i := 1; i <= 400; i++ {
		d := l.draw()
		if d.straggler != (i%4 == 0) || (d.straggler && d.firstToken != p.Straggler) || (!d.straggler && d.firstToken == p.FirstToken) {
			t.Fatalf("request %d: %v straggler %t, want every 4th to wait %v and the others spread", i, d.firstToken, d.straggler, p.Straggler)
		}
	}
}

func TestLatencySpread_NeverBeyondMaxLatencyDelay(t *testing.T) {
	// The widest Spread on the longest FirstToken: half the draws would be beyond a day, and
	// the tail beyond what a Duration holds (a day × e^16 is 7.7e8 hours).
	p := LatencyProfile{FirstToken: MaxLatencyDelay, Spread: MaxLatencySpread, Seed: 5}
	l := newLatencyState(p)
	capped := 0
	for i := range 10_000 {
		d := l.draw().firstToken
		if d <= 0 || d > MaxLatencyDelay {
			t.Fatalf("draw %d: %v, want in (0, %v]", i, d, MaxLatencyDelay)
		}
		if d == MaxLatencyDelay {
			capped++
		}
	}
	t.Logf("%d of 10000 draws at the cap", capped)
	if capped < 4000 || capped > 6000 {
		t.Errorf("%d of 10000 draws at the cap, want about half (the median is the cap)", capped)
	}
	// Jitter adds to the cut delay, as it adds to FirstToken: at most the cap plus Jitter.
	p.Jitter = time.Hour
	l = newLatencyState(p)
	for i := range 1000 {
		if d := l.draw().firstToken; d < 0 || d > MaxLatencyDelay+time.Hour {
			t.Fatalf("with jitter, draw %d: %v, want in [0, %v]", i, d, MaxLatencyDelay+time.Hour)
		}
	}
	// Normals far beyond any the source gives, and the edges of the arithmetic.
	for _, c := range []struct {
		median time.Duration
		spread float64
		z      float64
		want   time.Duration
	}{
		{MaxLatencyDelay, MaxLatencySpread, 40, MaxLatencyDelay},
		{time.Nanosecond, MaxLatencySpread, 1e6, MaxLatencyDelay}, // exp overflows to +Inf
		{MaxLatencyDelay, MaxLatencySpread, -1e6, 0},              // exp underflows to 0
		{0, MaxLatencySpread, 1e6, 0},                             // 0 × +Inf would be NaN
		{time.Second, 1, math.Log(2), 2 * time.Second},
		{time.Second, 0.5, -2 * math.Log(2), 500 * time.Millisecond},
	} {
		if got := spreadDelay(c.median, c.spread, c.z); got != c.want {
			t.Errorf("spreadDelay(%v, %v, %v) = %v, want %v", c.median, c.spread, c.z, got, c.want)
		}
	}
}
