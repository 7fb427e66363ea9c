package resilience

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// SharedState shares what one instance of an application learns about a provider with its
// other instances: that the provider's circuit opened, until when, that the fleet's probe
// closed it again, and that a 429 paused it, until when. Each instance keeps its own
// pipeline; the shared state is advice it adopts — an instance that hears "open until T"
// opens its circuit until T without paying its own threshold of failed calls, one that hears
// "closed at C" closes a circuit that opened before C, and one that hears "paused until T"
// pauses too.
//
// Implementations (github.com/steadyllm/steady/state/redis) must never put I/O on a call's
// path: Advice reads a local copy, refreshed in the background, and Advise sends in the
// background. Times are wall-clock times, comparable between machines.
//
// A SharedState may also implement ProbeElection (one half-open probe for the fleet),
// SharedBudgets (one per-minute budget for the fleet) and SharedStateWatcher (events when
// the store is in trouble and when it recovers); a pipeline uses what it finds.
type SharedState interface {
	// Advise shares advice about the pipeline named name. It must not block.
	Advise(name string, a Advice)
	// Advice returns the latest advice about the pipeline named name that this instance
	// knows, zero when none. It must not block.
	Advice(name string) Advice
}

// Advice is what instances tell each other about a provider. A zero time means none.
//
// Stores merge advice so that it only ever grows: a pause or an opening is replaced by a
// longer one, and a closing by a later one. A closing ends the openings that began before it;
// an opening that began before the latest closing is stale and dropped (one that began at
// the same moment stands: the failures are at least as new as the probe).
type Advice struct {
	// OpenedAt and OpenUntil: the provider's circuit opened somewhere at OpenedAt; no calls
	// before OpenUntil.
	OpenedAt, OpenUntil time.Time
	// ClosedAt: the fleet's probe found the provider well again at this time.
	ClosedAt time.Time
	// CoolUntil: a 429 paused the provider somewhere; no calls before this time.
	CoolUntil time.Time
}

// Merge returns a combined with b by the rules above: the longer pause, the later closing,
// and the longer opening unless the closing ends it. Stores use it to keep their copies.
func (a Advice) Merge(b Advice) Advice {
	if b.CoolUntil.After(a.CoolUntil) {
		a.CoolUntil = b.CoolUntil
	}
	if b.ClosedAt.After(a.ClosedAt) {
		a.ClosedAt = b.ClosedAt
	}
	if b.OpenUntil.After(a.OpenUntil) {
		a.OpenedAt, a.OpenUntil = b.OpenedAt, b.OpenUntil
	}
	if !a.OpenUntil.IsZero() && a.OpenedAt.Before(a.ClosedAt) {
		a.OpenedAt, a.OpenUntil = time.Time{}, time.Time{}
	}
	return a
}

// ProbeElection is implemented by a SharedState that elects the one instance of the fleet
// that probes a provider whose break is over. A pipeline asks once per break, when its own
// circuit turns half-open and a call would become the probe; the other instances keep
// rejecting calls until the winner's outcome reaches them as advice (a closing or a new
// opening).
type ProbeElection interface {
	// ClaimProbe asks for the probe of the pipeline named name, held for at most hold. It
	// may block for the store's own short timeout. It reports mine when this instance holds
	// the probe; otherwise retry is how long the current holder may keep it. An error means
	// the store could not tell: the caller then probes on its own.
	ClaimProbe(ctx context.Context, name string, hold time.Duration) (mine bool, retry time.Duration, err error)
	// EndProbe gives the probe back once its outcome is known. It must not block.
	EndProbe(name string)
}

// SharedBudgets is implemented by a SharedState that keeps a pipeline's per-minute budgets
// (PaceRequestsPerMinute, PaceTokensPerMinute, or the limits learnt from headers) for the
// whole fleet, so that N instances together stay within one limit rather than N. A pipeline
// leases units in batches (about a second of the limit) and spends them locally, so a call
// meets the store only when its instance's lease runs dry, and the lease is refilled in the
// background before it does.
type SharedBudgets interface {
	// TakeBudget takes up to want units, at once, from the budget named key, which holds
	// perMinute units and refills them evenly over a minute, at time now. It returns the units
	// taken and, when fewer than want, how long until the rest will be there. It may block
	// for the store's own short timeout.
	TakeBudget(ctx context.Context, key string, perMinute, want int64, now time.Time) (got int64, wait time.Duration, err error)
	// FailClosed reports what a pipeline does while the store cannot be reached: false (the
	// default) lets calls go on under the instance's own budgets; true refuses them with a
	// *SharedStateError.
	FailClosed() bool
}

