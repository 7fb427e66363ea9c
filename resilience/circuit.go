package resilience

import (
	"sync"
	"sync/atomic"
	"time"
)

// circuit is the circuit breaker's state machine. It is the one source of truth for the
// circuit: admission, outcome reports, CircuitState, CircuitInfo, Isolate and Reset all read
// and write the fields below under mu, and nothing keeps a copy of them elsewhere.
//
// Every admitted call gets a ticket that names the generation it was admitted in. A
// generation ends with every state change (and with Isolate and Reset), and a report whose
// ticket belongs to an ended generation is ignored: a call that was in flight when the circuit
// opened, was reset or isolated cannot reopen or poison what came after.
//
// Times are durations on the pipeline's clock since the circuit was built (monotonic with the
// wall clock), so tests can move them and a wall-clock jump cannot stretch a break.
type circuit struct {
	clock   Clock
	epoch   time.Time
	openFor time.Duration

	threshold   int     // consecutive failures that open the circuit
	ratio       float64 // 0: consecutive mode only
	minCalls    int     // ratio mode: calls needed in the window
	halfOpenMax int     // probes let through, and successes needed to close
	window      ratioWindow

	mu sync.Mutex
	// state and until are atomics so that admission can turn calls away without the lock
	// (fastReject); they are only written under mu, together with the fields below.
	state      atomic.Int32 // a CircuitState
	until      atomic.Int64 // open: when probes may start (since epoch); 0 otherwise
	generation uint64
	failures   int // closed: consecutive failures
	probes     int // half-open: probes admitted and not excluded
	successes  int // half-open: successful probes
}

// ticket is what admission gives a call, to hand back with its outcome.
type ticket struct{ generation uint64 }

// verdict is how a call ended, for the circuit.
type verdict int8

const (
	verdictSuccess  verdict = iota
	verdictFailure          // a server failure: 5xx, network error, our timeout, a reported stream failure
	verdictExcluded         // neither: the caller gave up first
)

// change is a state transition, reported by the method that made it so that the caller can
// emit the event outside the lock.
type change struct {
	from, to CircuitState
	ok       bool
}

// rejection says why admission turned a call away.
type rejection struct {
	state      CircuitState
	retryAfter time.Duration
}

func newCircuit(o Options, c Clock) *circuit {
	cb := &circuit{
		clock:       c,
		epoch:       c.Now(),
		openFor:     seconds(o.CircuitBreakerDurationSeconds),
		threshold:   o.CircuitBreakerThreshold,
		ratio:       o.CircuitBreakerFailureRatio,
		minCalls:    o.CircuitBreakerMinThroughput,
		halfOpenMax: o.CircuitBreakerHalfOpenMaxRequests,
	}
	if cb.ratio > 0 {
		cb.window.init(seconds(o.CircuitBreakerSamplingSeconds))
	}
	return cb
}

// now is the clock's time as a duration since the circuit was built.
func (cb *circuit) now() int64 { return int64(cb.clock.Now().Sub(cb.epoch)) }

// fastReject turns a call away without taking the lock when the circuit is isolated, or open
// with its break not yet over. Anything less certain returns ok false and is left to admit.
func (cb *circuit) fastReject() (rejection, bool) {
	switch CircuitState(cb.state.Load()) {
	case CircuitIsolated:
		return rejection{state: CircuitIsolated}, true
	case CircuitOpen:
		if left := cb.until.Load() - cb.now(); left > 0 {
			return rejection{state: CircuitOpen, retryAfter: time.Duration(left)}, true
		}
	}
	return rejection{}, false
}

// admit lets a call through, returning its ticket, or turns it away.
func (cb *circuit) admit() (ticket, *rejection, change) {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	now := cb.now()
	ch := cb.advance(now)
	switch CircuitState(cb.state.Load()) {
	case CircuitIsolated:
		return ticket{}, &rejection{state: CircuitIsolated}, ch
	case CircuitOpen:
		return ticket{}, &rejection{state: CircuitOpen, retryAfter: time.Duration(cb.until.Load() - now)}, ch
	case CircuitHalfOpen:
		if cb.probes >= cb.halfOpenMax {
			return ticket{}, &rejection{state: CircuitHalfOpen}, ch
		}
		cb.probes++
	}
	return ticket{generation: cb.generation}, nil, ch
}

