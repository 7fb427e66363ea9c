package client

import (
	"context"
	"errors"
	"io"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"

	"github.com/steadyllm/steady/resilience"
)

// Hedging: a call without first content after a delay is sent again, unchanged, to the next
// route that can serve it at once; the first try to deliver content serves the call and the
// others are cancelled (see resilience.Options.HedgeAfterSeconds).

// errHedgeLost is the cause with which a hedged try that lost is cancelled. The pipeline reads
// a cancelled context as the caller's doing, so a loser never counts against its circuit.
var errHedgeLost = errors.New("client: another try of the hedged call delivered first")

// WithHedge hedges this call after delay: a try without first content by then is sent again
// to the next route that can serve it at once, up to max hedges (1 to 3), whatever the
// policy says — also for a call that sends extra body fields, which the client otherwise never
// hedges (they may turn on tools that act on the world on the provider's side). delay must be
// above 0 and at most 600 s.
func WithHedge(delay time.Duration, max int) CallOption {
	return func(o *callOptions) {
		o.hedge = &resilience.Hedge{After: delay, Max: max}
	}
}

// WithoutHedge never hedges this call, whatever the policy says: for a call that acts on the
// world when the provider runs it (a server-side tool, a connector), which must not run twice.
func WithoutHedge() CallOption {
	return withoutHedge
}

// withoutHedge is WithoutHedge's option: made once, as the hedging it sets (none), which no
// one changes.
var (
	noHedge      resilience.Hedge
	withoutHedge CallOption = func(o *callOptions) { o.hedge = &noHedge }
)

// HedgeTracker is a CallTracker that also hears of the hedges the retry budget refused
// (*observe.Telemetry's trackers are).
type HedgeTracker interface {
	HedgeRefused(provider string)
}

// hedgeOf is the hedging of a call with options o on deployment d: the call's own (WithHedge,
// WithoutHedge), else its policy's — except for a call that sends extra body fields, which may
// act on the world and is hedged only when the caller says so, and a stream in buffer mode.
func (w *walk) hedgeOf(d *deployment) resilience.Hedge {
	o := w.op.o
	if !w.op.hedgeable {
		return resilience.Hedge{}
	}
	if o != nil && o.hedge != nil {
		return *o.hedge
	}
	if o != nil && o.fields != nil {
		return resilience.Hedge{}
	}
	pol := w.op.pl.policyFor(d, o)
	if pol == nil {
		pol = d.pipeline.Policy()
	}
	if w.op.stream && (o != nil && o.rescue == resilience.RescueBuffer || (o == nil || o.rescue == "") && pol.Rescue() == resilience.RescueBuffer) {
		// A buffered stream delivers nothing before its whole answer: its "first content"
		// would be its last, and a hedge would race an answer that is well under way.
		return resilience.Hedge{}
	}
	return pol.Hedge()
}

// raced is how one try of a hedged call ended.
type raced struct {
	resp any
	info *resilience.CallInfo
	err  error
	n    int // the index of its route
}

