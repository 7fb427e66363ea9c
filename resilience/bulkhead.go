package resilience

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// bulkhead bounds the exchanges in flight. A call that finds a slot free takes it with one
// compare-and-swap on the count in flight, without a lock; only a call that must wait takes the
// mutex and joins the queue of its class (see Priority). A freed slot passes straight to the
// waiter chosen for it — never to a newcomer while calls wait, so nobody barges — chosen by
// class, first come first served within a class, with a minimum share for the lower classes
// (see pick). Batch calls may not hold more than the slots outside the reserve
// (PriorityReservePercent), so the higher classes always have the reserve, held or free; when
// the queue is full, a call of a higher class takes the place of the newest waiter of the
// lowest class, which is shed. The limit is BulkheadMaxConcurrency, or the adaptive limit
// (adaptive.go), which moves while calls run.
//
// The reserve is counted against the batch calls in flight, not against every call in flight:
// a reserve counted against all of them would be kept free while the higher classes already
// hold slots, idle between their arrivals, and would cost up to its share of the throughput
// however busy they are. Counted against the batch calls, it is the room the higher classes
// have whatever the batch calls do: a call of a higher class finds a free slot as long as its
// classes hold fewer slots than the reserve; once they hold more, the rest of the slots go to
// whoever waits, and such a call waits for the next slot that frees, which is its own first.
type bulkhead struct {
	ev  *emitter
	pol *Policy // the pipeline's, for the class of calls that name none
	// inflight is the number of slots taken, batch the number of them batch calls hold
	// (counted only while there is a reserve: reserve > 0); limit is the number of slots, and
	// open the number batch calls may hold (limit less the reserve). waiting is the number of
	// calls in the queues, changed under mu but read without it.
	inflight, batch, limit, open, waiting atomic.Int64
	maxQueue                              int64
	queueTimeout                          time.Duration
	reserve                               float64 // PriorityReservePercent
	credit                                float64 // what a waiting lower class earns per turn it misses (shareCredit)
	// adaptive moves the limit (AdaptiveConcurrency); nil for a fixed limit.
	adaptive *limiter

	mu     sync.Mutex
	queues [numClasses]waitList
	owed   [numClasses]float64 // the credit each waiting class has earned; a turn costs 1
	// freedAt is when a slot was last freed while calls waited (emitter time, UnixNano; 0 while
	// none wait), and every the moving average of the time between such frees, in ns: the pace
	// at which the queue moves, for the RetryAfter of the calls turned away.
	freedAt int64
	every   float64
}

func (b *bulkhead) init(o Options, pol *Policy, ev *emitter) {
	b.ev, b.pol = ev, pol
	b.maxQueue = int64(o.BulkheadMaxQueue)
	b.queueTimeout = seconds(o.BulkheadQueueTimeoutSeconds)
	b.reserve = o.PriorityReservePercent
	b.credit = shareCredit(o.PriorityMinSharePercent)
	limit := o.BulkheadMaxConcurrency
	if o.AdaptiveConcurrency {
		b.adaptive = newLimiter(o, b)
		limit = int(b.adaptive.current())
	}
	b.setLimit(int64(limit))
}

// setLimit makes the bulkhead n slots wide, and hands the slots a wider limit frees to the
// calls that wait. A narrower one takes no slot back: the calls in flight above it finish first.
func (b *bulkhead) setLimit(n int64) {
	b.limit.Store(n)
	b.open.Store(n - int64(float64(n)*b.reserve/100))
	if b.waiting.Load() > 0 {
		b.mu.Lock()
		b.dispatch()
		b.mu.Unlock()
	}
}

// finish releases a slot that is not counted among the batch calls' (see free); it makes
// *bulkhead a finisher for doneBody. When calls wait, the slot goes to the one pick chooses.
func (b *bulkhead) finish(error) {
	b.inflight.Add(-1)
	// A waiter joins the queue before its last look at the counts, and this looks at the queue
	// after freeing the slot, so one of the two always sees the other (atomics are sequentially
	// consistent in Go): no slot is left free while a call waits for it.
	if b.waiting.Load() > 0 {
		b.mu.Lock()
		b.noteFreed()
		b.dispatch()
		b.mu.Unlock()
	}
}

// batchSlot is a bulkhead seen as the finisher of a slot counted among the batch calls'.
type batchSlot bulkhead

func (s *batchSlot) finish(error) { (*bulkhead)(s).free(true) }

// free releases a slot; batch says it was counted among the batch calls' (acquire's answer).
func (b *bulkhead) free(batch bool) {
	if batch {
		b.batch.Add(-1) // before the slot itself, so a waiter that sees the slot free sees this too
	}
	b.finish(nil)
}

// finisher returns what frees a slot at a body's end; batch as for free.
func (b *bulkhead) finisher(batch bool) finisher {
	if batch {
		return (*batchSlot)(b)
	}
	return b
}

// counts reports whether a call of class cls holds a slot counted among the batch calls'.
func (b *bulkhead) counts(cls class) bool { return cls == classBatch && b.reserve > 0 }

// take takes a slot if fewer than below are taken.
func (b *bulkhead) take(below int64) bool { return takeBelow(&b.inflight, below) }

