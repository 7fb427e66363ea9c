package resilience

import (
	"math"
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
//
// Breaks grow while the provider stays down and start short again once it has been well for a
// while (see nextBreak, in breaks.go): their state is here too, under mu.
type circuit struct {
	clock   Clock
	wall    bool // clock is the wall clock
	epoch   time.Time
	openFor time.Duration // the longest break (CircuitBreakerDurationSeconds)
	minFor  time.Duration // the first break (CircuitBreakerMinDurationSeconds, resolved)

	threshold   int     // consecutive failures that open the circuit
	ratio       float64 // 0: consecutive mode only
	minCalls    int     // ratio mode: calls needed in the window
	halfOpenMax int     // probes let through, and successes needed to close
	// window counts the calls of ratio mode; nil (and its methods do nothing) when it is off,
	// as it is for most pipelines.
	window *ratioWindow

	mu sync.Mutex
	// sg packs the state (low 3 bits) and the generation (the rest), so that one atomic load
	// reads both consistently: admission of a closed circuit and the report of a success
	// that changes nothing need no lock. sg, until and failures are only written under mu,
	// together with the fields below.
	sg        atomic.Uint64
	until     atomic.Int64 // open: when probes may start (since epoch); 0 otherwise
	opened    atomic.Int64 // when the latest opening began (since epoch); MinInt64 before any
	failures  atomic.Int64 // closed: consecutive failures
	probes    int          // half-open: probes admitted and not excluded
	successes int          // half-open: successful probes

	// The breaks' escalation (see nextBreak): the latest break's length (0 before any and
	// after Reset), when the outage it belongs to began, and when the circuit last closed
	// after a break.
	brk, outage, healthy int64

	// opens, when set (WithActiveProbe), is told the break of each opening, under mu: it only
	// arms a timer. A break made longer later is found when the timer fires.
	opens func(time.Duration)
}

const stateBits = 3

// load returns the state and the generation.
func (cb *circuit) load() (CircuitState, uint64) {
	v := cb.sg.Load()
	return CircuitState(v & (1<<stateBits - 1)), v >> stateBits
}

// st returns the state.
func (cb *circuit) st() CircuitState {
	return CircuitState(cb.sg.Load() & (1<<stateBits - 1))
}

// ticket is what admission gives a call, to hand back with its outcome.
type ticket struct {
	generation uint64
	probe      bool // admitted as a half-open probe
}

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
	brk      time.Duration // to open: the break it opened for
}

// rejection says why admission turned a call away.
type rejection struct {
	state      CircuitState
	retryAfter time.Duration
}

func newCircuit(o Options, c Clock) *circuit {
	_, wall := c.(wallClock)
	cb := &circuit{
		clock:       c,
		wall:        wall,
		epoch:       c.Now(),
		openFor:     seconds(o.CircuitBreakerDurationSeconds),
		minFor:      minBreak(o),
		threshold:   o.CircuitBreakerThreshold,
		ratio:       o.CircuitBreakerFailureRatio,
		minCalls:    o.CircuitBreakerMinThroughput,
		halfOpenMax: o.CircuitBreakerHalfOpenMaxRequests,
	}
	if cb.ratio > 0 {
		cb.window = newRatioWindow(seconds(o.CircuitBreakerSamplingSeconds))
	}
	cb.opened.Store(math.MinInt64)
	return cb
}

// now is the clock's time as a duration since the circuit was built. The wall clock is read
// through the monotonic clock alone (time.Since), which costs half of time.Now.
func (cb *circuit) now() int64 {
	if cb.wall {
		return int64(time.Since(cb.epoch))
	}
	return int64(cb.clock.Now().Sub(cb.epoch))
}

// fastReject turns a call away without taking the lock when the circuit is isolated, or open
// with its break not yet over. Anything less certain returns ok false and is left to admit.
func (cb *circuit) fastReject() (rejection, bool) {
	switch cb.st() {
	case CircuitIsolated:
		return rejection{state: CircuitIsolated}, true
	case CircuitOpen:
		if left := cb.until.Load() - cb.now(); left > 0 {
			return rejection{state: CircuitOpen, retryAfter: time.Duration(left)}, true
		}
	}
	return rejection{}, false
}

