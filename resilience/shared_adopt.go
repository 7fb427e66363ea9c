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
	settled atomic.Bool // name is set (and the store joined): the fast path of every use
	name    string      // the name the pipeline shares under
	joined  SharedStateJoiner
	left    atomic.Bool // StopSharing
	relay   *relay      // the store's trouble, reported once per store (nil: per pipeline)

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
	sh, ev := &p.sh, &p.ev
	sh.store = p.shared
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
		sh.relay = joinRelay(w, ev)
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
func (p *Pipeline) SetSharedScope(scope string) bool {
	if p.shared == nil {
		return false
	}
	sh := &p.sh
	sh.mu.Lock()
	if sh.fixed {
		sh.mu.Unlock()
		return false
	}
	sh.scope = scope
	sh.mu.Unlock()
	p.settleShared()
	return true
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

// StopSharing ends the pipeline's sharing: it leaves the store (SharedStateJoiner), which then
// stops refreshing what it shared, and from now on neither adopts nor sends advice, nor asks
// the store for probes or budgets; it goes on with its own state. A closed client
// (client.Client.Close) stops the sharing of its pipelines. Calling it again does nothing.
func (p *Pipeline) StopSharing() {
	if p.shared == nil || !p.sh.left.CompareAndSwap(false, true) {
		return
	}
	p.settleShared() // a pipeline that never joined does not join now
	if p.sh.joined != nil {
		p.sh.joined.Leave(p.sh.name)
	}
	p.sh.relay.leave(&p.ev)
}

// settleShared fixes the name the pipeline shares under and joins the store, once. Callers
// that find it settled pay one atomic load.
func (p *Pipeline) settleShared() {
	sh := &p.sh
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
			_ = j.Join(context.Background(), name) // bounded by the store's timeout; its watcher reports why it failed
			sh.joined = j
		}
		sh.settled.Store(true)
	})
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
	sh := &p.sh
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
		p.ev.emit(Event{Type: EventBreakerStateChanged, From: ch.from, To: ch.to, Reason: "shared", Context: ctx})
	}
}

// adoptPause applies a pause the store reports to end at end (UnixNano, 0 for none) at now
// (n): at most the maximum pause from now, cut as a pause of the pipeline's own would be (one
// probe at its end). A pause adopted from the store before that the store now reports shorter,
// or gone, is shortened or ended, unless the pipeline paused longer on its own meanwhile.
func (p *Pipeline) adoptPause(ctx context.Context, n, end int64) {
	c, sh := &p.cool, &p.sh
	cut := false
	if c.maxPause > 0 && end > n+int64(c.maxPause) {
		end, cut = n+int64(c.maxPause), true
	}
	if end <= n {
		end = 0
	}
	prev := sh.coolSet.Load()
	if end > 0 && c.raise(end) {
		c.capped.Store(cut)
		c.probeAt.Store(0)
		sh.coolSet.Store(end)
		c.ev.emit(Event{Type: EventCooldownStarted, Delay: time.Duration(end - n), Reason: "shared", Context: ctx})
		return
	}
	if prev != 0 && end < prev && c.until.CompareAndSwap(prev, end) {
		sh.coolSet.Store(end)
		if end == 0 {
			c.capped.Store(false)
			c.probeAt.Store(0)
		}
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

// relay reports a store's trouble once per change of the store, through the first pipeline
// that shares through it and has not stopped (SharedStateWatcher).
type relay struct {
	w       SharedStateWatcher
	mu      sync.Mutex
	members []*emitter
}

// relays holds the relay of each comparable store that a sharing pipeline watches.
var relays = struct {
	sync.Mutex
	m map[SharedStateWatcher]*relay
}{m: map[SharedStateWatcher]*relay{}}

// joinRelay adds the pipeline of ev to the relay of w, registering the relay with w when it
// is the first; a store that cannot be a map key gets a watcher per pipeline (nil relay).
func joinRelay(w SharedStateWatcher, ev *emitter) (r *relay) {
	defer func() {
		if recover() != nil { // a store that is not comparable
			w.Watch(func(err error) { storeEvent(ev, err) })
			r = nil
		}
	}()
	relays.Lock()
	defer relays.Unlock()
	r = relays.m[w]
	if r == nil {
		r = &relay{w: w}
		relays.m[w] = r
		w.Watch(r.fire)
	}
	r.mu.Lock()
	r.members = append(r.members, ev)
	r.mu.Unlock()
	return r
}

// leave removes the pipeline of ev; the last to leave retires the relay (the store keeps a
// watcher that reports to no one).
func (r *relay) leave(ev *emitter) {
	if r == nil {
		return
	}
	relays.Lock()
	defer relays.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, m := range r.members {
		if m == ev {
			r.members = append(r.members[:i:i], r.members[i+1:]...)
			break
		}
	}
	if len(r.members) == 0 && relays.m[r.w] == r {
		delete(relays.m, r.w)
	}
}

func (r *relay) fire(err error) {
	r.mu.Lock()
	var ev *emitter
	if len(r.members) > 0 {
		ev = r.members[0]
	}
	r.mu.Unlock()
	if ev != nil {
		storeEvent(ev, err)
	}
}

// storeEvent reports a store's failure (err) or recovery (nil) through ev.
func storeEvent(ev *emitter, err error) {
	if err != nil {
		ev.emit(Event{Type: EventSharedStateFailed, Err: err})
	} else {
		ev.emit(Event{Type: EventSharedStateRecovered})
	}
}
