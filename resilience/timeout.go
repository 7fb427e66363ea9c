package resilience

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"
)

// timeoutTransport bounds the whole logical call by TimeoutSeconds, and each read of an
// event stream by StreamIdleTimeoutSeconds (or, after a watched stream's first content, by the
// stall limit its route's rhythm sets: see rhythm.go).
//
// The deadline lives in the call's context (see call), which stays alive until the response
// body is read to EOF or closed; one shared timer per pipeline fires the deadlines (see
// deadlines). Cancelling it when RoundTrip returns, as a naive context.WithTimeout + defer
// cancel does, would cut the body the caller has not read yet. For an event stream the
// total limit stops when the stream's headers arrive — for a watched one (Call.WatchStream),
// when its first content does; from then on only the idle (and stall) limit applies,
// re-armed on every read.
//
// Only the pipeline's own expiry becomes a *TimeoutError. When the caller's context ends
// first, the caller's error comes back unchanged.
type timeoutTransport struct {
	t     *timeouts
	below rejecter // the layer below, asked first whether it would turn the call away at once
	next  http.RoundTripper
}

// rejecter is what the timeout layer asks of the layer below it (the circuit breaker) before
// arming any timer: whether the call would be turned away at once anyway.
type rejecter interface {
	fastReject(req *http.Request) error
}

// timeouts is the timeout layer's state: its limits and the shared timer of its deadlines.
type timeouts struct {
	ev  *emitter
	pol *Policy // the pipeline's own policy, for calls that bring none
	// totalErr is the cause of every total timeout under the pipeline's policy: the same for
	// each call, and for the routes of a deployment (set before init).
	totalErr  *TimeoutError
	deadlines deadlines
	// firsts fires the first-token limits of the calls under the pipeline's own limit.
	firsts deadlines
	// rhythm is what the pipeline (a route) learnt of its streams' waits for bytes after
	// their first content, for the stall limit (see rhythm.go); made by the first watched
	// stream, so that a pipeline whose streams nobody watches holds none.
	rhythm atomic.Pointer[rhythm]
	// kernel: the idle timer may ask the kernel how long a connection has been silent (see
	// wire.go). Its answer is in real time, so only a pipeline on the wall clock asks.
	kernel bool
	// used is when the pipeline's latest call under a total timeout began (UnixNano on its
	// clock, read for the deadline anyway), 0 before any: how a summary tells a route in use
	// from one nobody has called for a while (see summary.go).
	used atomic.Int64
}

func (t *timeouts) init(pol *Policy, ev *emitter) {
	t.ev, t.pol = ev, pol
	if t.totalErr == nil {
		t.totalErr = &TimeoutError{Pipeline: ev.name, Limit: TimeoutTotal, After: pol.total}
	}
	t.deadlines = deadlines{clock: ev.clock}
	t.firsts = deadlines{clock: ev.clock, first: true}
	_, t.kernel = ev.clock.(wallClock)
}

func (tt *timeoutTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t := tt.t
	if err := tt.below.fastReject(req); err != nil {
		return nil, err // the circuit is open: fail before arming any timer
	}
	parent := req.Context()
	c := &call{Context: parent, parent: parent, t: t}
	rc, _ := parent.Value(callKey{}).(*Call)
	c.info, c.report, c.pol = callersOf(rc)
	if c.pol == nil {
		c.pol = t.pol
	}
	pol := c.pol
	c.totalOff.Store(true)
	// watched: the reader reports the stream's first content (Call.WatchStream), so the total
	// limit runs until it rather than until the headers, and the stall limit applies after it.
	watched := rc != nil && (rc.firstToken || rc.watch)
	if watched && rc.seen.Load() {
		c.firstDone.Store(true) // a request that continues an answer already begun (a resume)
	}
	first := watched && rc.firstToken && pol.firstToken > 0 && !c.firstDone.Load()
	if pol.total > 0 || pol.idle > 0 || first || (watched && pol.stall.on()) {
		c.Context, c.cancel = context.WithCancelCause(parent)
		if first {
			c.now()
			if pol.firstToken == t.pol.firstToken {
				t.firsts.add(c) // in call order, as the total deadlines: one timer for all
			} else {
				c.first = t.ev.clock.AfterFunc(pol.firstToken, c.expireFirst)
			}
		}
		if watched {
			c.watched = true
			rc.rec.Store(c)
		}
		if pol.total > 0 {
			t.used.Store(c.now().UnixNano()) // the deadline is TimeoutSeconds after the start
			c.totalOff.Store(false)
			if pol.total == t.pol.total {
				t.deadlines.add(c) // deadlines in call order: one timer for all
			} else {
				c.own = t.ev.clock.AfterFunc(pol.total, c.expireTotal)
			}
		}
		if pol.idle > 0 || c.watched {
			c.traceConn() // any answer may turn out to be an event stream
		}
	}
	resp, err := tt.next.RoundTrip(req.WithContext(c))
	if err != nil {
		c.stopTotal()
		err = c.mapErr(err)
		c.end() // its first-token limit too: a failed call leaves no timer nor queue entry behind
		return nil, err
	}
	if isEventStream(resp) {
		if !c.watched || c.firstDone.Load() {
			// The headers end the total limit; a watched stream's first content ends it
			// (firstArrived): a server that sends headers and keep-alives but no content
			// is held to TimeoutSeconds all the same.
			c.stopTotal()
		}
		if pol.idle > 0 || (c.watched && pol.stall.on()) {
			// The Read itself measures an HTTP/2 stream's silence; the connection of an
			// HTTP/1 stream carries nothing else, so its silence is the stream's.
			c.wire = resp.ProtoMajor < 2
			c.idle = t.ev.clock.AfterFunc(max(pol.idle, pol.stall.max), c.expireIdle) // armed by each Read
			c.idle.Stop()
		}
	}
	if resp.Body == nil {
		resp.Body = http.NoBody
	}
	c.rc = resp.Body
	resp.Body = c
	// The caller's request, not the copy that carried the call's context: the copy is the
	// pipeline's business, and a long stream need not keep it alive.
	resp.Request = req
	return resp, nil
}