// takeBelow adds one to n if it is below below, and reports whether it did.
func takeBelow(n *atomic.Int64, below int64) bool {
	for {
		v := n.Load()
		if v >= below {
			return false
		}
		if n.CompareAndSwap(v, v+1) {
			return true
		}
	}
}

// takeAs takes a free slot for a call of class cls, if the reserve lets it: any free slot,
// but for a batch call only while the batch calls hold fewer than open. The batch count is
// taken first and given back if no slot is free, so the batch calls never hold more than open
// however many race for the last one; a call refused meanwhile by that passing count goes on
// to queue, whose look under the mutex comes after it.
func (b *bulkhead) takeAs(cls class) bool {
	if !b.counts(cls) {
		return b.take(b.limit.Load())
	}
	if !takeBelow(&b.batch, b.open.Load()) {
		return false
	}
	if b.take(b.limit.Load()) {
		return true
	}
	b.batch.Add(-1)
	return false
}

// release gives back the slot of a call that goes on: a retry through the adaptive limit
// (callState.requeue), which takes one again with reacquire, or hold when it cannot. batch is
// as for free.
func (b *bulkhead) release(batch bool) { b.free(batch) }

// hold takes a slot back whatever the limit and the reserve, for a call that released its own
// and could not get one again: the bulkhead layer frees a slot when that call ends, at once.
func (b *bulkhead) hold(batch bool) {
	if batch {
		b.batch.Add(1)
	}
	b.inflight.Add(1)
}

// reacquire is acquire for a call that held a slot and gave it back to retry (release): it
// waits first among the calls of its class, for it was admitted before them, and a full queue
// does not refuse it — it is no new load, and there are never more of them than slots.
func (b *bulkhead) reacquire(ctx context.Context) (bool, error) { return b.acquireAs(ctx, true) }

// acquire takes a slot, waiting in the queue if there is room. It reports whether the slot is
// counted among the batch calls' (to tell free, finisher, release and hold). It returns a
// *BulkheadRejectedError when the queue is full, the queue timeout passes or the call is shed
// for one of a higher class, and the context's error when the caller gives up first.
func (b *bulkhead) acquire(ctx context.Context) (bool, error) { return b.acquireAs(ctx, false) }

// acquireAs is acquire, or reacquire when again is set.
func (b *bulkhead) acquireAs(ctx context.Context, again bool) (bool, error) {
	cls := classUnknown
	if b.reserve > 0 {
		// The reserve counts the batch calls in flight: every call's class is needed, also
		// those that meet no pressure.
		cls = classOf(ctx, b.pol)
	}
	if b.waiting.Load() == 0 && b.takeAs(cls) {
		if b.ev.on(EventBulkheadAdmitted) {
			b.admitted(ctx, cls, 0)
		}
		return b.counts(cls), nil
	}
	if cls == classUnknown {
		cls = classOf(ctx, b.pol)
	}
	if err := b.queue(ctx, cls, again); err != nil {
		return false, err
	}
	return b.counts(cls), nil
}

// queue is acquire's slow path, for a call of class cls that found no free slot, or found
// calls waiting already; again for reacquire's.
func (b *bulkhead) queue(ctx context.Context, cls class, again bool) error {
	b.mu.Lock()
	b.dispatch() // the calls that wait come first, as far as their class allows
	if b.takeAs(cls) {
		b.mu.Unlock()
		if b.ev.on(EventBulkheadAdmitted) {
			b.admitted(ctx, cls, 0)
		}
		return nil
	}
	if w, set := maxWaitOf(ctx); set && w == 0 {
		retry := b.estimate(cls)
		b.mu.Unlock()
		return b.reject(ctx, cls, RejectedFull, 0, retry) // a call that never waits does not queue either
	}
	if !again && b.waiting.Load() >= b.maxQueue && !b.shedFor(cls) {
		retry := b.estimate(cls)
		b.mu.Unlock()
		return b.reject(ctx, cls, RejectedFull, 0, retry)
	}
	if err := ctx.Err(); err != nil {
		b.mu.Unlock()
		return err
	}
	w := &waiter{class: cls, ready: make(chan struct{}), since: b.ev.now().UnixNano()}
	if again {
		b.queues[cls].pushAgain(w)
	} else {
		b.queues[cls].push(w)
	}
	b.waiting.Add(1)
	b.dispatch() // a slot freed since the look above, by a finish that saw no waiter yet
	granted := w.granted
	b.mu.Unlock()
	if granted {
		if b.ev.on(EventBulkheadAdmitted) {
			b.admitted(ctx, cls, 0)
		}
		return nil
	}
	b.ev.emit(Event{Type: EventBulkheadQueued, Priority: cls.priority(), Limit: int(b.limit.Load()), Context: ctx})
	return b.wait(ctx, w)
}