// race is a hedged try: the tries out on their routes, and what the walk waits for. It holds
// no pointer to the walk, which its goroutines must not keep from staying where it was made.
//
// A race that never sends a hedge costs no allocation: it comes from its client's pool (see
// raceOf) with its channels, its room for the tries, its timer and the functions its timer
// and its first try's goroutine run, all made once, and goes back there when it ends — or,
// for a stream, when the stream is closed. Its first try runs under a context of the race's
// own (tryContext), reused until a race cancels it; when the caller's context can be
// cancelled, the race passes its end on (see watchCaller). A race that sent a hedge is not
// reused: a try that lost may still be out.
type race struct {
	ctx context.Context // the walk's
	c   *Client
	op  operation // the call's operation, read by the tries' goroutines: a copy, so that the
	// operation of a call that is not hedged stays where its caller made it
	h       resilience.Hedge
	source  *resilience.Pipeline // the first try's route: its hedge delay and retry budget
	first   attempt
	results chan raced
	fire    chan struct{}
	timer   resilience.Timer
	routes  []attempt
	pending int

	// due is when the hedge armed last falls due: a fire read before it is a stale one, of
	// a timer stopped too late in an earlier use of the race, and is ignored.
	due time.Time
	// room holds the tries (routes), at most the first and maxHedges hedges.
	room [maxHedges + 1]attempt
	// fired is the timer's function; runFirst runs the first try (firstTry, under firstCtx)
	// on a goroutine of its own; release ends the race of a stream that won alone once the
	// stream is closed; watch passes the caller's end on to a stream's first try (watchCaller).
	fired, runFirst, release, watch func()
	firstTry                        try
	firstCtx                        context.Context
	// own is the race's context for its first try, made on first need; uses counts the calls
	// the race served, which bounds what a transport that leaves a context derived from own
	// uncancelled can pile up in it (put drops the race after maxRaceUses calls).
	own  *tryContext
	uses int
	// callerDone is the Done channel of the walk's context, nil when it cannot be cancelled;
	// watching says a watch runs, which put stops (unwatch) and waits for (unwatched).
	callerDone         <-chan struct{}
	watching           bool
	unwatch, unwatched chan struct{}
}

// maxHedges is the most hedges one call may send (resilience.Options.MaxHedges, WithHedge).
const maxHedges = 3

// maxRaceUses is how many races one pooled race serves before it is dropped.
const maxRaceUses = 64

// newRace makes a race of client c, for its pool.
func newRace(c *Client) *race {
	r := &race{c: c, results: make(chan raced, maxHedges+1), fire: make(chan struct{}, 1),
		unwatch: make(chan struct{}, 1), unwatched: make(chan struct{}, 1)}
	r.fired = func() {
		select {
		case r.fire <- struct{}{}:
		default: // a fire is already waiting: the walk reads it when it falls due
		}
	}
	r.runFirst = func() {
		resp, info, err := r.op.try(r.firstCtx, r.firstTry)
		r.results <- raced{resp: resp, info: info, err: err, n: 0}
	}
	r.release = r.put
	r.watch = func() {
		t := r.own
		select {
		case <-r.callerDone:
			t.end(r.ctx)
		case <-t.ctx.Done(): // the race cancelled the try itself
		case <-r.unwatch:
		}
		r.unwatched <- struct{}{}
	}
	return r
}

// raceOf returns a race of client c from its pool.
func (c *Client) raceOf() *race {
	if r, ok := c.races.Get().(*race); ok {
		return r
	}
	return newRace(c)
}

// put ends race r and, when it can be reused, returns it to its client's pool: when it sent
// no hedge and its one try ended. A race that sent a hedge is left to the collector untouched:
// a try that lost may still be out, reading it.
func (r *race) put() {
	if len(r.routes) != 1 || r.pending != 0 {
		return
	}
	if r.watching {
		// The watch must be over before the race serves another call: its own context and
		// the caller's are the next call's then.
		r.unwatch <- struct{}{}
		<-r.unwatched
		select {
		case <-r.unwatch: // the watch had ended on the caller's end: the stop was not read
		default:
		}
		r.watching = false
	}
	r.ctx, r.callerDone, r.op, r.first, r.firstTry, r.firstCtx, r.source = nil, nil, operation{}, attempt{}, try{}, nil, nil
	clear(r.room[:])
	r.routes = nil
	if r.own != nil {
		r.own.serve(nil)
		if r.own.ctx.Err() != nil {
			r.own = nil // cancelled: the next race makes another
		}
	}
	r.uses++
	if r.uses < maxRaceUses {
		r.c.races.Put(r)
	}
}

// tryContext is the context of the first try of a hedged call: a context.WithCancelCause,
// which the race makes once and reuses for as long as no race cancelled it, so that arming a
// hedge allocates no context. It is made over a base that is never cancelled and has the
// values (and deadline) of the caller's context of the call it serves (parent); the race
// passes the caller's end on (end, watchCaller).
type tryContext struct {
	ctx    context.Context // a tryView of inner
	inner  context.Context
	cancel context.CancelCauseFunc
	mu     sync.Mutex
	parent context.Context // nil between calls
	ended  error           // the caller's Err, when its end cancelled ctx
}

