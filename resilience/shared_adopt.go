package resilience

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// awaitProbe is how long after the end of a break an instance that did not see it yet still
// adopts it (and so waits for the fleet's probe) rather than ignoring it as history.
const awaitProbe = time.Minute

// storeRetry is how long a pipeline goes on without a store that failed before asking it
// again: calls meanwhile do not wait for it.
const storeRetry = time.Second

// errNotSharing is what a pipeline that stopped sharing (StopSharing) tells its layers when
// they ask the store: they go on alone, as with a store that cannot tell.
var errNotSharing = errors.New("resilience: the pipeline stopped sharing")

// sharing is a pipeline's link to its shared state: the name it shares under, fixed at its
// first use, and the advice it adopted last, so that each stored value is adopted once.
type sharing struct {
	store SharedState

	mu    sync.Mutex // guards scope and fixed
	scope string     // SetSharedScope
	fixed bool       // the name is being or has been settled: the scope no longer changes

	once    sync.Once
	settled atomic.Bool // name is set (and the store joined, or joining): the fast path of every use
	name    string      // the name the pipeline shares under
	// joinMu orders joining and leaving: joined is the store once Join has returned, leaving
	// says StopSharing came first, so a Join still under way leaves when it returns.
	joinMu    sync.Mutex
	joined    SharedStateJoiner
	leaving   bool
	left      atomic.Bool // StopSharing
	stopWatch func()      // unregisters the pipeline's watcher of the store's trouble; nil: none

	// The advice last adopted, as stored (UnixNano, 0 for none): a value that does not
	// change is not adopted again.
	lastCool, lastOpened, lastUntil, lastClosed atomic.Int64
	// coolSet is the end of the pause adopted from the advice (the cooldown's time line), 0
	// when none: a pause the store shortens later is shortened here only if it is still that.
	coolSet atomic.Int64
}

// initShared connects the layers to the shared state, once the pipeline is built.
func (p *Pipeline) initShared() {
	if p.shared == nil || p.name == "" {
		p.shared = nil
		return
	}
	ev := &p.ev
	sh := &sharing{store: p.shared}
	p.sh = sh
	p.cool.share = func(end time.Time) { p.advise(Advice{CoolUntil: end}) }
	p.breaker.share = p.advise
	if pe, ok := p.shared.(ProbeElection); ok {
		hold := seconds(p.opts.TimeoutSeconds)
		if hold <= 0 {
			hold = 30 * time.Second
		}
		p.breaker.elect, p.breaker.hold = scopedElection{pe, p}, max(hold, time.Second)
	}
	if sb, ok := p.shared.(SharedBudgets); ok {
		p.pace.fleet = &fleet{store: sb, ev: ev, p: p}
	}
	if w, ok := p.shared.(SharedStateWatcher); ok {
		sh.stopWatch = w.Watch(func(err error) { storeEvent(ev, err) })
	}
}

// SetSharedScope sets the scope the pipeline shares in: the identity of what it calls (a
// provider's base URL and key, hashed, see providers.SharingScope), so that pipelines of one
// name that call different things do not share by accident. The store decides what the
// scope does (SharedScoper); by default the pipeline shares under name+"@"+scope. It joins
// the store (SharedStateJoiner), reading the fleet's advice at once.
//
// The scope must be set before the pipeline's first call and first read of its circuit,
// which fix the name: SetSharedScope then reports false and changes nothing, as it does for a
// pipeline that shares nothing. An empty scope keeps the pipeline's name and joins the store.
func (p *Pipeline) SetSharedScope(scope string) bool { return p.setSharedScope(scope, true) }

// setSharedScope is SetSharedScope; wait says whether to wait for the store's join (a route
// made on a call's path does not).
func (p *Pipeline) setSharedScope(scope string, wait bool) bool {
	if p.shared == nil {
		return false
	}
	sh := p.sh
	sh.mu.Lock()
	if sh.fixed {
		sh.mu.Unlock()
		return false
	}
	sh.scope = scope
	sh.mu.Unlock()
	p.settle(wait) // the client's start: the fleet's view is read before the first call
	return true
}

// sharedScope returns the scope set with SetSharedScope, "" when none.
func (p *Pipeline) sharedScope() string {
	p.sh.mu.Lock()
	defer p.sh.mu.Unlock()
	return p.sh.scope
}

// SharedName returns the name the pipeline shares under ("" when it shares nothing), fixing
// it, and joining the store, if no call did yet.
func (p *Pipeline) SharedName() string {
	if p.shared == nil {
		return ""
	}
	p.settleShared()
	return p.sh.name
}

