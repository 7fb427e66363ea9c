package client

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// The whole-call deadline (resilience.Options.CallTimeoutSeconds, WithCallTimeout): one
// deadline for every try, retry, backoff, hedge and fallback of a call, beside each try's own
// TimeoutSeconds.
//
// It is a context: the call's providers run under a child of the caller's context that the
// client's clock cancels when the deadline passes, and whose Deadline reports it. So every
// wait below already honours it — the retry layer gives up at once on a hint or a backoff that
// would end past it (resilience.GaveUpDeadline), a rate-limit pause or a budget that would make
// the call wait past it refuses the call before anything is sent, a bulkhead queue gives up
// when it passes — and an attempt in flight when it passes is cancelled. What the client adds
// is the verdict: a failure the deadline caused is kind timeout with GaveUp "deadline" (never
// canceled, which is the caller's own doing, and never counted against a circuit, since the
// deadline is the caller's budget rather than the provider's failure), and the chain starts
// no route once it has passed.

// MaxCallTimeout bounds WithCallTimeout, as resilience.Options bounds CallTimeoutSeconds.
const MaxCallTimeout = 24 * time.Hour

// WithCallTimeout bounds the whole call — every try of every route, their retries, backoffs
// and hedges, and the fallbacks — by d, instead of its policy's CallTimeoutSeconds. A wait
// that would end past the deadline is not started, no route is started once it has passed,
// and the call then fails with kind timeout and GaveUp "deadline" (errors.Is finds
// resilience.ErrTimeout and context.DeadlineExceeded, not context.Canceled). For ChatStream it
// bounds the time until ChatStream returns — the first content, or with StreamRescue
// "buffer" the whole answer — and no longer: an answer that is streaming is not cut by it
// (StreamIdleTimeoutSeconds and ctx bound the rest). The caller's ctx still wins when its
// deadline comes first, and its end is kind canceled as always. d must be above 0 and at most
// MaxCallTimeout (24 h): anything else is a bad_request, before anything is sent.
func WithCallTimeout(d time.Duration) CallOption {
	return func(o *callOptions) { o.callTimeout = &d }
}

// callTimeout is the whole-call deadline of a call with options o and plan pl: the call's own
// (WithCallTimeout), else its policy's CallTimeoutSeconds — the named policy's (WithPolicy),
// else the first provider's of its chain. 0 for none.
func (c *Client) callTimeout(o *callOptions, pl plan) time.Duration {
	if o != nil && o.callTimeout != nil {
		return *o.callTimeout
	}
	pol := pl.policy
	if pol == nil && len(pl.chain) > 0 {
		pol = c.entries[pl.chain[0]].pipeline.Policy()
	}
	if pol == nil {
		return 0
	}
	return pol.CallTimeout()
}

type deadlineKey struct{}

// callDeadline is the context of a call that has a whole-call deadline: a cancellable child of
// the caller's context, cancelled with err when the deadline passes on the client's clock.
type callDeadline struct {
	context.Context // the cancellable child
	parent          context.Context
	at              time.Time     // the deadline, on the client's clock
	limit           time.Duration // how long the call had
	// err is the cause the deadline ends the context with, made when it runs out (a call that
	// ends in time pays nothing for it).
	err    atomic.Pointer[resilience.TimeoutError]
	cancel context.CancelCauseFunc
	timer  resilience.Timer
	// state is deadlineLive until the deadline no longer applies (deadlineOff: the call ended,
	// or ChatStream returned its stream) or runs out (deadlineExpired), whichever comes first:
	// a stream handed to the caller is never cut by a timer that fired as it was handed over.
	state atomic.Int32
}

// withDeadline returns the context a call with the whole-call deadline d runs under, and the
// deadline (nil, and ctx itself, when d is 0 or the caller's own deadline comes first).
func (c *Client) withDeadline(ctx context.Context, d time.Duration) (context.Context, *callDeadline) {
	if d <= 0 {
		return ctx, nil
	}
	at := c.now().Add(d)
	if pd, ok := ctx.Deadline(); ok && !pd.After(at) {
		return ctx, nil // the caller's deadline comes first: it decides, as always
	}
	cctx, cancel := context.WithCancelCause(ctx)
	dl := &callDeadline{Context: cctx, parent: ctx, at: at, limit: d, cancel: cancel}
	dl.timer = c.afterFunc(d, dl.expire)
	return dl, dl
}

// The states of a callDeadline.
const (
	deadlineLive int32 = iota
	deadlineOff
	deadlineExpired
)

// off reports whether the deadline no longer applies.
func (d *callDeadline) off() bool { return d.state.Load() == deadlineOff }

// expire ends the call's context with the deadline's error, unless it no longer applies.
func (d *callDeadline) expire() {
	if !d.state.CompareAndSwap(deadlineLive, deadlineExpired) {
		return
	}
	te := &resilience.TimeoutError{Limit: resilience.TimeoutCall, After: d.limit}
	d.err.Store(te)
	d.cancel(te)
}

// Deadline reports the earlier of the caller's deadline and the call's, so that every wait
// below gives up on what it cannot finish in time; once the deadline is off (a stream that
// was served), the caller's alone.
func (d *callDeadline) Deadline() (time.Time, bool) {
	if !d.off() {
		if pd, ok := d.parent.Deadline(); !ok || d.at.Before(pd) {
			return d.at, true
		}
	}
	return d.parent.Deadline()
}