// end cancels t for the end of the caller's context caller, with its cause.
func (t *tryContext) end(caller context.Context) {
	t.mu.Lock()
	t.ended = caller.Err()
	t.mu.Unlock()
	t.cancel(context.Cause(caller))
}

// tryView is what a first try sees of its tryContext: its cancel context, whose Err is the
// caller's when the caller's end cancelled it, as on a context derived from the caller's, so
// that a caller's deadline reads as context.DeadlineExceeded, not context.Canceled. (The
// contexts a transport derives from it get its cause, which net/http reports.)
type tryView struct {
	context.Context
	t *tryContext
}

func (v tryView) Err() error {
	err := v.Context.Err()
	if err != nil {
		v.t.mu.Lock()
		defer v.t.mu.Unlock()
		if v.t.ended != nil {
			return v.t.ended
		}
	}
	return err
}

// tryBase is what a tryContext's context is made over.
type tryBase struct{ t *tryContext }

func (b tryBase) caller() context.Context {
	b.t.mu.Lock()
	defer b.t.mu.Unlock()
	return b.t.parent
}

func (b tryBase) Deadline() (time.Time, bool) {
	if p := b.caller(); p != nil {
		return p.Deadline()
	}
	return time.Time{}, false
}
func (tryBase) Done() <-chan struct{} { return nil }
func (tryBase) Err() error            { return nil }
func (b tryBase) Value(key any) any {
	if p := b.caller(); p != nil {
		return p.Value(key)
	}
	return nil
}

// serve makes t serve the call whose context is parent (nil: none).
func (t *tryContext) serve(parent context.Context) {
	t.mu.Lock()
	t.parent = parent
	t.mu.Unlock()
}

// firstContext returns the context of the first try, under the walk's context ctx, and what
// cancels it: the race's own (see tryContext), made on first need.
func (r *race) firstContext(ctx context.Context) (context.Context, context.CancelCauseFunc) {
	r.callerDone = ctx.Done()
	if r.own == nil {
		t := &tryContext{}
		t.inner, t.cancel = context.WithCancelCause(tryBase{t})
		t.ctx = tryView{t.inner, t}
		r.own = t
	}
	r.own.serve(ctx)
	return r.own.ctx, r.own.cancel
}

// watchCaller passes the end of the caller's context on to the first try, whose context (the
// race's own) does not derive from it, for as long as the try's stream is read after the walk
// returned: on a goroutine of its own (made with the race: no closure to allocate), which
// ends when the caller's context does, cancelling the try with its cause (so that the
// transport fails with context.DeadlineExceeded when the caller's deadline passed), when the
// race cancels the try, or when put stops it. While the walk waits for its tries, it passes
// the caller's end on itself (hedged).
func (r *race) watchCaller() {
	if r.callerDone != nil && !r.watching {
		r.watching = true
		go r.watch()
	}
}

// hedged makes the try t of route first under hedging h: after h's delay without first
// content it sends the call to the next route that may serve it and is ready (walk.nextReady;
// at most h.Max times, each a delay after the last, each spending first's retry budget), and
// returns the first try that succeeds, with its route; the others are cancelled. A try that
// fails while another is out is recorded as the walk's failure there; the failure it returns,
// when every try failed, is the last and is not recorded yet (the walk records it, as an
// unhedged try's).
func (w *walk) hedged(h resilience.Hedge, first attempt, t try) (any, *resilience.CallInfo, error, attempt) {
	r := w.c.raceOf()
	r.ctx, r.op, r.h, r.source, r.first = w.ctx, w.op, h, first.d.pipeline.Route(first.key), first
	r.routes, r.pending = r.room[:0], 0
	r.launch(first, t)
	r.arm()
	held := false // a stream that won holds the race until it is closed
	done := r.callerDone
	defer func() {
		r.timer.Stop()
		r.tally(w)
		if !held {
			r.put()
		}
	}()
	for {
		select {
		case <-r.fire:
			if wait := r.due.Sub(r.c.now()); wait > 0 {
				// A fire of an earlier use of the race, whose timer was stopped too late (or
				// a timer a hair early): the hedge is due later.
				r.timer.Reset(wait)
				continue
			}
			r.hedge(w)
		case <-done:
			// The caller's end (its cancellation, its deadline) ends the first try, whose
			// context does not derive from the caller's; the tries still end through results.
			done = nil
			r.own.end(w.ctx)
		case res := <-r.results:
			if at, over := r.ended(w, res, &held); over {
				return res.resp, res.info, res.err, at
			}
		}
	}
}

