package resilience

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// A stream that stops after content has begun is usually stalled for good: the server's
// generation died, a proxy lost the upstream. A fixed idle limit catches it only when the
// limit runs out, 20 or 30 s later, although the stream had been delivering a token every
// few milliseconds. So each route learns the rhythm of its streams — how long a Read of a
// stream's body waits for bytes once its first content has arrived — and a stream silent for
// StreamStallFactor times the 99th percentile of those waits (within StreamStallMinSeconds
// and StreamStallMaxSeconds) is cut as stalled (TimeoutStreamStall), long before the idle
// limit, and rescued by the client like any failure after content.
//
// The waits are kept as counts in half-octave buckets from 1 ms to about a minute, halved
// whenever rhythmWindow samples were added since the last halving: the percentile is that of
// the recent streams, weighted to the newest. Recording a wait is two atomic additions (the
// percentile is recomputed every rhythmEvery samples), with no lock and no allocation: it runs
// for every Read of every stream. Before the route has minRhythmGaps samples, a stream silent
// after content is cut at the ceiling (StreamStallMaxSeconds), which no rhythm could raise, or
// the idle limit when shorter; the samples of the stream that is running count too, so a new
// route's first long stream learns its own rhythm after its first few dozen reads. (A stream
// whose tokens arrive in bursts takes few reads, and so gives few samples.)

const (
	// rhythmBuckets is the number of buckets: the first holds waits below 1 ms, then two per
	// octave up to 2^26 µs (about 67 s); the last holds everything longer.
	rhythmBuckets = 32
	// rhythmWindow is how many samples are added between two halvings of the counts.
	rhythmWindow = 1024
	// rhythmEvery is how often, in samples, the percentile is recomputed.
	rhythmEvery = 8
	// minRhythmGaps is how many samples a route needs before its rhythm is trusted.
	minRhythmGaps = 16
	// rhythmFloorMicros is the upper edge of the first bucket: 1,024 µs.
	rhythmFloorMicros = 1 << 10
)

// rhythm is what a route learnt of its streams' waits for bytes after their first content.
type rhythm struct {
	counts [rhythmBuckets]atomic.Uint32
	added  atomic.Uint32 // samples since the last halving
	p99    atomic.Int64  // the percentile's bucket's upper edge, ns; 0 while untrusted
}

// rhythmBucket returns the bucket of a wait of d.
func rhythmBucket(d time.Duration) int {
	us := uint64(max(d, 0) / time.Microsecond)
	if us < rhythmFloorMicros {
		return 0
	}
	l := bits.Len64(us) - 1 // ≥ 10
	half := int(us>>(l-1)) & 1
	return min(1+2*(l-10)+half, rhythmBuckets-1)
}

// rhythmEdge returns the upper edge of bucket i: the longest wait it holds (the last bucket,
// open above, reports its lower edge).
func rhythmEdge(i int) time.Duration {
	if i == 0 {
		return rhythmFloorMicros * time.Microsecond
	}
	if i == rhythmBuckets-1 {
		i-- // the open bucket: its lower edge is the upper edge of the one below
	}
	l, half := 10+(i-1)/2, (i-1)%2
	us := uint64(1) << l // the lower edge of a first half is 2^l, of a second 1.5·2^l
	if half == 0 {
		us += us >> 1
	} else {
		us <<= 1
	}
	return time.Duration(us) * time.Microsecond
}

// add records one wait.
func (r *rhythm) add(d time.Duration) {
	r.counts[rhythmBucket(d)].Add(1)
	n := r.added.Add(1)
	if n%rhythmEvery == 0 {
		r.update()
	}
	if n >= rhythmWindow && r.added.CompareAndSwap(n, 0) {
		// Halving races with additions, which may lose a sample or two: the percentile of a
		// window needs no exact counts.
		for i := range r.counts {
			c := &r.counts[i]
			c.Store(c.Load() / 2)
		}
	}
}

// update recomputes the percentile from the counts.
func (r *rhythm) update() {
	var total uint64
	for i := range r.counts {
		total += uint64(r.counts[i].Load())
	}
	if total < minRhythmGaps {
		r.p99.Store(0)
		return
	}
	// The 99th percentile: the bucket where the longest 1% of the waits begins.
	var above uint64
	for i := rhythmBuckets - 1; i >= 0; i-- {
		above += uint64(r.counts[i].Load())
		if above*100 > total {
			r.p99.Store(int64(rhythmEdge(i)))
			return
		}
	}
	r.p99.Store(int64(rhythmEdge(0)))
}

// StreamRhythm returns the 99th percentile of how long the Reads of the pipeline's streams
// waited for bytes after their first content (rounded up to its bucket's edge, at most about
// a minute), and false while the pipeline has too few samples to trust it: what its stall
// limit is learnt from (Options.StreamStallFactor).
func (p *Pipeline) StreamRhythm() (time.Duration, bool) {
	r := p.timeouts.rhythm.Load()
	if r == nil {
		return 0, false
	}
	d := time.Duration(r.p99.Load())
	return d, d > 0
}

// learnt returns the pipeline's rhythm, made at its first use: one allocation per route, by
// its first watched stream.
func (t *timeouts) learnt() *rhythm {
	if r := t.rhythm.Load(); r != nil {
		return r
	}
	if r := new(rhythm); t.rhythm.CompareAndSwap(nil, r) {
		return r
	}
	return t.rhythm.Load()
}

// stallLimits are a policy's stall limit: Options.StreamStallFactor, StreamStallMinSeconds
// and StreamStallMaxSeconds.
type stallLimits struct {
	factor   float64
	min, max time.Duration
}

// on reports whether the stall limit applies at all.
func (s stallLimits) on() bool { return s.factor > 0 }

// of returns the stall limit for a route whose rhythm's percentile is p99: the factor times
// it, within the bounds; the ceiling while the rhythm is untrusted (p99 0), since no rhythm
// could raise the limit past it; 0 when stall detection is off.
func (s stallLimits) of(p99 time.Duration) time.Duration {
	if s.factor <= 0 {
		return 0
	}
	if p99 <= 0 {
		return s.max
	}
	return min(max(time.Duration(s.factor*float64(p99)), s.min), s.max)
}
