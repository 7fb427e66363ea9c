package resilience

import (
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// A provider's real capacity is rarely what BulkheadMaxConcurrency guesses: it moves with the
// provider's load, and past it the provider answers 529 or 503 (or an overloaded error inside
// a 200 stream, or just slower first tokens). With AdaptiveConcurrency the bulkhead's limit is
// found instead, additive increase and multiplicative decrease as TCP finds a path's window:
//
//   - A round is as many answered attempts as the limit, met while the slots were in use (nine
//     in ten taken, or calls waiting): an idle pipeline learns nothing of the provider's
//     capacity. A clean round (no overload signal) adds one slot; before the first overload
//     signal ever met (slow start) it adds half the limit, so a guess far too low is left
//     within a few rounds.
//   - An overload signal — a 529, a 503, a 429 that signals too many calls at once (not a spent
//     quota nor a spent rate budget: see overload.go), an overloaded error in a stream
//     (Call.ReportOverload), a moving average of the time to first token three times its
//     floor — takes a tenth off (one slot at least). Only a signal from an attempt
//     sent after the last decrease counts: the attempts in flight when the limit fell were sent
//     under the old limit, and their 529s say nothing new. So a limit halved on the provider's
//     side is followed in a few round trips, one decrease per round trip, without collapsing
//     under the burst of 529s that the attempts in flight all meet at once.
//   - The limit at which the last overload came is the ceiling: the limit climbs back to one
//     below it at one slot a round, then stays there for adaptiveHold clean rounds before it
//     tries the ceiling again. A clean round at the ceiling means the capacity grew: the
//     ceiling is forgotten and the limit climbs freely. So the limit settles just under the
//     capacity, probing it about once every adaptiveHold rounds instead of every few.
//   - A time to first token twice its floor holds the limit where it is (no growth).
//
// The limit stays within [AdaptiveMinConcurrency, AdaptiveMaxConcurrency] and starts at
// BulkheadMaxConcurrency, kept within them.

const (
	// adaptiveBackoff is what an overload leaves of the limit.
	adaptiveBackoff = 0.9
	// adaptiveHold is the number of clean rounds spent one below the ceiling before trying it.
	adaptiveHold = 16
	// latencyHot and latencyOverload are the ratios of the time to first token to its floor
	// that stop growth and that count as an overload signal.
	latencyHot, latencyOverload = 2.0, 3.0
)

// Reasons of EventConcurrencyLimitChanged.
const (
	reasonCleanRound   = "a clean round"
	reasonSlowStart    = "a clean round, slow start"
	reasonStreamError  = "overload: an overloaded error in the stream"
	reasonLatency      = "overload: the time to first token tripled"
	reasonStatus529    = "overload: status 529"
	reasonStatus503    = "overload: status 503"
	reasonStatus429    = "overload: status 429"
	reasonPastCeiling  = "a clean round at the last overload's limit"
	reasonProbeCeiling = "trying the last overload's limit again"
)

// limiter is a bulkhead's adaptive limit. Its state changes under mu; the bulkhead reads the
// limit itself from its own atomic (bulkhead.limit), which setLimit updates.
type limiter struct {
	b      *bulkhead
	lo, hi int64
	// gen counts the decreases: an attempt notes it when sent, and its overload signal counts
	// only if no decrease came since (see overload).
	gen atomic.Uint64

	mu      sync.Mutex
	limit   int64
	rising  bool  // slow start: no overload signal met yet
	ceiling int64 // the limit at the last overload, 0 for none
	held    int   // clean rounds spent one below the ceiling
	answers int64 // answered attempts of the round under way
	// ttft is the moving average of the time to first token of the deployment's streams, floor
	// its lowest (creeping up slowly, so a lasting change of the provider is accepted),
	// samples how many there were and since the number since the last decrease.
	ttft, floor    float64
	samples, since int64

	decreases, increases atomic.Int64
}

func newLimiter(o Options, b *bulkhead) *limiter {
	l := &limiter{b: b, lo: int64(o.AdaptiveMinConcurrency), hi: int64(o.AdaptiveMaxConcurrency), rising: true}
	l.limit = min(max(int64(o.BulkheadMaxConcurrency), l.lo), l.hi)
	return l
}

// current returns the limit.
func (l *limiter) current() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limit
}