// wait blocks until w is handed a slot or shed, the queue timeout passes or ctx ends.
func (b *bulkhead) wait(ctx context.Context, w *waiter) error {
	var expired chan struct{}
	if b.queueTimeout > 0 {
		expired = make(chan struct{})
		t := b.ev.clock.AfterFunc(b.queueTimeout, func() { close(expired) })
		defer t.Stop()
	}
	var why BulkheadRejection
	select {
	case <-w.ready:
	case <-ctx.Done():
	case <-expired:
		why = RejectedTimeout
	}
	b.mu.Lock()
	granted, shed, retry := w.granted, w.shed, w.retry
	if !granted && !shed {
		b.remove(w)
		if why == RejectedTimeout {
			retry = b.estimate(w.class)
		}
	}
	b.mu.Unlock()
	waited := time.Duration(b.ev.now().UnixNano() - w.since)
	switch {
	case granted:
		// Once handed a slot, the call has it, whatever else happened meanwhile: the layers
		// below see a cancelled context at once, and the slot is freed as after any failure.
		if b.ev.on(EventBulkheadAdmitted) {
			b.admitted(ctx, w.class, waited)
		}
		return nil
	case shed:
		return b.reject(ctx, w.class, RejectedShed, waited, retry)
	case why == RejectedTimeout:
		return b.reject(ctx, w.class, RejectedTimeout, b.queueTimeout, retry)
	}
	return ctx.Err()
}

// admitted reports that a call of class cls (classUnknown: not looked up yet) got a slot after
// waiting waited.
func (b *bulkhead) admitted(ctx context.Context, cls class, waited time.Duration) {
	if cls == classUnknown {
		cls = classOf(ctx, b.pol)
	}
	b.ev.emit(Event{Type: EventBulkheadAdmitted, Priority: cls.priority(), Duration: waited, Limit: int(b.limit.Load()),
		Context: ctx})
}

func (b *bulkhead) reject(ctx context.Context, cls class, why BulkheadRejection, waited, retry time.Duration) error {
	limit := int(b.limit.Load())
	b.ev.emit(Event{Type: EventBulkheadRejected, Duration: waited, Delay: retry, Priority: cls.priority(), Rejected: why,
		Limit: limit, Context: ctx})
	return &BulkheadRejectedError{
		Pipeline:       b.ev.name,
		MaxConcurrency: limit,
		MaxQueue:       int(b.maxQueue),
		Waited:         waited,
		Reason:         why,
		Priority:       cls.priority(),
		RetryAfter:     retry,
	}
}

// inFlight returns the number of slots taken.
func (b *bulkhead) inFlight() int { return int(b.inflight.Load()) }

// bulkheadTransport is the outermost layer. An exchange holds its slot until the response
// body is read to EOF or closed, or until the round trip fails, so a long stream counts
// against the limit for as long as it is open. Being the edge of the pipeline, it is also
// where a redirect is refused (see refuseRedirect).
type bulkheadTransport struct {
	b    *bulkhead
	cool *cooldown // the rate-limit pause, checked before a slot is taken
	p    *Pipeline // for the shared advice and the routes (nil in tests that build layers by hand)
	next http.RoundTripper
	base http.RoundTripper
	// chains are the chains of the pipeline's routes over base, by route pipeline.
	chains sync.Map
}

func (t *bulkheadTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.p != nil && t.p.shared != nil {
		// The deployment's advice first, also for a routed call: what the fleet knows about
		// the whole deployment (an unreachable host, a refused key) holds for every model.
		t.p.adoptShared(req.Context())
	}
	if t.p != nil && t.p.parent == nil {
		if key := routeOf(req.Context()); key != "" {
			if rt := t.routed(key); rt != nil {
				return rt.RoundTrip(req) // the route's own layers, over this transport's base
			}
		}
	}
	b := t.b
	if err := t.cool.gate(req); err != nil {
		closeRequestBody(req)
		return t.fail(req, err)
	}
	batch, err := b.acquire(req.Context())
	if err != nil {
		closeRequestBody(req)
		return t.fail(req, err)
	}
	var gen uint64
	if b.adaptive != nil {
		gen = b.adaptive.gen.Load()
	}
	resp, err := t.next.RoundTrip(req)
	if err == nil {
		err = refuseRedirect(b.ev.name, resp)
	}
	if err != nil {
		b.free(batch)
		return t.fail(req, err)
	}
	if t.p != nil {
		t.p.answered(resp)
	}
	if c, ok := resp.Body.(*call); ok && t.p != nil && c.t == &t.p.timeouts && c.slot == nil {
		c.slot, c.gen, c.batch = b, gen, batch // the call's record frees the slot at the body's end
		return resp, nil
	}
	if resp.Body == nil {
		resp.Body = http.NoBody
	}
	resp.Body = &doneBody{rc: resp.Body, f: b.finisher(batch)}
	return resp, nil
}

// fail returns the pipeline's failure of req: as the error it is, or, for an official SDK that
// would retry it, as a synthetic answer that says not to (see sdk.go).
func (t *bulkheadTransport) fail(req *http.Request, err error) (*http.Response, error) {
	if resp := answerForSDK(req, err); resp != nil {
		return resp, nil
	}
	return nil, err
}

// CloseIdleConnections forwards to the base transport, so http.Client.CloseIdleConnections
// keeps working through the pipeline. The pipeline itself never calls it.
func (t *bulkheadTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