// SharedStateWatcher is implemented by a SharedState that reports its own trouble: Watch
// registers f, called with the error when the store stops answering and with nil when it
// answers again. The pipeline turns these into EventSharedStateFailed and
// EventSharedStateRecovered.
type SharedStateWatcher interface {
	Watch(f func(err error))
}

// ErrSharedStateUnavailable matches a *SharedStateError.
var ErrSharedStateUnavailable = errors.New("resilience: shared state unavailable")

// SharedStateError is returned, for a store that fails closed (SharedBudgets.FailClosed),
// when a call needs room in a fleet-wide budget and the store cannot be reached.
type SharedStateError struct {
	Pipeline string
	Budget   string // "requests" or "tokens"
	Err      error  // the store's error
}

func (e *SharedStateError) Error() string {
	return fmt.Sprintf("resilience: %q cannot reach the shared %s budget (%v): call not sent", e.Pipeline, e.Budget, e.Err)
}

// Unwrap returns the store's error.
func (e *SharedStateError) Unwrap() error { return e.Err }

// Is reports whether target is ErrSharedStateUnavailable.
func (e *SharedStateError) Is(target error) bool { return target == ErrSharedStateUnavailable }

// ErrorKind names the failure in the vocabulary of steady's error kinds: a rate limit, as
// the budget could not grant room (another provider may).
func (e *SharedStateError) ErrorKind() string { return "rate_limited" }

// RetryAfterHint is how long the pipeline waits before asking the store again.
func (e *SharedStateError) RetryAfterHint() time.Duration { return storeRetry }

// WithSharedState shares the pipeline's circuit openings and closings, rate-limit pauses
// and, when s implements SharedBudgets, per-minute budgets through s, under the pipeline's
// name (WithName), and adopts the others'. A pipeline without a name cannot share.
func WithSharedState(s SharedState) Option { return func(p *Pipeline) { p.shared = s } }

// awaitProbe is how long after the end of a break an instance that did not see it yet still
// adopts it (and so waits for the fleet's probe) rather than ignoring it as history.
const awaitProbe = time.Minute

// storeRetry is how long a pipeline goes on without a store that failed before asking it
// again: calls meanwhile do not wait for it.
const storeRetry = time.Second

// initShared connects the layers to the shared state, once the pipeline is built.
func (p *Pipeline) initShared() {
	if p.shared == nil || p.name == "" {
		p.shared = nil
		return
	}
	shared, name, ev := p.shared, p.name, &p.ev
	p.cool.share = func(end time.Time) { shared.Advise(name, Advice{CoolUntil: end}) }
	p.breaker.share = func(a Advice) { shared.Advise(name, a) }
	if pe, ok := shared.(ProbeElection); ok {
		hold := seconds(p.opts.TimeoutSeconds)
		if hold <= 0 {
			hold = 30 * time.Second
		}
		p.breaker.elect, p.breaker.hold = pe, max(hold, time.Second)
	}
	if sb, ok := shared.(SharedBudgets); ok {
		p.pace.fleet = &fleet{store: sb, ev: ev}
	}
	if w, ok := shared.(SharedStateWatcher); ok {
		w.Watch(func(err error) {
			if err != nil {
				ev.emit(Event{Type: EventSharedStateFailed, Err: err})
			} else {
				ev.emit(Event{Type: EventSharedStateRecovered})
			}
		})
	}
}