// StopSharing ends the pipeline's sharing, and its routes': it leaves the store (SharedStateJoiner), which then
// stops refreshing what it shared, and from now on neither adopts nor sends advice, nor asks
// the store for probes or budgets; it goes on with its own state. A closed client
// (client.Client.Close) stops the sharing of its pipelines. Calling it again does nothing.
func (p *Pipeline) StopSharing() {
	// The pipeline leaves before its routes are listed: a route made meanwhile either sees it
	// left (and shares nothing) or is listed (see child).
	if p.shared != nil && p.sh.left.CompareAndSwap(false, true) {
		p.leaveShared()
	}
	for _, r := range p.Routes() {
		r.StopSharing()
	}
}

// leaveShared is StopSharing's work on p itself, once.
func (p *Pipeline) leaveShared() {
	p.settleShared() // a pipeline that never joined does not join now
	sh := p.sh
	sh.joinMu.Lock()
	sh.leaving = true
	if sh.joined != nil {
		sh.joined.Leave(sh.name)
	}
	sh.joinMu.Unlock()
	if sh.stopWatch != nil {
		sh.stopWatch()
	}
	// A probe this instance holds is given back at once: the fleet must not wait out the
	// election's hold for an instance that is gone.
	if pe, ok := p.shared.(ProbeElection); ok && p.breaker.probing.CompareAndSwap(true, false) {
		pe.EndProbe(sh.name)
	}
}

// settleShared fixes the name the pipeline shares under and joins the store, once, in the
// background: a call or a read of the circuit never waits for the store here (the client
// joins at construction, through SetSharedScope, which waits). Callers that find it settled
// pay one atomic load.
func (p *Pipeline) settleShared() { p.settle(false) }

// settle is settleShared; wait makes it wait for the join (bounded by the store's timeout).
func (p *Pipeline) settle(wait bool) {
	sh := p.sh
	if sh.settled.Load() {
		return
	}
	sh.once.Do(func() {
		sh.mu.Lock()
		sh.fixed = true
		scope := sh.scope
		sh.mu.Unlock()
		name := p.name
		if scope != "" {
			if sc, ok := sh.store.(SharedScoper); ok {
				name = sc.ScopedName(p.name, scope)
			} else {
				name = p.name + "@" + scope
			}
			if name == "" {
				name = p.name
			}
		}
		sh.name = name
		if j, ok := sh.store.(SharedStateJoiner); ok && !sh.left.Load() {
			if wait {
				p.join(j, name)
			} else {
				go p.join(j, name)
			}
		}
		sh.settled.Store(true)
	})
}

// join joins the store under name (bounded by the store's own timeout; its watcher reports why
// it failed), and leaves again at once when StopSharing came meanwhile.
func (p *Pipeline) join(j SharedStateJoiner, name string) {
	_ = j.Join(context.Background(), name)
	sh := p.sh
	sh.joinMu.Lock()
	defer sh.joinMu.Unlock()
	if sh.leaving {
		j.Leave(name)
		return
	}
	sh.joined = j
}

// advise shares a with the other instances, under the pipeline's shared name.
func (p *Pipeline) advise(a Advice) {
	p.settleShared()
	if !p.sh.left.Load() {
		p.shared.Advise(p.sh.name, a)
	}
}