// launch sends try t on route a, on a goroutine of its own under a context the race cancels.
func (r *race) launch(a attempt, t try) {
	var ctx context.Context
	if a.hedge {
		ctx, a.cancel = context.WithCancelCause(r.ctx)
		wrote := new(atomic.Bool)
		a.wrote = wrote
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(i httptrace.WroteRequestInfo) {
			if i.Err == nil {
				wrote.Store(true)
			}
		}})
	} else {
		ctx, a.cancel = r.firstContext(r.ctx)
	}
	a.start = r.c.now()
	for i := range r.routes {
		if p := &r.routes[i]; !p.done && p.raced == 0 {
			p.raced = max(a.start.Sub(p.start), 1) // raced from now on
		}
	}
	n := len(r.routes)
	r.routes = append(r.routes, a)
	r.pending++
	if n == 0 {
		r.firstCtx, r.firstTry = ctx, t
		go r.runFirst() // made with the race: no closure to allocate
		return
	}
	go func() {
		resp, info, err := r.op.try(ctx, t)
		r.results <- raced{resp: resp, info: info, err: err, n: n}
	}()
}

// arm sets the timer of the next hedge, a hedge delay from now: the race's own timer, made
// once and reset for each hedge of each call it serves.
func (r *race) arm() {
	d := r.h.Delay(r.source)
	r.due = r.c.now().Add(d)
	if r.timer == nil {
		r.timer = r.c.afterFunc(d, r.fired)
		return
	}
	r.timer.Reset(d)
}

// hedge sends the next hedge of walk w, when the call may still send one and a route can take
// it now: there, it never waits (MaxWait -1), so that it does not queue ahead of the route's
// own calls.
func (r *race) hedge(w *walk) {
	if len(r.routes) > r.h.Max || w.ctx.Err() != nil {
		return // no hedge once the call's deadline (or the caller) ended it
	}
	next, ok := w.nextReady()
	switch {
	case !ok:
		return // nowhere to hedge to: the tries out go on alone
	case !r.source.TryHedge():
		w.acct.HedgesRefused++
		if ht, ok := w.op.tr.(HedgeTracker); ok {
			ht.HedgeRefused(r.first.e.name)
		}
		return
	}
	w.markTried(next.d)
	r.launch(attempt{route: next, hedge: true}, try{route: next, maxWait: -1, elsewhere: true})
	if len(r.routes) <= r.h.Max {
		r.arm()
	}
}

// tally counts, once the race is over (every try ended or cancelled), the hedges it sent:
// those whose request went out (Accounting.Hedges, DeploymentInfo.Hedges) apart from those
// cancelled before it did (HedgesUnsent): a hedge launched as the race ended often never
// reaches its server. A hedge counts as sent once net/http wrote its request
// (httptrace), or when it ended with an answer or after an attempt the pipeline made (over a
// transport that reports no trace, a hedge cancelled while out counts as unsent).
func (r *race) tally(w *walk) {
	for i := range r.routes {
		a := &r.routes[i]
		if !a.hedge {
			continue
		}
		if a.wrote.Load() {
			w.acct.Hedges++
			a.d.hedges.Add(1)
		} else {
			w.acct.HedgesUnsent++
			a.d.hedgesUnsent.Add(1)
		}
	}
}