// observe takes the answer of an attempt sent when the generation was gen, whose 429 (if it is
// one) signals rl: an overload signal, or one more answer towards a clean round. An attempt
// that got no answer tells nothing, nor does a 429 for a spent quota or a spent rate budget:
// fewer calls at once would not refill it. It reports whether the answer was an overload
// signal (a 529, a 503, a 429 for too many at once) met above the limit's floor: one the limit
// absorbs, whose retry goes through it without holding a slot while it waits (see
// callState.requeue); at the floor there is nothing left to give back, and the retry of a 529
// or a 503 holds its slot through its backoff, which keeps that load off the provider.
func (l *limiter) observe(resp *http.Response, err error, gen uint64, rl rateLimit) bool {
	if err != nil || resp == nil {
		return false
	}
	switch resp.StatusCode {
	case 529:
		return l.overload(gen, reasonStatus529)
	case http.StatusServiceUnavailable:
		return l.overload(gen, reasonStatus503)
	case http.StatusTooManyRequests:
		if rl == limitConcurrency {
			return l.overload(gen, reasonStatus429)
		}
	default:
		l.answered()
	}
	return false
}

// answered counts an answer that was no overload signal, and moves the limit up after a clean
// round.
func (l *limiter) answered() {
	b := l.b
	if b.waiting.Load() == 0 && b.inflight.Load()*10 < b.limit.Load()*9 {
		return // the slots are not in use: the round would say nothing of the capacity
	}
	l.mu.Lock()
	l.answers++
	if l.answers < l.limit || l.limit >= l.hi {
		l.mu.Unlock()
		return
	}
	l.answers = 0
	if l.samples >= MinLatencySamples && l.ttft > latencyHot*l.floor {
		l.mu.Unlock()
		return // the provider slows down: no more load until it recovers
	}
	prev, next, why := l.limit, l.limit+1, reasonCleanRound
	switch {
	case l.rising:
		next, why = max(l.limit+l.limit/2, l.limit+1), reasonSlowStart
	case l.ceiling == 0 || l.limit+1 < l.ceiling:
	case l.limit >= l.ceiling:
		l.ceiling, why = 0, reasonPastCeiling // the capacity grew past the last overload
	default: // one below the ceiling
		if l.held++; l.held < adaptiveHold {
			l.mu.Unlock()
			return
		}
		l.held, why = 0, reasonProbeCeiling
	}
	l.limit = min(next, l.hi)
	next = l.limit
	l.b.setLimit(next) // under mu: limits reach the bulkhead in the order they were decided
	l.mu.Unlock()
	l.increases.Add(1)
	l.report(prev, next, why)
}

// overload lowers the limit by a tenth after an overload signal from an attempt (or a call)
// sent at generation gen, unless the limit was lowered since it was sent. It reports whether
// the limit was above its floor when the signal came.
func (l *limiter) overload(gen uint64, why string) bool {
	l.mu.Lock()
	prev := l.limit
	if gen != l.gen.Load() {
		l.mu.Unlock()
		return prev > l.lo
	}
	next := max(int64(math.Ceil(float64(prev)*adaptiveBackoff)), l.lo)
	if next == prev && prev > l.lo {
		next = prev - 1
	}
	l.rising, l.ceiling, l.held, l.answers, l.since = false, prev, 0, 0, 0
	l.limit = next
	l.gen.Add(1)
	l.b.setLimit(next)
	l.mu.Unlock()
	if next != prev {
		l.decreases.Add(1)
		l.report(prev, next, why)
	}
	return prev > l.lo
}

// latency takes a stream's time to first token d: a moving average three times its floor is
// an overload signal (at most one a round), twice its floor stops growth (see answered).
func (l *limiter) latency(d time.Duration) {
	x := float64(d)
	l.mu.Lock()
	l.samples++
	l.since++
	if l.ttft == 0 {
		l.ttft = x
	} else {
		l.ttft += latencyAlpha * (x - l.ttft)
	}
	if l.floor == 0 || l.ttft < l.floor {
		l.floor = l.ttft
	} else {
		l.floor += 0.002 * (l.ttft - l.floor)
	}
	hot := l.samples >= MinLatencySamples && l.ttft > latencyOverload*l.floor && l.since >= l.limit
	gen := l.gen.Load()
	l.mu.Unlock()
	if hot {
		l.overload(gen, reasonLatency)
	}
}

// report tells the observer the limit moved.
func (l *limiter) report(prev, next int64, why string) {
	l.b.ev.emit(Event{Type: EventConcurrencyLimitChanged, Limit: int(next), PrevLimit: int(prev), Reason: why})
}