// report records how an admitted call ended. A ticket from an ended generation is ignored.
func (cb *circuit) report(t ticket, v verdict) change {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	now := cb.now()
	ch := cb.advance(now)
	if t.generation != cb.generation {
		return ch
	}
	switch CircuitState(cb.state.Load()) {
	case CircuitClosed:
		switch v {
		case verdictSuccess:
			cb.failures = 0
			cb.window.add(now, false)
		case verdictFailure:
			cb.failures++
			cb.window.add(now, true)
			if cb.readyToTrip(now) {
				return cb.enter(CircuitOpen, now)
			}
		}
	case CircuitHalfOpen:
		switch v {
		case verdictSuccess:
			cb.successes++
			if cb.successes >= cb.halfOpenMax {
				return cb.enter(CircuitClosed, now)
			}
		case verdictFailure:
			return cb.enter(CircuitOpen, now)
		case verdictExcluded:
			cb.probes-- // the probe told nothing: let another one through
		}
	}
	return ch
}

// readyToTrip decides, after a failure while closed, whether the circuit opens.
func (cb *circuit) readyToTrip(now int64) bool {
	if cb.failures >= cb.threshold {
		return true
	}
	if cb.ratio <= 0 {
		return false
	}
	calls, failed := cb.window.sum(now)
	return calls >= cb.minCalls && float64(failed) >= cb.ratio*float64(calls)
}

// read returns the state now, moving an open circuit whose break is over to half-open.
func (cb *circuit) read() (CircuitState, change) {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	ch := cb.advance(cb.now())
	return CircuitState(cb.state.Load()), ch
}

// info returns the state now, the time until the next probe and the consecutive failures.
func (cb *circuit) info() (CircuitInfo, change) {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	now := cb.now()
	ch := cb.advance(now)
	info := CircuitInfo{State: CircuitState(cb.state.Load()), ConsecutiveFailures: cb.failures}
	if info.State == CircuitOpen {
		info.NextProbeIn = time.Duration(cb.until.Load() - now)
	}
	return info, ch
}

// isolate holds the circuit open until reset.
func (cb *circuit) isolate() change {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	return cb.enter(CircuitIsolated, cb.now())
}

// reset closes the circuit with fresh counts, whatever its state.
func (cb *circuit) reset() change {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	now := cb.now()
	ch := cb.enter(CircuitClosed, now)
	if !ch.ok {
		cb.generation++ // even a closed circuit forgets the calls in flight and its counts
		cb.failures = 0
		cb.window.clear()
	}
	return ch
}

// advance makes the transition that time alone makes: an open circuit whose break is over
// becomes half-open. Callers hold mu.
func (cb *circuit) advance(now int64) change {
	if CircuitState(cb.state.Load()) == CircuitOpen && now >= cb.until.Load() {
		return cb.enter(CircuitHalfOpen, now)
	}
	return change{}
}

// enter moves to state s and starts a new generation with fresh counts. Callers hold mu.
func (cb *circuit) enter(s CircuitState, now int64) change {
	from := CircuitState(cb.state.Load())
	if from == s {
		return change{}
	}
	cb.generation++
	cb.failures, cb.probes, cb.successes = 0, 0, 0
	cb.window.clear()
	if s == CircuitOpen {
		cb.until.Store(now + int64(cb.openFor))
	} else {
		cb.until.Store(0)
	}
	cb.state.Store(int32(s))
	return change{from: from, to: s, ok: true}
}

// ratioWindow counts calls and failures over a sliding window of ten buckets, for ratio mode.
type ratioWindow struct {
	bucket  int64 // bucket length in nanoseconds; 0 when ratio mode is off
	buckets [10]struct {
		index         int64 // which bucket period the counts belong to
		calls, failed int
	}
}

func (w *ratioWindow) init(span time.Duration) {
	w.bucket = max(int64(span)/int64(len(w.buckets)), 1)
}

func (w *ratioWindow) add(now int64, failed bool) {
	if w.bucket == 0 {
		return
	}
	i := now / w.bucket
	b := &w.buckets[i%int64(len(w.buckets))]
	if b.index != i {
		b.index, b.calls, b.failed = i, 0, 0
	}
	b.calls++
	if failed {
		b.failed++
	}
}

func (w *ratioWindow) sum(now int64) (calls, failed int) {
	i := now / max(w.bucket, 1)
	for _, b := range w.buckets {
		if b.index > i-int64(len(w.buckets)) && b.index <= i {
			calls += b.calls
			failed += b.failed
		}
	}
	return calls, failed
}

func (w *ratioWindow) clear() {
	for i := range w.buckets {
		w.buckets[i].calls, w.buckets[i].failed = 0, 0
	}
}