// adoptShared applies the shared advice about the pipeline before a call (ctx) or a read of
// its circuit (nil): a pause, an opening or a closing another instance reported holds here
// too, within the bounds SharedState describes. Values adopted before are skipped: a
// pipeline with shared state pays a map read and a few comparisons.
func (p *Pipeline) adoptShared(ctx context.Context) {
	sh := p.sh
	p.settleShared()
	if sh.left.Load() {
		return
	}
	a := p.shared.Advice(sh.name)
	cool, opened, until, closed := nanos(a.CoolUntil), nanos(a.OpenedAt), nanos(a.OpenUntil), nanos(a.ClosedAt)
	if cool == sh.lastCool.Load() && opened == sh.lastOpened.Load() && until == sh.lastUntil.Load() &&
		closed == sh.lastClosed.Load() {
		return
	}
	now := p.ev.now()
	n := now.UnixNano()
	if cool != sh.lastCool.Swap(cool) {
		p.adoptPause(ctx, n, cool)
	}
	// A closing from further ahead than any clock may be is garbage: it would close every
	// circuit that opens before it, at once.
	changed := closed != sh.lastClosed.Swap(closed)
	if closed > n+int64(SharedClockSkew) {
		closed = 0
	}
	c := p.breaker.c
	if changed && closed != 0 && c.st() != CircuitClosed {
		if ch := c.adoptClose(c.sinceEpoch(time.Unix(0, closed))); ch.ok {
			p.ev.emit(Event{Type: EventBreakerStateChanged, From: ch.from, To: ch.to, Reason: "shared", Context: ctx})
		}
	}
	prevOpened, prevUntil := sh.lastOpened.Swap(opened), sh.lastUntil.Swap(until)
	if until == 0 || (opened == prevOpened && until == prevUntil) {
		return
	}
	// An opening began at most SharedClockSkew from now and lasts at most this pipeline's
	// own break: a stored "open until the year 2200" holds one break.
	if opened <= 0 || opened > n+int64(SharedClockSkew) {
		opened = min(max(opened, n), n+int64(SharedClockSkew))
	}
	until = min(until, opened+int64(c.openFor))
	if opened < closed || n-until >= int64(awaitProbe) {
		return // a closing ended it, or it is history
	}
	// An opening whose break is over still holds until a probe closes it: this instance turns
	// half-open and takes part in the election. Reported without announce, which would share
	// the opening back.
	if ch := c.adopt(c.sinceEpoch(time.Unix(0, opened)), c.sinceEpoch(time.Unix(0, until))); ch.ok {
		p.ev.emit(Event{Type: EventBreakerStateChanged, From: ch.from, To: ch.to, Delay: ch.brk, Reason: "shared",
			Context: ctx})
	}
}

// adoptPause applies a pause the store reports to end at end (UnixNano, 0 for none) at now
// (n): at most the maximum pause from now, cut as a pause of the pipeline's own would be (one
// probe at its end). A pause adopted from the store before that the store now reports shorter,
// or gone, is shortened or ended, unless the pipeline paused longer on its own meanwhile.
func (p *Pipeline) adoptPause(ctx context.Context, n, end int64) {
	c, sh := &p.cool, p.sh
	cut := false
	if c.maxPause > 0 && end > n+int64(c.maxPause) {
		end, cut = n+int64(c.maxPause), true
	}
	if end <= n {
		end = 0
	}
	prev := sh.coolSet.Load()
	if end > 0 && c.set(end, cut, true) {
		sh.coolSet.Store(end)
		c.ev.emit(Event{Type: EventCooldownStarted, Delay: time.Duration(end - n), Reason: "shared", Context: ctx})
		return
	}
	if prev != 0 && end < prev && c.shorten(prev, end) {
		sh.coolSet.Store(end)
	}
}

// nanos returns t as UnixNano, 0 for the zero time and any time before 1970, and at most the
// year 2242 (UnixNano overflows after 2262): comparable, and safe to add a day to.
func nanos(t time.Time) int64 {
	const maxSec = 1 << 33
	switch s := t.Unix(); {
	case t.IsZero() || s <= 0:
		return 0
	case s >= maxSec:
		return maxSec * int64(time.Second)
	}
	return t.UnixNano()
}

// sinceEpoch converts a wall-clock time to the circuit's time line.
func (cb *circuit) sinceEpoch(t time.Time) int64 { return int64(t.Sub(cb.epoch)) }

// wallOf converts a time on the circuit's time line to a wall-clock time.
func (cb *circuit) wallOf(t int64) time.Time { return cb.epoch.Add(time.Duration(t)) }

// adopt applies an opening another instance reported, from opened until until (on the
// circuit's time line): an open circuit's break is made longer if needed; a closed or
// half-open circuit that has not been through this opening opens — until until, or, when
// that has passed already, until its next call, which becomes a probe; an isolated one is
// left alone. The adopted break becomes the one a failed probe here doubles (adoptBreak).
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
			cb.adoptBreak(opened, until)
		}
		return ch
	}
	if opened <= cb.opened.Load() {
		return ch // an opening this circuit went through already
	}
	ch = cb.enter(CircuitOpen)
	cb.until.Store(until)
	cb.opened.Store(opened)
	cb.adoptBreak(opened, until)
	ch.brk = max(time.Duration(until-cb.now()), 0)
	if cb.opens != nil {
		cb.opens(ch.brk) // maybe sooner than the break enter armed for
	}
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

// storeEvent reports a store's failure (err) or recovery (nil) through ev.
func storeEvent(ev *emitter, err error) {
	if err != nil {
		ev.emit(Event{Type: EventSharedStateFailed, Err: err})
	} else {
		ev.emit(Event{Type: EventSharedStateRecovered})
	}
}