// Value returns the deadline itself for its key and defers everything else.
func (d *callDeadline) Value(key any) any {
	if _, ok := key.(deadlineKey); ok {
		return d
	}
	return d.Context.Value(key)
}

// deadlineOf returns the whole-call deadline of ctx, nil for none.
func deadlineOf(ctx context.Context) *callDeadline {
	d, _ := ctx.Value(deadlineKey{}).(*callDeadline)
	return d
}

// expired reports whether the deadline ended the call's context, before the caller did.
func (d *callDeadline) expired() bool {
	te := d.err.Load()
	return te != nil && context.Cause(d.Context) == error(te)
}

// cause is the deadline's error: the one it ended the context with, or one like it.
func (d *callDeadline) cause() *resilience.TimeoutError {
	if te := d.err.Load(); te != nil {
		return te
	}
	return &resilience.TimeoutError{Limit: resilience.TimeoutCall, After: d.limit}
}

// release stops the deadline and frees its context, once the call is over. d may be nil.
func (d *callDeadline) release() {
	if d == nil {
		return
	}
	d.state.CompareAndSwap(deadlineLive, deadlineOff)
	d.timer.Stop()
	d.cancel(nil)
}

// detach turns the deadline off for a stream that ChatStream returns: the stream reads on
// under the context, which only the caller and Close end from now on (see release). It
// reports false when the deadline ran out first, as the stream was being handed over: the
// stream's context is then ended, and the call is the deadline's. d may be nil.
func (d *callDeadline) detach() bool {
	if d == nil {
		return true
	}
	if d.state.CompareAndSwap(deadlineLive, deadlineOff) {
		d.timer.Stop()
		return true
	}
	return d.off()
}

// explains reports whether the deadline caused err, the failure of a try that ended with
// info, and the wait it refused (0 when it ran out): it ran out, or the retry layer refused a
// wait that would have passed it, or the pipeline refused to wait for a rate-limit pause or a
// budget past it.
func (d *callDeadline) explains(err error, info *resilience.CallInfo) (time.Duration, bool) {
	if d.expired() {
		return 0, true
	}
	if d.off() || d.Context.Err() != nil {
		return 0, false
	}
	if info != nil && info.GaveUp == resilience.GaveUpDeadline && info.Deadline.Equal(d.at) {
		return info.Wait, true
	}
	var ce *resilience.CooldownError
	if errors.As(err, &ce) && ce.Deadline.Equal(d.at) {
		return ce.RetryAfter, true
	}
	return 0, false
}

// verdict makes pe, the failure of a try the deadline caused (see explains), the deadline's:
// kind timeout, GaveUp deadline. A refused wait keeps what the provider or the pipeline said
// (its status, its hint) beside the deadline's error; an attempt the deadline cut is the
// deadline's alone.
func (d *callDeadline) verdict(pe *providers.Error, wait time.Duration) {
	was := pe.Kind
	pe.Kind, pe.GaveUp = providers.KindTimeout, string(resilience.GaveUpDeadline)
	if !d.expired() {
		pe.Message = fmt.Sprintf("waiting %s would pass the call's deadline of %s: gave up at once (%s: %s)",
			wait.Round(time.Millisecond), d.limit, was, pe.Message)
		pe.Err = errors.Join(d.cause(), pe.Err)
		return
	}
	pe.Message = fmt.Sprintf("the call's deadline of %s ran out", d.limit)
	pe.Err = d.cause()
}

// lead returns the failure that explains a call the deadline ended after failures, when the
// last of them is not already the deadline's: a timeout naming no provider, since the
// deadline passed between two tries.
func (d *callDeadline) lead(failures []*providers.Error) *providers.Error {
	return &providers.Error{Kind: providers.KindTimeout, GaveUp: string(resilience.GaveUpDeadline), Err: d.cause(),
		Message: fmt.Sprintf("the call's deadline of %s ran out after %d tries; no other route was started", d.limit, len(failures))}
}

// isDeadline reports whether pe is the failure of the whole-call deadline.
func isDeadline(pe *providers.Error) bool {
	var te *resilience.TimeoutError
	return pe.Kind == providers.KindTimeout && errors.As(pe.Err, &te) && te.Limit == resilience.TimeoutCall
}

// outcome returns the failure of a walk that found no answer (see chainError): when the
// whole-call deadline ended it, led by the deadline's failure.
func (w *walk) outcome(stopped bool) error {
	if d := w.op.dl; d != nil && len(w.failures) > 0 {
		last := w.failures[len(w.failures)-1]
		switch {
		case isDeadline(last):
			stopped = true // the deadline's failure explains the outcome
		case d.expired():
			lead := d.lead(w.failures)
			if x, _ := w.ctx.Value(extrasKey{}).(*callExtras); x != nil {
				lead.ClientRequestID = x.o.requestID
			}
			return &ChainError{Cause: lead, Failures: w.failures, Skipped: w.skipped}
		}
	}
	return chainError(w.failures, w.skipped, stopped)
}
