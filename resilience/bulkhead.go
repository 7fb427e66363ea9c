package resilience

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// bulkhead bounds the exchanges in flight. A slot is a token in a buffered channel; callers
// that find no free slot block on the channel send, and Go serves blocked senders in arrival
// order, so the queue is first come, first served, and a freed slot passes straight to the
// oldest waiter instead of to a newcomer.
type bulkhead struct {
	ev           *emitter
	slots        chan struct{}
	waiting      atomic.Int64
	maxQueue     int64
	queueTimeout time.Duration
}

func (b *bulkhead) init(o Options, ev *emitter) {
	b.ev = ev
	b.slots = make(chan struct{}, o.BulkheadMaxConcurrency)
	b.maxQueue = int64(o.BulkheadMaxQueue)
	b.queueTimeout = seconds(o.BulkheadQueueTimeoutSeconds)
}

// finish releases a slot; it makes *bulkhead a finisher for doneBody.
func (b *bulkhead) finish(error) { <-b.slots }

// acquire takes a slot, waiting in the queue if there is room. It returns a
// *BulkheadRejectedError when the queue is full or the queue timeout passes, and the
// context's error when the caller gives up first.
func (b *bulkhead) acquire(ctx context.Context) error {
	select {
	case b.slots <- struct{}{}:
		return nil
	default:
	}
	if w, set := maxWaitOf(ctx); set && w == 0 {
		return b.reject(ctx, 0) // a call that never waits does not queue either
	}
	if b.waiting.Add(1) > b.maxQueue {
		b.waiting.Add(-1)
		return b.reject(ctx, 0)
	}
	defer b.waiting.Add(-1)
	if err := ctx.Err(); err != nil {
		return err
	}
	var expired chan struct{}
	if b.queueTimeout > 0 {
		expired = make(chan struct{})
		t := b.ev.clock.AfterFunc(b.queueTimeout, func() { close(expired) })
		defer t.Stop()
	}
	select {
	case b.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-expired:
		return b.reject(ctx, b.queueTimeout)
	}
}

func (b *bulkhead) reject(ctx context.Context, waited time.Duration) error {
	b.ev.emit(Event{Type: EventBulkheadRejected, Duration: waited, Context: ctx})
	return &BulkheadRejectedError{
		Pipeline:       b.ev.name,
		MaxConcurrency: cap(b.slots),
		MaxQueue:       int(b.maxQueue),
		Waited:         waited,
	}
}

// inFlight returns the number of slots taken.
func (b *bulkhead) inFlight() int { return len(b.slots) }

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
	if err := b.acquire(req.Context()); err != nil {
		closeRequestBody(req)
		return t.fail(req, err)
	}
	resp, err := t.next.RoundTrip(req)
	if err == nil {
		err = refuseRedirect(b.ev.name, resp)
	}
	if err != nil {
		b.finish(err)
		return t.fail(req, err)
	}
	if c, ok := resp.Body.(*call); ok && t.p != nil && c.t == &t.p.timeouts && c.slot == nil {
		c.slot = b // the call's record frees the slot at the body's end
		return resp, nil
	}
	if resp.Body == nil {
		resp.Body = http.NoBody
	}
	resp.Body = &doneBody{rc: resp.Body, f: b}
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
