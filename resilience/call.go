package resilience

import (
	"context"
	"io"
	"sync/atomic"
	"time"
)

// call is one logical call's record in a pipeline. The timeout layer makes it; it is the
// context that the layers below see (a cancellable child of the caller's context when the
// pipeline has time limits, the caller's context itself otherwise) and, once the answer
// arrives, the wrapper of its body. Each layer keeps its part of the call here instead of
// allocating a context or a body wrapper of its own, so that a successful call costs four
// allocations: the record, the cancellable context (two) and the request that carries it.
//
// Each part belongs to one layer, which alone writes it:
//
//   - the timeout layer: the cancellable context, the total deadline, the idle timer of an
//     event stream and the connection that carries it;
//   - the circuit breaker: the ticket of a call whose outcome is settled when its body ends
//     (set when the breaker finds the record in the request's context; for a half-open probe
//     already before it is sent, so that the retry layer makes one attempt, see asProbe);
//   - the bulkhead: the slot the call holds until its body ends (set when the bulkhead finds
//     the record as the response's body).
//
// When the body ends — at EOF, on a read error or at Close, whichever comes first — the
// parts finish from the inside out, as separate wrappers would: the breaker settles the
// outcome, the timeout layer releases the context and its timers, the bulkhead frees the
// slot.
type call struct {
	context.Context
	parent context.Context
	t      *timeouts // the pipeline's: a layer only ever claims a record of its own pipeline
	start  time.Time // when the call began; the total deadline is TimeoutSeconds later
	// What the caller's context holds for the pipeline (see Call), found once: where to
	// report the attempts, and the failure report the breaker honours.
	info   *CallInfo
	report *failureReport
	pol    *Policy // the call's policy: the caller's (see Call.Policy), else the pipeline's

	// The timeout layer's part.
	cancel context.CancelCauseFunc // nil when the call has no time limits
	idle   Timer
	own    Timer // the total deadline of a call whose policy's limit differs from the pipeline's
	// first is the call's first-token limit (Call.AwaitFirstToken), nil when none; firstDone
	// says its first content arrived.
	first     Timer
	firstDone atomic.Bool
	// For an event stream: whether a Read is waiting, and since when.
	reading atomic.Bool
	// How the idle timer learns the silence of the wire (see wire.go): tracing is set when the
	// call answers its context's lookups of an httptrace.ClientTrace itself (see conntrace.go);
	// wire is set for an HTTP/1 event stream, whose connection carries nothing else; trace
	// notes the connection each attempt got. (The flags, watched too, sit in the padding after
	// reading: the record stays in its allocation size class.)
	tracing bool
	wire    bool
	// watched is set for a stream whose reader reports its first content (Call.WatchStream):
	// its total limit lasts until that content, its stall limit applies after it.
	watched   bool
	readSince atomic.Int64
	trace     atomic.Pointer[connTrace]
	// totalOff is set once the total timeout no longer applies: the call ended, or its
	// stream's headers arrived (a watched stream's first content). The pipeline's deadlines queue skips such calls.
	totalOff atomic.Bool
	reported atomic.Bool // the timeout has been reported

	// The circuit breaker's part: set when it settles the outcome at the body's end.
	brk       *breaker
	tk        ticket
	waitClose bool // settle at Close, not at EOF (the caller reports failures)
	// batch is the bulkhead's (see slot), here where it fills the padding after waitClose.
	batch   bool
	settled atomic.Bool

	// The bulkhead's part: the slot to free at the body's end, whether it is counted among the
	// batch calls' (batch, above; bulkhead.free), and the generation of its adaptive limit when
	// the call got it (see limiter.overload).
	slot *bulkhead
	gen  uint64

	rc   io.ReadCloser
	done atomic.Bool
}

// now returns the time the call started, read once from the pipeline's clock for every layer
// that needs it.
func (c *call) now() time.Time {
	if c.start.IsZero() {
		c.start = c.t.ev.now()
	}
	return c.start
}

// callOf returns the record of a call of the pipeline whose emitter is ev, when ctx is one.
func callOf(ctx context.Context, ev *emitter) *call {
	if c, ok := ctx.(*call); ok && c.t.ev == ev {
		return c
	}
	return nil
}

// Deadline reports the earlier of the caller's deadline and the pipeline's total deadline,
// so the retry layer can tell when a wait would outlast the call.
func (c *call) Deadline() (time.Time, bool) {
	pd, ok := c.parent.Deadline()
	d, has := c.deadline()
	if !has || (ok && pd.Before(d)) {
		return pd, ok
	}
	return d, true
}

// deadline returns the call's total deadline, if the pipeline has a total timeout.
func (c *call) deadline() (time.Time, bool) {
	if c.pol.total <= 0 {
		return time.Time{}, false
	}
	return c.start.Add(c.pol.total), true
}

func (c *call) Read(b []byte) (int, error) {
	var since int64
	var learn bool // the wait is a sample of the route's rhythm: content has begun
	if c.idle != nil {
		since = c.t.ev.clock.Now().UnixNano()
		c.readSince.Store(since)
		learn = c.watched && c.firstDone.Load()
		if limit, _ := c.readLimit(); limit > 0 {
			c.reading.Store(true)
			c.idle.Reset(limit)
		}
	}
	n, err := c.rc.Read(b)
	if c.idle != nil {
		c.reading.Store(false)
		c.idle.Stop()
		if learn && n > 0 && c.pol.stall.on() {
			c.t.learnt().add(time.Duration(c.t.ev.clock.Now().UnixNano() - since))
		}
	}
	if err != nil {
		if err == io.EOF {
			if !c.waitClose {
				c.settle(nil)
			}
		} else {
			c.settle(err)
			err = c.mapErr(err)
		}
		c.end()
	}
	return n, err
}

func (c *call) Close() error {
	err := c.rc.Close()
	c.settle(nil)
	c.overloaded() // the reader may have found the overload after the body's EOF
	c.end()
	return err
}

// overloaded tells the adaptive limit of the slot the call held that the reader found an
// overload inside the answer (Call.ReportOverload), once.
func (c *call) overloaded() {
	if c.slot != nil && c.slot.adaptive != nil && c.report != nil && c.report.overloaded.CompareAndSwap(true, false) {
		c.slot.adaptive.overload(c.gen, reasonStreamError)
	}
}

// settle reports the call's outcome to the circuit breaker, once, when the breaker waits for
// the body's end: err is the read error that ended it, nil for EOF or Close.
func (c *call) settle(err error) {
	if c.brk != nil && c.settled.CompareAndSwap(false, true) {
		c.brk.settle(c, c.tk, c.report, err)
	}
}

// end releases what the call holds, once: the total deadline, the idle timer, the context,
// the bulkhead slot.
func (c *call) end() {
	if c.done.CompareAndSwap(false, true) {
		c.stopTotal()
		if c.idle != nil {
			c.idle.Stop()
		}
		if c.first != nil {
			c.first.Stop()
		}
		c.release()
		if c.slot != nil {
			c.overloaded()
			c.slot.free(c.batch)
		}
	}
}

// release cancels the call's context, if it has one of its own, with the cause that tells
// the layers below that the call ended rather than the caller giving up.
func (c *call) release() {
	if c.cancel != nil {
		c.cancel(errCallEnded)
	}
}

// callEnded is the cause with which the timeout layer releases the context of a call whose
// body is done, so that layers below can tell it from the caller giving up.
type callEnded struct{}

func (*callEnded) Error() string { return "resilience: call ended" }

var errCallEnded error = &callEnded{}