// admit lets a call through, returning its ticket, or turns it away. A closed circuit admits
// without the lock or the clock.
func (cb *circuit) admit() (ticket, *rejection, change) {
	if s, gen := cb.load(); s == CircuitClosed {
		return ticket{generation: gen}, nil, change{}
	}
	cb.mu.Lock()
	defer cb.mu.Unlock()
	ch := cb.advance()
	s, gen := cb.load()
	switch s {
	case CircuitIsolated:
		return ticket{}, &rejection{state: CircuitIsolated}, ch
	case CircuitOpen:
		return ticket{}, &rejection{state: CircuitOpen, retryAfter: time.Duration(cb.until.Load() - cb.now())}, ch
	case CircuitHalfOpen:
		if cb.probes >= cb.halfOpenMax {
			return ticket{}, &rejection{state: CircuitHalfOpen}, ch
		}
		cb.probes++
		return ticket{generation: gen, probe: true}, nil, ch
	}
	return ticket{generation: gen}, nil, ch
}

// report records how an admitted call ended. A ticket from an ended generation is ignored.
// The common case, a success while closed with no failure to forget and no ratio window to
// count in, changes nothing and takes neither the lock nor the clock.
func (cb *circuit) report(t ticket, v verdict) change {
	if v == verdictSuccess && cb.ratio <= 0 && cb.failures.Load() == 0 {
		if s, gen := cb.load(); s == CircuitClosed && gen == t.generation {
			return change{}
		}
	}
	cb.mu.Lock()
	defer cb.mu.Unlock()
	ch := cb.advance()
	s, gen := cb.load()
	if t.generation != gen {
		return ch
	}
	switch s {
	case CircuitClosed:
		switch v {
		case verdictSuccess:
			cb.failures.Store(0)
			cb.window.add(cb, false)
		case verdictFailure:
			cb.failures.Add(1)
			cb.window.add(cb, true)
			if cb.readyToTrip() {
				return cb.enter(CircuitOpen)
			}
		}
	case CircuitHalfOpen:
		switch v {
		case verdictSuccess:
			cb.successes++
			if cb.successes >= cb.halfOpenMax {
				return cb.enter(CircuitClosed)
			}
		case verdictFailure:
			return cb.enter(CircuitOpen)
		case verdictExcluded:
			cb.probes-- // the probe told nothing: let another one through
		}
	}
	return ch
}

// readyToTrip decides, after a failure while closed, whether the circuit opens.
func (cb *circuit) readyToTrip() bool {
	if cb.failures.Load() >= int64(cb.threshold) {
		return true
	}
	if cb.ratio <= 0 {
		return false
	}
	calls, failed := cb.window.sum(cb.now())
	return calls >= cb.minCalls && float64(failed) >= cb.ratio*float64(calls)
}

// opening returns the current opening as advice for the other instances, zero when the
// circuit is no longer open.
func (cb *circuit) opening() Advice {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	if cb.st() != CircuitOpen {
		return Advice{}
	}
	return Advice{OpenedAt: cb.wallOf(cb.opened.Load()), OpenUntil: cb.wallOf(cb.until.Load())}
}

// read returns the state now, moving an open circuit whose break is over to half-open. Only
// an open circuit moves with time: any other state is read without the lock (routers read
// every deployment's on every call).
func (cb *circuit) read() (CircuitState, change) {
	if s := cb.st(); s != CircuitOpen {
		return s, change{}
	}
	cb.mu.Lock()
	defer cb.mu.Unlock()
	ch := cb.advance()
	return cb.st(), ch
}

// info returns the state now, the time until the next probe and the consecutive failures.
func (cb *circuit) info() (CircuitInfo, change) {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	ch := cb.advance()
	info := CircuitInfo{State: cb.st(), ConsecutiveFailures: int(cb.failures.Load())}
	if info.State == CircuitOpen {
		info.NextProbeIn = time.Duration(cb.until.Load() - cb.now())
	}
	return info, ch
}

