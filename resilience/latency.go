package resilience

import (
	"math"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// LatencyWindow is how many of a pipeline's most recent first-content times its latency
// quantiles are taken over (Pipeline.LatencyQuantile, HedgeQuantile). The window keeps each
// time to within a thousandth (to the microsecond, rounded up, below 2,048 µs; see ringTime),
// and at most about 35 minutes 47 seconds (2^31 µs).
//
// Why 512: the window is what a hedge delay is learnt from, and its size is how finely it sees
// the tail. With about 1−q of a route's tries straggling — 5 % random stragglers under a 0.95
// quantile — the share of stragglers in the window decides where the quantile falls: above
// 1−q, on the window's longest usual time, which a usual try outlasts about one time in n+1;
// below, that much further into the usual times. Both errors shrink with the window: in the
// seeded simulation (latency_test.go) hedges went from 5.7–6.7 % of calls with 128 to
// 5.0–6.1 % with 512; against the fake server with skewed usual times they were 0.2–0.8
// points above the share that straggled (BenchmarkHedgeStragglers, docs/capacity.md). The
// price: a quantile costs a sort of 512 keys every 32 samples, and the usual times stay in the
// window four times longer — which alone would have a route slowed as a whole to three times
// its usual time followed only after about 530 calls; the latest tries lift the estimate
// sooner (latency.lifted). Kept in 16 bits a time, the window is 1 KiB per route that has
// measured a call.
const LatencyWindow = 512

// MinLatencySamples is how many first-content times a pipeline needs before it states a
// quantile: fewer say too little about a tail.
const MinLatencySamples = 10

// latencyAlpha is the weight of a new sample in the moving averages (Latency): a route's
// estimate moves most of the way to a new level within about eight calls.
const latencyAlpha = 0.25

// latency keeps what a pipeline measured of its calls' speed: the last LatencyWindow times to
// first content, and moving averages of that time, of the time per output token of whole
// answers, and of the share of calls that failed. The client records them (ObserveLatency);
// the pipeline itself never reads the wall clock for them.
//
// The window keeps each time in 16 bits (ringTime): a route is a pipeline, so every model of
// every deployment keeps one, and a time to first content is a matter of milliseconds, a
// thousandth of which is far below anything a quantile is used for. It is allocated with the
// first sample (1 KiB): a deployment whose calls all go through its routes, or a route never
// called, holds none.
type latency struct {
	mu   sync.Mutex
	ring *[LatencyWindow]int16 // ringTime codes, the newest at (n-1) % LatencyWindow; nil before the first sample
	n    int64                 // samples recorded in all
	// lower and hedge cache the last quantile of each kind asked for: a hedge asks for one per call.
	lower, hedge quantileCache
	// median caches the window's product-limit median, the horizon of a raced try (raceHorizon).
	median quantileCache

	ttft     atomic.Uint64 // float64 bits: moving average of the time to first content, ns
	perToken atomic.Uint64 // float64 bits: moving average of a whole answer's time per output token, ns
	errRate  atomic.Uint64 // float64 bits: moving average of failures (1) and successes (0)
	samples  atomic.Int64
}

// maxRingTime is the longest time the window keeps, in microseconds: about 36 minutes, far
// beyond any first content a provider keeps a call waiting for. A longer wait (only a time
// limit set longer than that lets one happen) is kept as this: a quantile then says at least.
const maxRingTime = 1 << 31

// ringMantissa is how many steps each doubling of a time has in the window: a time of
// 2^e µs and more (e ≥ 11) is kept in steps of 2^(e−10) µs, under a thousandth of it.
const ringMantissa = 1024

// ringTime returns the window's code for d (above 0), a positive int16 that orders as the
// times do; the sign is left for marking a cut-off. Below 2,048 µs the code is the time in
// microseconds, rounded up (so that the shortest time stays above 0); from there on a floating
// point of its own: for each doubling 1,024 steps, the time rounded up to the next. The longest
// is maxRingTime (code 22,528).
func ringTime(d time.Duration) int16 {
	us := int64(d / time.Microsecond)
	if d%time.Microsecond != 0 {
		us++ // never d + 999 ns first: that overflows for the longest durations
	}
	us = min(max(us, 1), maxRingTime)
	if us < 2*ringMantissa {
		return int16(us)
	}
	shift := bits.Len64(uint64(us)) - 11 // us>>shift in [1024, 2048)
	m := (us + 1<<shift - 1) >> shift    // rounded up: may reach 2048
	if m == 2*ringMantissa {
		shift, m = shift+1, ringMantissa
	}
	return int16(shift*ringMantissa + int(m))
}

// ringDuration is the time a window code (without its sign) stands for: the roundest time —
// the one with the most zeros in microseconds — of those the code keeps, so that a time of
// 300 ms comes back as 300 ms, not as the 300.032 ms at the top of its step.
func ringDuration(code int16) time.Duration {
	hi := ringMicros(code)
	if hi < 2*ringMantissa {
		return time.Duration(hi) * time.Microsecond // exact
	}
	lo := ringMicros(code - 1) // the code keeps the times in (lo, hi]
	for p := int64(1e9); p > 1; p /= 10 {
		if v := hi / p * p; v > lo {
			return time.Duration(v) * time.Microsecond
		}
	}
	return time.Duration(hi) * time.Microsecond
}

// ringMicros is the longest time, in microseconds, that the window code stands for.
func ringMicros(code int16) int64 {
	c := int64(code)
	if c < 2*ringMantissa {
		return c
	}
	shift := c/ringMantissa - 1
	return (c - shift*ringMantissa) << shift
}

// tieErrors is how many standard errors of a share above 1−q the tail beyond a gap may hold
// and still be hedged (productLimit).
const tieErrors = 1.5

// satAdd is a+b for durations above 0, at most the longest Duration.
func satAdd(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// refreshEvery is how many samples a cached quantile of a window holding k times serves
// before it is computed again: a sixteenth of the window, at least eight.
func refreshEvery(k int64) int64 { return max(8, k/16) }

// quantileCache is the last quantile computed (v), of which quantile (of: its float64 bits),
// when the pipeline had at samples.
type quantileCache struct{ v, at, of int64 }

// LatencySample is one call's measured speed, as the client reports it: the time from sending
// to the first content (a stream's first token, a whole answer's arrival), and for a whole
// answer the output tokens it held. A call that failed sets Failed and nothing else; a call cut
// off (a first-token limit, a hedge that lost) reports the time it had waited as FirstContent
// and sets Censored: the real time was longer. A cut that is the route's failure (its
// first-token limit ran out) sets both: the wait counts among the times, so the tail shows it,
// and the call among the failures; a hedge that lost sets Censored alone. A try raced by a
// hedge sets Raced (see there).
type LatencySample struct {
	FirstContent time.Duration
	OutputTokens int  // of a whole answer; 0 for a stream
	Stream       bool // FirstContent is a stream's first token
	Censored     bool
	Failed       bool
	// Raced, when above 0, is how long after it was sent the try still had no first content
	// when its call sent another try (a hedge). From then on, whether the try's own time is
	// seen depends on the other's: a straggler shows its full time only when its hedge
	// straggles too. So the window keeps a raced try in full only if its first content came
	// within the route's median time to first content after Raced (by when a hedge usually
	// has its own; twice Raced while the window has fewer than MinLatencySamples), and else as
	// cut off there, whether it went on to win or not: a horizon fixed when the hedge went
	// out, not by the try's own time, which the product-limit estimate (HedgeQuantile)
	// handles without bias. The moving averages still take FirstContent as it is.
	Raced time.Duration
}

// ObserveLatency records s for the pipeline (a route: Pipeline.Route), for LatencyQuantile and
// Latency. It is cheap and takes no allocation, but for a pipeline's first sample, which
// allocates its window (1 KiB, see LatencyWindow).
func (p *Pipeline) ObserveLatency(s LatencySample) {
	l := &p.lat
	if s.Failed {
		share(&l.errRate, 1)
	} else {
		share(&l.errRate, 0)
	}
	if (s.Failed && !s.Censored) || s.FirstContent <= 0 {
		return
	}
	ns, code := int64(s.FirstContent), ringTime(s.FirstContent)
	cut := s.Censored
	l.mu.Lock()
	if l.ring == nil {
		l.ring = new([LatencyWindow]int16)
	}
	if s.Raced > 0 && s.FirstContent > s.Raced {
		if h := satAdd(s.Raced, l.medianLocked(s.Raced)); s.FirstContent > h {
			cut, code = true, ringTime(h)
		}
	}
	if cut {
		l.ring[l.n%LatencyWindow] = -code // see LatencyQuantile
	} else {
		l.ring[l.n%LatencyWindow] = code
	}
	l.n++
	l.mu.Unlock()
	l.samples.Add(1)
	if s.Stream || s.Censored {
		ewma(&l.ttft, float64(ns))
	}
	if a := p.bh.adaptive; a != nil && s.Stream && !s.Censored {
		a.latency(s.FirstContent) // the deployment's limit hears every route's streams
	}
	if !s.Stream && !s.Censored && s.OutputTokens > 0 {
		ewma(&l.perToken, float64(ns)/float64(s.OutputTokens))
	}
}

// medianLocked returns the product-limit median of the window (see HedgeQuantile), or def
// while the window holds fewer than MinLatencySamples; recomputed at most once every
// refreshEvery samples. l.mu is held.
func (l *latency) medianLocked(def time.Duration) time.Duration {
	if l.n < MinLatencySamples {
		return def
	}
	c := &l.median
	if k := min(l.n, LatencyWindow); l.n-c.at >= refreshEvery(k) || c.v <= 0 {
		c.v, c.at = int64(ringDuration(productLimit(l.ring[:k], 0.5, false))), l.n
	}
	return time.Duration(c.v)
}

// ewma moves the average in v towards x (the first sample sets it).
func ewma(v *atomic.Uint64, x float64) {
	for {
		old := v.Load()
		cur := math.Float64frombits(old)
		next := x
		if old != 0 {
			next = cur + latencyAlpha*(x-cur)
		}
		if v.CompareAndSwap(old, math.Float64bits(next)) {
			return
		}
	}
}

// share moves the share in v towards x (1 for a failure, 0 for a success). Unlike a time, a
// share has a prior: before any call, none failed; so the first failure after a run of
// successes moves it by latencyAlpha, not to 1.
func share(v *atomic.Uint64, x float64) {
	for {
		old := v.Load()
		cur := math.Float64frombits(old)
		if v.CompareAndSwap(old, math.Float64bits(cur+latencyAlpha*(x-cur))) {
			return
		}
	}
}

// LatencyQuantile returns the q quantile (0 < q < 1) of the pipeline's last LatencyWindow
// times to first content, and false when it has fewer than MinLatencySamples. A call cut off
// (LatencySample.Censored, or raced: LatencySample.Raced) counts at the time it had waited, so
// the quantile is a lower bound of the true one: what a dashboard shows. A quantile is
// recomputed at most once every sixteenth of the window's samples (every 8 while it holds
// up to 128, every 32 once full), so asking on every call is cheap.
func (p *Pipeline) LatencyQuantile(q float64) (time.Duration, bool) {
	return p.lat.quantile(q, false)
}

// HedgeQuantile returns the q quantile (0 < q < 1) of the pipeline's last LatencyWindow times
// to first content for choosing a hedge delay (resilience.Hedge.Delay), and false when it has
// fewer than MinLatencySamples.
//
// The window holds right-censored data: a try cut off — cancelled because another try of its
// call won, stopped by a first-token limit, or raced by a hedge and without first content
// within a median time after the hedge went out (LatencySample.Raced) — is known only to
// take longer than where it was cut. The quantile is the product-limit (Kaplan–Meier)
// estimate: walking the times from the shortest, each complete time removes 1/(at risk) of
// the remaining share and each cut-off leaves the risk set without removing any, so its share
// goes to the longer times as they come. Without cut-offs this is the order statistic at rank
// ⌈q·n⌉. When the cut-offs hold more than 1−q of the share beyond the longest complete time,
// the quantile lies beyond it and the window cannot say where: the estimate is then that
// longest complete time (with no complete time at all, the shortest cut-off).
//
// A tie across a gap: when the quantile lies beyond a gap — a complete time more than twice
// the one before it — and the share of tries beyond the gap exceeds 1−q by no more than 1.5
// standard errors of a share of 1−q in the window (1.4 points for 0.95 and 512 tries; in a
// young window the error is wide — with 10 tries, 10 points), the estimate is the time before
// the gap. The median that sets a raced try's horizon takes no such tie. The window cannot tell whether those tries are more
// than 1−q of all, and the side before the gap is the one from which they are hedged. Without
// it, a delay that once reached the stragglers — at the start, when the ceiling is the delay
// and they complete at their full time — let the next ones complete too and stayed on them
// for as long as chance kept their share above 1−q: thousands of calls in a window of 512,
// with p99 at the stragglers' time (TestLatency_HedgeQuantileDoesNotSettleOnTheStragglers).
//
// Why so: a straggler raced by a hedge ends either cut off, when its hedge wins, or, when its
// hedge straggles too, complete at its full time, long after the delay; counted so, 5 %
// stragglers put one or two such times in a window of 512, and the 0.95 quantile on them,
// which sent the delay to its ceiling. Cut off a median time after the hedge's send, a straggler
// (many median times long) never enters at its full time, so stragglers, however many, cannot
// lift the delay above the complete times — not even from the ceiling, where twice the delay
// could exceed a straggler's time; yet a raced try that answers soon after the send still
// counts in full, so the estimate also learns times beyond the delay and does not drift down.
// A route slowed down as a whole lifts it: its raced tries complete within the horizon, or,
// when more than half of its latest 32 tries outlast the estimate (complete or cut off), the
// estimate is at least the shortest of those, and the horizon grows with it — a route slowed
// from 10 to 30 ms is followed within about 55 calls, to 80 ms within about 210.
func (p *Pipeline) HedgeQuantile(q float64) (time.Duration, bool) {
	return p.lat.quantile(q, true)
}

func (l *latency) quantile(q float64, hedge bool) (time.Duration, bool) {
	if !(q > 0 && q < 1) {
		return 0, false
	}
	c := &l.lower
	if hedge {
		c = &l.hedge
	}
	qi := int64(math.Float64bits(q))
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n < MinLatencySamples {
		return 0, false
	}
	k := min(l.n, LatencyWindow)
	if c.of == qi && l.n-c.at < refreshEvery(k) && c.v > 0 {
		return time.Duration(c.v), true
	}
	var code int16
	if hedge {
		code = l.lifted(productLimit(l.ring[:k], q, true))
	} else {
		var tmp [LatencyWindow]int16
		u := tmp[:k]
		for i, v := range l.ring[:k] {
			u[i] = max(v, -v)
		}
		slices.Sort(u)
		code = u[min(int(math.Ceil(q*float64(k))), int(k))-1]
	}
	v := int64(ringDuration(code))
	c.v, c.at, c.of = v, l.n, qi
	return time.Duration(v), true
}

// recentTries is how many of a window's latest tries tell whether a route has slowed as a
// whole (latency.lifted).
const recentTries = 32

// lifted returns the hedge estimate code, or, when more than half of the window's latest
// recentTries tries took longer than it (complete or cut off), the shortest of those: a
// route slowed as a whole. l.mu is held and the window holds at least MinLatencySamples.
//
// Why: a try of a route that slowed to more than about twice its usual time is raced by a
// hedge and cut off a median time after it (LatencySample.Raced), beyond every complete time;
// the product-limit estimate then stays at the longest usual time until the usual times have
// left the window — 512 tries. The latest tries say it sooner: when most of them outlast the
// estimate, it is no longer the route's tail but its body, and the delay rises at least to
// where they were seen or cut, from where the next ones complete within their horizon and the
// estimate proper follows. Stragglers never make half of 32 tries; a route that got faster
// is followed by the estimate itself.
func (l *latency) lifted(code int16) int16 {
	r := min(l.n, recentTries)
	beyond, shortest := int64(0), int16(math.MaxInt16)
	for i := l.n - r; i < l.n; i++ {
		v := l.ring[i%LatencyWindow]
		if v < 0 {
			v = -v
		}
		if v > code {
			beyond++
			shortest = min(shortest, v)
		}
	}
	if 2*beyond > r {
		return shortest
	}
	return code
}

// productLimit returns the q quantile of the window w (codes of complete times above 0,
// cut-offs below) by the product-limit estimate, as HedgeQuantile describes; with tie, a tie
// across a gap is the time before the gap (HedgeQuantile; not for the median, whose job is to
// say how long a hedge usually takes, and which a tie would only shorten).
func productLimit(w []int16, q float64, tie bool) int16 {
	// Each time sorts as twice its code, a cut-off one more: at equal times the complete one
	// comes first, as the product-limit estimate wants (a cut-off at t was still at risk at t).
	// Codes are below 2^15, so the keys fit 16 bits unsigned.
	var tmp [LatencyWindow]uint16
	keys := tmp[:len(w)]
	for i, v := range w {
		if v > 0 {
			keys[i] = 2 * uint16(v)
		} else {
			keys[i] = 2*uint16(-v) + 1
		}
	}
	slices.Sort(keys)
	// surv is the estimated share of tries still without first content; done when it falls to
	// 1−q (a tolerance for rounding, so that without cut-offs the rank is exactly ⌈q·n⌉).
	surv, longest := 1.0, int16(0)
	// gapLow is the last complete time before the latest gap (a complete time more than
	// twice the one before it), gapSurv the share still waiting at that time.
	gapLow, gapSurv := int16(0), 1.0
	// tied reports a tie across the latest gap, when the quantile lies beyond it: the share
	// beyond the gap exceeds 1−q by at most tieErrors standard errors of such a share in the
	// window, which then cannot tell whether the tries beyond it are more than 1−q of all; the
	// time before the gap is the answer, the side from which those tries are hedged.
	tied := func() bool {
		return tie && gapLow > 0 && gapSurv-(1-q) <= tieErrors*math.Sqrt(q*(1-q)/float64(len(keys)))
	}
	for i, key := range keys {
		if key&1 == 1 {
			continue // a cut-off: leaves the risk set, which shrinks with i
		}
		t := int16(key / 2)
		if longest > 0 && ringMicros(t) > 2*ringMicros(longest) {
			gapLow, gapSurv = longest, surv
		}
		atRisk := float64(len(keys) - i)
		surv *= (atRisk - 1) / atRisk
		longest = t
		if surv <= 1-q+1e-9 {
			if tied() {
				return gapLow
			}
			return longest
		}
	}
	if longest > 0 { // the quantile lies beyond the longest complete time
		if tied() {
			return gapLow
		}
		return longest
	}
	return int16(keys[0] / 2) // only cut-offs: the shortest
}

// LatencyInfo is what a pipeline measured of its calls' speed (Pipeline.Latency).
type LatencyInfo struct {
	// Samples is how many first-content times were recorded.
	Samples int64
	// FirstToken is the moving average of the time to a stream's first content (calls cut off
	// count at the time they waited); 0 before any.
	FirstToken time.Duration
	// PerOutputToken is the moving average of a whole answer's time divided by its output
	// tokens; 0 before any.
	PerOutputToken time.Duration
	// P50 and P95 are quantiles of the last LatencyWindow times to first content (streams and
	// whole answers alike); 0 before MinLatencySamples.
	P50, P95 time.Duration
	// ErrorRate is the moving average of the share of calls that failed, 0 to 1: 0 before any
	// failure, and a failure moves it a quarter of the way to 1.
	ErrorRate float64
	// StreamGap is the 99th percentile of the waits for bytes of the pipeline's streams after
	// their first content (StreamRhythm), 0 until it is trusted; StallAfter the silence that
	// cuts such a stream now (Options.StreamStallFactor times StreamGap, within its bounds; the
	// ceiling until the rhythm is trusted), 0 when stall detection is off or before the
	// pipeline's first watched stream (a client's ChatStream). Latency fills them,
	// LatencyAverages does not.
	StreamGap, StallAfter time.Duration
}

// Latency returns what the pipeline measured of its calls' speed.
func (p *Pipeline) Latency() LatencyInfo {
	info := p.LatencyAverages()
	info.P50, _ = p.LatencyQuantile(0.5)
	info.P95, _ = p.LatencyQuantile(0.95)
	if p.timeouts.rhythm.Load() != nil { // a stream was watched
		info.StreamGap, _ = p.StreamRhythm()
		info.StallAfter = p.timeouts.pol.stall.of(info.StreamGap)
	}
	return info
}

// LatencyAverages returns Latency without its quantiles (P50 and P95 are 0): the moving
// averages and the count of samples, read from atomics without a lock, for a router that
// asks on every call.
func (p *Pipeline) LatencyAverages() LatencyInfo {
	l := &p.lat
	return LatencyInfo{Samples: l.samples.Load(),
		FirstToken:     time.Duration(math.Float64frombits(l.ttft.Load())),
		PerOutputToken: time.Duration(math.Float64frombits(l.perToken.Load())),
		ErrorRate:      math.Float64frombits(l.errRate.Load())}
}

// RecentLatencies appends to dst the pipeline's last LatencyWindow times to first content,
// oldest first, and returns the extended slice: the series a dashboard draws. A call cut off
// (LatencySample.Censored) counts at the time it had waited, as in LatencyQuantile. It copies
// the window under the lock ObserveLatency takes, for a moment; with a dst of cap
// LatencyWindow or more it allocates nothing.
func (p *Pipeline) RecentLatencies(dst []time.Duration) []time.Duration {
	l := &p.lat
	l.mu.Lock()
	defer l.mu.Unlock()
	k := min(l.n, LatencyWindow)
	for i := l.n - k; i < l.n; i++ {
		v := l.ring[i%LatencyWindow]
		if v < 0 {
			v = -v
		}
		dst = append(dst, ringDuration(v))
	}
	return dst
}