// adoptShared applies the shared advice about the pipeline before a call: a pause, an
// opening or a closing another instance reported holds here too. A pipeline without shared
// state pays a nil check; with it, a map read and a few comparisons.
func (p *Pipeline) adoptShared(ctx context.Context) {
	a := p.shared.Advice(p.name)
	if a == (Advice{}) {
		return
	}
	now := p.ev.now()
	if a.CoolUntil.After(now) {
		p.cool.adopt(ctx, a.CoolUntil)
	}
	c := p.breaker.c
	if !a.ClosedAt.IsZero() && c.st() != CircuitClosed {
		if ch := c.adoptClose(c.sinceEpoch(a.ClosedAt)); ch.ok {
			p.ev.emit(Event{Type: EventBreakerStateChanged, From: ch.from, To: ch.to, Reason: "shared", Context: ctx})
		}
	}
	if !a.OpenUntil.IsZero() && !a.OpenedAt.Before(a.ClosedAt) && now.Sub(a.OpenUntil) < awaitProbe {
		// An opening whose break is over still holds until a probe closes it: this instance
		// turns half-open and takes part in the election. Reported without announce, which
		// would share the opening back.
		if ch := c.adopt(c.sinceEpoch(a.OpenedAt), c.sinceEpoch(a.OpenUntil)); ch.ok {
			p.ev.emit(Event{Type: EventBreakerStateChanged, From: ch.from, To: ch.to, Reason: "shared", Context: ctx})
		}
	}
}

// adopt pauses the pipeline until end, as another instance reported, without reporting it
// back.
func (c *cooldown) adopt(ctx context.Context, end time.Time) {
	if c.raise(end.UnixNano()) {
		c.ev.emit(Event{Type: EventCooldownStarted, Delay: time.Until(end), Reason: "shared", Context: ctx})
	}
}

// sinceEpoch converts a wall-clock time to the circuit's time line.
func (cb *circuit) sinceEpoch(t time.Time) int64 { return int64(t.Sub(cb.epoch)) }

// wallOf converts a time on the circuit's time line to a wall-clock time.
func (cb *circuit) wallOf(t int64) time.Time { return cb.epoch.Add(time.Duration(t)) }

// adopt applies an opening another instance reported, from opened until until (on the
// circuit's time line): an open circuit's break is made longer if needed; a closed or
// half-open circuit that has not been through this opening opens — until until, or, when
// that has passed already, until its next call, which becomes a probe; an isolated one is
// left alone.
func (cb *circuit) adopt(opened, until int64) change {
	if opened <= cb.opened.Load() && until <= cb.until.Load() {
		return change{} // known already: no lock
	}
	cb.mu.Lock()
	defer cb.mu.Unlock()
	ch := cb.advance()
	switch cb.st() {
	case CircuitIsolated:
		return ch
	case CircuitOpen:
		if cb.until.Load() < until {
			cb.until.Store(until)
			cb.opened.Store(opened)
		}
		return ch
	}
	if opened <= cb.opened.Load() {
		return ch // an opening this circuit went through already
	}
	ch = cb.enter(CircuitOpen)
	cb.until.Store(until)
	cb.opened.Store(opened)
	return ch
}

// adoptClose closes an open or half-open circuit whose opening began before closed
// (on the circuit's time line): the fleet's probe found the provider well after it.
func (cb *circuit) adoptClose(closed int64) change {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	ch := cb.advance()
	if s := cb.st(); (s == CircuitOpen || s == CircuitHalfOpen) && cb.opened.Load() < closed {
		return cb.enter(CircuitClosed)
	}
	return ch
}

// giveBack returns the half-open probe slot of tk unused: the call was not sent.
func (cb *circuit) giveBack(tk ticket) {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	if s, gen := cb.load(); s == CircuitHalfOpen && gen == tk.generation && cb.probes > 0 {
		cb.probes--
	}
}

// elected decides whether a call admitted as a half-open probe (tk) may go, when the fleet
// elects its probes (ProbeElection): it may when this instance holds the probe, or when the
// store cannot tell; otherwise it gives the slot back and rejects the call, and asks the
// store again only after the holder's time (at most a second) has passed.
func (b *breaker) elected(req *http.Request, tk ticket) error {
	ctx := req.Context()
	if left := b.elsewhere.Load() - b.c.now(); left > 0 {
		b.c.giveBack(tk)
		return b.reject(req, rejection{state: CircuitHalfOpen, retryAfter: time.Duration(left)})
	}
	mine, retry, err := b.elect.ClaimProbe(ctx, b.ev.name, b.hold)
	switch {
	case err != nil:
		return nil // the store cannot tell (its watcher reports why): probe on our own
	case mine:
		b.probing.Store(true)
		return nil
	}
	retry = min(max(retry, time.Millisecond), storeRetry)
	b.elsewhere.Store(b.c.now() + int64(retry))
	b.c.giveBack(tk)
	return b.reject(req, rejection{state: CircuitHalfOpen, retryAfter: retry})
}