func (c *call) expireTotal() {
	if c.totalOff.Load() {
		return
	}
	if c.pol.total == c.t.pol.total {
		c.cancel(c.t.totalErr)
	} else {
		c.cancel(&TimeoutError{Pipeline: c.t.ev.name, Limit: TimeoutTotal, After: c.pol.total})
	}
}

// expireFirst runs when the call's first-token limit ran out before its first content (see
// Call.AwaitFirstToken): it ends the call, headers or not.
func (c *call) expireFirst() {
	if c.firstDone.Load() || c.done.Load() {
		return
	}
	c.cancel(&TimeoutError{Pipeline: c.t.ev.name, Limit: TimeoutFirstToken, After: c.pol.firstToken})
}

// firstArrived ends the call's first-token limit, and the total limit of a watched stream:
// its first content arrived.
func (c *call) firstArrived() {
	if c.firstDone.CompareAndSwap(false, true) {
		c.stopTotal()
		if c.first != nil {
			c.first.Stop()
		}
	}
}

// readLimit returns how long a Read of the call's event stream may wait for bytes: the idle
// limit, or once a watched stream's content has begun and its route knows its rhythm, the
// stall limit when it is shorter (stall says so); 0 for no limit.
func (c *call) readLimit() (limit time.Duration, stall bool) {
	limit = c.pol.idle
	if c.watched && c.firstDone.Load() {
		var p99 time.Duration
		if r := c.t.rhythm.Load(); r != nil {
			p99 = time.Duration(r.p99.Load())
		}
		if s := c.pol.stall.of(p99); s > 0 && (limit == 0 || s < limit) {
			return s, true
		}
	}
	return limit, false
}

// expireIdle runs when a Read of an event stream has waited its limit (readLimit): the idle
// limit, or the stall limit. It cuts the stream only if the wire was silent all that time:
// when the connection received bytes meanwhile (a Read blocked in the middle of an HTTP
// chunk), it re-arms for the rest of the limit, counted from the last bytes (see wire.go).
func (c *call) expireIdle() {
	if !c.reading.Load() {
		return // the Read ended as the timer fired
	}
	// The limit as it stands now: a stall limit learnt meanwhile from other streams may be
	// longer than the one the Read was armed with, and then the Read has the rest of it.
	limit, stall := c.readLimit()
	if limit <= 0 {
		return
	}
	quiet, ok := c.wireQuiet()
	if !ok {
		quiet = time.Duration(c.t.ev.clock.Now().UnixNano() - c.readSince.Load())
	}
	if quiet < limit {
		c.idle.Reset(limit - quiet)
		return
	}
	which := TimeoutStreamIdle
	if stall {
		which = TimeoutStreamStall
	}
	c.cancel(&TimeoutError{Pipeline: c.t.ev.name, Limit: which, After: limit})
}

// stopTotal ends the total timeout of the call: the pipeline's deadlines queue skips it from
// now on, and a timer of its own (a per-call policy's) stops.
func (c *call) stopTotal() {
	c.totalOff.Store(true)
	if c.own != nil {
		c.own.Stop()
	}
}

// mapErr turns an error caused by the pipeline's own expiry into the *TimeoutError that
// caused it, and reports the timeout once. The caller's own cancellation is left as it is.
func (c *call) mapErr(err error) error {
	if c.cancel == nil || c.Context.Err() == nil || c.parent.Err() != nil {
		return err
	}
	te, ok := context.Cause(c.Context).(*TimeoutError)
	if !ok {
		return err
	}
	if c.reported.CompareAndSwap(false, true) {
		c.t.ev.emit(Event{Type: EventTimeout, Timeout: te.Limit, Delay: te.After, Err: te, Context: c.parent})
	}
	return te
}