// ended takes in how one try of walk w ended (res) and reports whether the race is over, with
// the attempt it ended on: the first success (the others cancelled), or the last failure, or a
// failure every other try would meet too (the request's own fault, or the caller gave up). A
// failure while another try is out is the walk's failure there; the race goes on.
func (r *race) ended(w *walk, res raced, held *bool) (attempt, bool) {
	r.pending--
	r.routes[res.n].done = true
	if w := r.routes[res.n].wrote; w != nil && (res.err == nil || res.info != nil && res.info.Attempts > 0) {
		w.Store(true)
	}
	a := r.routes[res.n]
	if res.err == nil {
		w.acct.HedgeWon = a.hedge
		if a.hedge {
			a.d.hedgesWon.Add(1)
		}
		cancelLosers(w, r.routes, res.n, r.pending, r.results)
		k, stream := res.resp.(interface{ hold(func()) })
		switch {
		case len(r.routes) == 1 && stream:
			// The stream reads under the first try's context: the race keeps it until the
			// stream is closed (release).
			k.hold(r.release)
			*held = true
			r.watchCaller()
		case r.alone():
			// The race's own context, not cancelled, serves the next race.
		case stream:
			k.hold(func() { a.cancel(nil) }) // the stream's reads go on under its context
			if res.n == 0 {
				r.watchCaller() // ends with the first try's context, cancelled at the close
			}
		default:
			a.cancel(nil)
		}
		return a, true
	}
	if r.pending == 0 {
		if !r.alone() {
			a.cancel(nil)
		}
		return a, true
	}
	if !classify(w.ctx, a.d.name, res.err, res.info).Kind.FallsBack() {
		a.cancel(nil)
		cancelLosers(w, r.routes, -1, r.pending, r.results)
		return a, true
	}
	perr, took, spent := w.lost(&r.routes[res.n], res.resp, res.info, res.err)
	w.report(&r.routes[res.n], took, res.info, perr, spent, "")
	a.cancel(nil)
	return a, false
}

// alone reports whether the race sent no hedge: its first try's context, the race's own, is
// not cancelled and serves the next race (put).
func (r *race) alone() bool { return len(r.routes) == 1 }

// cancelLosers cancels every try of routes still out but the one that won (-1: none won),
// reports each as lost, records on its route the time it had waited (a lower bound of its time
// to first content: a hedge that wins often still teaches the route its tail), and takes in
// the pending ends, closing a try that succeeded meanwhile: on a goroutine, unless a hedge
// among them had not yet sent its request — then here, once the cancellation has ended it, so
// that race.tally knows whether it reached the wire (a try ends soon after its context is
// cancelled).
func cancelLosers(w *walk, routes []attempt, won, pending int, results <-chan raced) {
	now := w.c.now()
	wait := false
	for i := range routes {
		r := &routes[i]
		if i == won || r.done {
			continue
		}
		r.cancel(errHedgeLost)
		wait = wait || r.wrote != nil && !r.wrote.Load()
		waited := now.Sub(r.start)
		r.d.pipeline.Route(r.key).ObserveLatency(resilience.LatencySample{FirstContent: waited, Stream: w.op.stream, Censored: true,
			Raced: r.raced})
		if tr := w.op.tr; tr != nil {
			res := tryResult(r.e, r.d, r.model, waited, nil, nil)
			res.Hedge, res.Lost = r.hedge, true
			tr.TryDone(res)
		}
	}
	if pending == 0 {
		return
	}
	drain := func() {
		for range pending {
			if res := <-results; res.err == nil {
				if c, ok := res.resp.(io.Closer); ok {
					_ = c.Close()
				}
			}
		}
	}
	if wait {
		drain()
	} else {
		go drain()
	}
}

// afterFunc runs f after d on the client's clock (WithClock), the wall clock by default.
func (c *Client) afterFunc(d time.Duration, f func()) resilience.Timer {
	if c.clock != nil {
		return c.clock.AfterFunc(d, f)
	}
	return time.AfterFunc(d, f)
}
