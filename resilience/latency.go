package resilience

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// LatencyWindow is how many of a pipeline's most recent first-content times its latency
// quantiles are taken over (Pipeline.LatencyQuantile). The window keeps each time to the
// microsecond, rounded up, and at most 2^31-1 µs (about 35 minutes): the quantiles and
// RecentLatencies are multiples of a microsecond.
const LatencyWindow = 128

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
// The window keeps each time in microseconds, in 32 bits: half the memory of nanoseconds, and
// a route is a pipeline, so every model of every deployment keeps one. A time to first content
// is a matter of milliseconds; a microsecond is far below anything a quantile is used for.
type latency struct {
	mu   sync.Mutex
	ring [LatencyWindow]int32 // microseconds (see ringTime), the newest at (n-1) % LatencyWindow
	n    int64                // samples recorded in all
	// lower and hedge cache the last quantile of each kind asked for: a hedge asks for one per call.
	lower, hedge quantileCache
	// median caches the window's product-limit median, the horizon of a raced try (raceHorizon).
	median quantileCache

	ttft     atomic.Uint64 // float64 bits: moving average of the time to first content, ns
	perToken atomic.Uint64 // float64 bits: moving average of a whole answer's time per output token, ns
	errRate  atomic.Uint64 // float64 bits: moving average of failures (1) and successes (0)
	samples  atomic.Int64
}

// maxRingTime is the longest time the window keeps, in microseconds: about 35 minutes, far
// beyond any first content a provider keeps a call waiting for. A longer wait (only a time
// limit set longer than that lets one happen) is kept as this: a quantile then says at least.
const maxRingTime = math.MaxInt32

// ringTime returns d (above 0) in microseconds for the window, rounded up so that the shortest
// time stays above 0 (the sign marks a cut-off), at most maxRingTime.
func ringTime(d time.Duration) int32 {
	us := int64(d / time.Microsecond)
	if d%time.Microsecond != 0 {
		us++ // never d + 999 ns first: that overflows for the longest durations
	}
	return int32(min(us, maxRingTime))
}

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
// Latency. It is cheap and takes no allocation.
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
	ns, us := int64(s.FirstContent), ringTime(s.FirstContent)
	cut := s.Censored
	l.mu.Lock()
	if s.Raced > 0 && s.FirstContent > s.Raced {
		if h := s.Raced + l.medianLocked(s.Raced); s.FirstContent > h {
			cut, us = true, ringTime(h)
		}
	}
	if cut {
		l.ring[l.n%LatencyWindow] = -us // see LatencyQuantile
	} else {
		l.ring[l.n%LatencyWindow] = us
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
// while the window holds fewer than MinLatencySamples; recomputed at most once every eight
// samples. l.mu is held.
func (l *latency) medianLocked(def time.Duration) time.Duration {
	if l.n < MinLatencySamples {
		return def
	}
	c := &l.median
	if l.n-c.at >= 8 || c.v <= 0 {
		c.v, c.at = int64(productLimit(l.ring[:min(l.n, LatencyWindow)], 0.5))*int64(time.Microsecond), l.n
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
// recomputed at most once every eight samples, so asking on every call is cheap.
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
// Why so: a straggler raced by a hedge ends either cut off, when its hedge wins, or, when its
// hedge straggles too, complete at its full time, long after the delay; counted so, 5 %
// stragglers put about one such time in a window of 128, and the 0.95 quantile on it, which
// sent the delay to its ceiling. Cut off a median time after the hedge's send, a straggler
// (many median times long) never enters at its full time, so stragglers, however many, cannot
// lift the delay above the complete times — not even from the ceiling, where twice the delay
// could exceed a straggler's time; yet a raced try that answers soon after the send still
// counts in full, so the estimate also learns times beyond the delay and does not drift down.
// A route slowed down as a whole lifts it: its raced tries complete within the horizon, or,
// once its cut-offs are all the window holds, the shortest cut-off is the estimate and the
// horizon grows with it.
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
	if c.of == qi && l.n-c.at < 8 && c.v > 0 {
		return time.Duration(c.v), true
	}
	k := int(min(l.n, LatencyWindow))
	var us int32
	if hedge {
		us = productLimit(l.ring[:k], q)
	} else {
		var tmp [LatencyWindow]int32
		u := tmp[:k]
		for i, v := range l.ring[:k] {
			u[i] = max(v, -v)
		}
		slices.Sort(u)
		us = u[min(int(math.Ceil(q*float64(k))), k)-1]
	}
	v := int64(us) * int64(time.Microsecond)
	c.v, c.at, c.of = v, l.n, qi
	return time.Duration(v), true
}

// productLimit returns the q quantile of the window w (complete times above 0, cut-offs below)
// by the product-limit estimate, as HedgeQuantile describes.
func productLimit(w []int32, q float64) int32 {
	// Each time sorts as twice its value, a cut-off one more: at equal times the complete one
	// comes first, as the product-limit estimate wants (a cut-off at t was still at risk at t).
	var tmp [LatencyWindow]int64
	keys := tmp[:len(w)]
	for i, v := range w {
		if v > 0 {
			keys[i] = 2 * int64(v)
		} else {
			keys[i] = 2*int64(-v) + 1
		}
	}
	slices.Sort(keys)
	// surv is the estimated share of tries still without first content; done when it falls to
	// 1−q (a tolerance for rounding, so that without cut-offs the rank is exactly ⌈q·n⌉).
	surv, longest := 1.0, int32(0)
	for i, key := range keys {
		if key&1 == 1 {
			continue // a cut-off: leaves the risk set, which shrinks with i
		}
		atRisk := float64(len(keys) - i)
		surv *= (atRisk - 1) / atRisk
		longest = int32(key / 2)
		if surv <= 1-q+1e-9 {
			return longest
		}
	}
	if longest > 0 {
		return longest
	}
	return int32(keys[0] / 2) // only cut-offs: the shortest
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
		dst = append(dst, time.Duration(v)*time.Microsecond)
	}
	return dst
}