// openAtLeast opens the circuit now for at least d, whatever its state but isolated: an open
// circuit's break is made longer if needed, any other state opens with the break it would have
// (see nextBreak), made d if that is longer. The longer break is the one a failed probe then
// doubles. Calls in flight belong to the ended generation and are ignored.
func (cb *circuit) openAtLeast(d time.Duration) change {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	ch := cb.advance()
	switch cb.st() {
	case CircuitIsolated:
		return ch
	case CircuitOpen:
	default:
		ch = cb.enter(CircuitOpen)
	}
	if until := cb.now() + int64(d); until > cb.until.Load() {
		cb.until.Store(until)
		cb.brk = until - cb.opened.Load() // the break that a failed probe doubles
		if ch.to == CircuitOpen {
			ch.brk = d
		}
	}
	return ch
}

// isolate holds the circuit open until reset.
func (cb *circuit) isolate() change {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	return cb.enter(CircuitIsolated)
}

// reset closes the circuit with fresh counts, whatever its state: the next opening has the
// first break again.
func (cb *circuit) reset() change {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	defer cb.forgetBreaks()
	ch := cb.enter(CircuitClosed)
	if !ch.ok {
		// Even a closed circuit forgets the calls in flight and its counts.
		_, gen := cb.load()
		cb.sg.Store((gen+1)<<stateBits | uint64(CircuitClosed))
		cb.failures.Store(0)
		cb.window.clear()
	}
	return ch
}

// advance makes the transition that time alone makes: an open circuit whose break is over
// becomes half-open. Only an open circuit reads the clock. Callers hold mu.
func (cb *circuit) advance() change {
	if cb.st() == CircuitOpen && cb.now() >= cb.until.Load() {
		return cb.enter(CircuitHalfOpen)
	}
	return change{}
}

// enter moves to state s and starts a new generation with fresh counts. Callers hold mu.
func (cb *circuit) enter(s CircuitState) change {
	from, gen := cb.load()
	if from == s {
		return change{}
	}
	cb.failures.Store(0)
	cb.probes, cb.successes = 0, 0
	cb.window.clear()
	var brk int64
	switch s {
	case CircuitOpen:
		now := cb.now()
		brk = cb.nextBreak(from, now)
		cb.opened.Store(now)
		cb.until.Store(now + brk)
		if cb.opens != nil {
			cb.opens(time.Duration(brk))
		}
	case CircuitClosed:
		cb.until.Store(0)
		if from != CircuitIsolated {
			cb.healthy = cb.now()
		}
	default:
		cb.until.Store(0)
	}
	cb.sg.Store((gen+1)<<stateBits | uint64(s))
	return change{from: from, to: s, ok: true, brk: time.Duration(brk)}
}

// ratioWindow counts calls and failures over a sliding window of ten buckets, for ratio mode.
// A nil window is ratio mode off: add and clear do nothing.
type ratioWindow struct {
	bucket  int64 // bucket length in nanoseconds
	buckets [10]struct {
		index         int64 // which bucket period the counts belong to
		calls, failed int
	}
}

func newRatioWindow(span time.Duration) *ratioWindow {
	w := &ratioWindow{}
	w.bucket = max(int64(span)/int64(len(w.buckets)), 1)
	return w
}

// add counts a call that ended now, on cb's clock (read only in ratio mode).
func (w *ratioWindow) add(cb *circuit, failed bool) {
	if w == nil {
		return
	}
	i := cb.now() / w.bucket
	b := &w.buckets[i%int64(len(w.buckets))]
	if b.index != i {
		b.index, b.calls, b.failed = i, 0, 0
	}
	b.calls++
	if failed {
		b.failed++
	}
}

// sum counts the calls and failures in the window at now; only ratio mode asks (w is set).
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
	if w == nil {
		return
	}
	for i := range w.buckets {
		w.buckets[i].calls, w.buckets[i].failed = 0, 0
	}
}