// fleet is a pipeline's share of fleet-wide per-minute budgets (SharedBudgets): one lease per
// budget.
type fleet struct {
	store    SharedBudgets
	ev       *emitter
	req, tok lease
}

// lease is the units of one fleet-wide budget an instance took from the store and has not
// spent yet. A call spends from it without I/O; when it runs low a background refill takes
// the next batch; a call that finds it empty waits for that refill.
type lease struct {
	mu      sync.Mutex
	have    int64
	next    time.Time     // the store said no room before this time
	downAt  time.Time     // the store failed at this time (zero: it answers)
	err     error         // its error
	filling chan struct{} // closed when the running refill ends; nil when none runs
}

// take debits n units of the budget named budget (limit units per minute) for a call made
// with ctx, waiting when the lease is empty and the wait fits limit().
func (f *fleet) take(ctx context.Context, l *lease, budget string, perMinute, n int64, limit func() time.Duration) error {
	batch := max(perMinute/60, 1) // about a second of the limit
	for {
		now := f.ev.clock.Now()
		l.mu.Lock()
		if l.have >= n {
			l.have -= n
			if l.have < (batch+1)/2 && l.filling == nil && !l.down(now) && !now.Before(l.next) {
				f.refill(l, budget, perMinute, batch)
			}
			l.mu.Unlock()
			return nil
		}
		if l.down(now) {
			err := l.err
			l.mu.Unlock()
			if f.store.FailClosed() {
				return &SharedStateError{Pipeline: f.ev.name, Budget: budget, Err: err}
			}
			return nil // fail open: the instance's own budget already admitted the call
		}
		if wait := l.next.Sub(now); wait > 0 {
			l.mu.Unlock()
			if wait > limit() {
				f.ev.emit(Event{Type: EventCooldownRejected, Delay: wait, Reason: "shared " + budget + " per minute", Context: ctx})
				return &CooldownError{Pipeline: f.ev.name, RetryAfter: wait, Budget: budget}
			}
			f.ev.emit(Event{Type: EventCooldownWaited, Delay: wait, Reason: "shared " + budget + " per minute", Context: ctx})
			if err := sleep(ctx, f.ev.clock, wait); err != nil {
				return err
			}
			continue
		}
		done := l.filling
		if done == nil {
			done = f.refill(l, budget, perMinute, max(batch, n-l.have))
		}
		l.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// down reports whether the store failed within the last storeRetry. Callers hold mu.
func (l *lease) down(now time.Time) bool {
	return !l.downAt.IsZero() && now.Sub(l.downAt) < storeRetry
}

// refill starts taking want units from the store in the background and returns a channel
// closed when it ends. Callers hold mu.
func (f *fleet) refill(l *lease, budget string, perMinute, want int64) chan struct{} {
	done := make(chan struct{})
	l.filling = done
	go func() {
		now := f.ev.clock.Now()
		got, wait, err := f.store.TakeBudget(context.Background(), f.ev.name+":"+budget, perMinute, want, now)
		l.mu.Lock()
		l.filling = nil
		l.have += got
		if err != nil {
			l.downAt, l.err = now, err
		} else {
			l.downAt, l.err = time.Time{}, nil
			l.next = time.Time{}
			if got < want && wait > 0 {
				l.next = now.Add(wait)
			}
		}
		l.mu.Unlock()
		close(done)
	}()
	return done
}

// debit takes n more units from the lease, which may go below zero: a call used more than
// its estimate, and the next calls wait for the difference.
func (l *lease) debit(n int64) {
	l.mu.Lock()
	l.have -= n
	l.mu.Unlock()
}

// probeFinished tells the fleet that this instance's probe ended with change ch: a closing
// is shared as such, and the probe is given back either way.
func (b *breaker) probeFinished(ch change) {
	if ch.from != CircuitHalfOpen || !b.probing.CompareAndSwap(true, false) {
		return
	}
	b.elect.EndProbe(b.ev.name)
}
