package resilience

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Call is a request's context with two ways back from the pipeline: the pipeline fills in
// Info (how many attempts it made, why it gave up), and, for a call made to report failures,
// the reader of the response body can mark the call as failed for the circuit breaker with
// ReportFailure although the server answered 200 — an "overloaded" error event inside an
// event stream, say, which only the reader can see.
//
// WithCallInfo and WithFailureReporter return a Call. A client that already allocates a
// struct per call can embed a Call in it and Init it, saving the allocation. A Call is for one
// call (one RoundTrip of the pipeline): Info is written by the pipeline during RoundTrip and
// is read after it returns.
type Call struct {
	context.Context
	// Info is what the pipeline did for the call, filled in by the retry layer.
	Info CallInfo
	// Policy, when set, replaces the pipeline's retries and time limits for this call (see
	// Policy). Set it before the call starts; an inner Call's Policy wins over an outer one's.
	Policy *Policy
	// MaxWait, when above 0, is the longest this call waits for anything — a retry's backoff,
	// a server's hint, the end of a rate-limit cooldown — before the pipeline gives up and
	// returns what it has (GaveUpWaitTooLong, or a *CooldownError before anything is sent);
	// below 0 it never waits. A client that can send the call elsewhere at once sets it, so a
	// "retry in 40 s" fails over instead of stalling. 0 leaves the policy's limits. A call that
	// never waits does not queue for a bulkhead slot either.
	MaxWait time.Duration
	// Tokens is the call's estimate of the tokens it will use (its prompt and the most it may
	// answer), debited from the pipeline's tokens-per-minute limit before it is sent (see
	// Options.PaceTokensPerMinute). 0 debits none.
	Tokens int
	// Elsewhere says the caller can send this call to another route at once (the steady client
	// sets it when a later deployment or provider of the call's chain can serve it now). An
	// attempt that got nothing back — the attempt timeout, a connection closed or reset before
	// any response, a dial timeout — is then not retried on this route: the call gives up at
	// once (GaveUpSilent), returning the attempt's error, so the caller moves on instead of
	// waiting on a silent route again. Other failures are retried as usual (within MaxWait),
	// a refused connection too: it costs no wait.
	Elsewhere bool
	// OutcomeReported says the caller reports the outcome of the whole call itself, as the
	// steady client does (it may fall back to another provider after this pipeline gives up):
	// the pipeline's events are then steps of a larger call, and Event.InCall tells observers
	// so — a give-up is one provider's, not the call's failure.
	OutcomeReported bool
	// Route names the route of the call — the model it asks for — so that a pipeline whose
	// RouteScope is "model" keeps that model's circuit, pause, budgets and retry budget apart
	// from the others' (see Pipeline.Route). "" runs the call on the pipeline itself.
	Route string
	// Priority, when set, is the call's class (see Priority) instead of its policy's; an inner
	// Call's wins over an outer one's. Set it before the call starts.
	Priority Priority

	reportFailures bool
	failure        failureReport
	// firstToken: the call awaits a first token (AwaitFirstToken); rec is the pipeline's
	// record of the call, set when its first-token limit is armed, for FirstToken to stop it.
	firstToken bool
	watch      bool // WatchStream
	rec        atomic.Pointer[call]
	// seen is set by FirstToken: a later request of the same call (a provider resuming a cut
	// stream) continues an answer whose content has begun.
	seen atomic.Bool
}

// Init makes c a Call over ctx. With reportFailures, the circuit breaker settles the call's
// outcome when its response body is closed (not at EOF, since the last bytes of a stream may
// hold an error event the reader has yet to parse), counting a failure reported with
// ReportFailure before Close; without it, ReportFailure has no effect.
func (c *Call) Init(ctx context.Context, reportFailures bool) {
	*c = Call{Context: ctx, reportFailures: reportFailures}
}

// ReportFailure marks the call as failed for the circuit breaker (err nil counts as a failure
// too). Report before closing the body, and always close it. The first report wins; reports
// after Close are ignored.
func (c *Call) ReportFailure(err error) { c.failure.report(err) }

// ReportOverload tells the pipeline that the provider said it is overloaded inside the call's
// 200 answer (an overloaded_error event in a stream), which no status code showed: a pipeline
// with AdaptiveConcurrency counts it as an overload signal when the call's body ends, as it
// counts a 529. It does not count as a failure for the circuit breaker: report that with
// ReportFailure. Report before closing the body; as ReportFailure, it has no effect on a Call
// not made to report failures (Init's reportFailures).
func (c *Call) ReportOverload() { c.failure.overloaded.Store(true) }

type callKey struct{}

// Value returns the Call itself for the pipeline's key and defers everything else to the
// context the Call was made over.
func (c *Call) Value(key any) any {
	if _, ok := key.(callKey); ok {
		return c
	}
	return c.Context.Value(key)
}

// AwaitFirstToken tells the pipeline that the call waits for a first token — a streamed
// answer's first content, which only the reader of its body can recognise — so that its
// FirstTokenTimeoutSeconds (the call's policy's) runs from the moment it is sent until the
// reader calls FirstToken: the headers of an event stream do not end it, the first content
// does. When the limit runs out first, the call ends with a *TimeoutError (Limit
// TimeoutFirstToken, kind timeout), counted against the circuit and never retried on the same
// pipeline, whether the headers had come or not. Set it before the call starts; a call
// without it, or a policy without the limit, waits as before.
func (c *Call) AwaitFirstToken() { c.firstToken = true }

// WatchStream tells the pipeline that the call's answer is a stream whose first content the
// reader reports with FirstToken (the steady client's ChatStream does): TimeoutSeconds then
// bounds the call until that content, not until the stream's headers — a server that answers
// 200 and sends keep-alives but no content is held to it — and once content has begun, the
// stall limit (Options.StreamStallFactor) bounds each silence of the stream, learnt from its
// route's rhythm. AwaitFirstToken implies it. Set it before the call starts; a call without
// it is timed as before.
func (c *Call) WatchStream() { c.watch = true }

// FirstToken tells the pipeline that the call's first content arrived: its first-token limit
// (AwaitFirstToken) no longer applies, nor does TimeoutSeconds to a watched stream
// (WatchStream), whose stall limit now does — also for a later request made with the same Call
// (a provider that resumes a cut stream continues an answer already begun). Calling it again,
// or for a call that awaits none, does nothing.
func (c *Call) FirstToken() {
	c.seen.Store(true)
	if r := c.rec.Load(); r != nil {
		r.firstArrived()
	}
}

// callers finds, in one walk up ctx, the CallInfo the pipeline fills in (the innermost Call's),
// the failure report it honours (that of the innermost Call made to report failures) and the
// policy that governs the call (the innermost Call's that has one).
func callers(ctx context.Context) (info *CallInfo, report *failureReport, pol *Policy) {
	c, _ := ctx.Value(callKey{}).(*Call)
	return callersOf(c)
}

// callersOf is callers from the innermost Call c (nil for none).
func callersOf(c *Call) (info *CallInfo, report *failureReport, pol *Policy) {
	if c == nil {
		return nil, nil, nil
	}
	info = &c.Info
	for c != nil && (report == nil || pol == nil) {
		if report == nil && c.reportFailures {
			report = &c.failure
		}
		if pol == nil {
			pol = c.Policy
		}
		c, _ = c.Context.Value(callKey{}).(*Call)
	}
	return info, report, pol
}

// outcomeReported reports whether a Call of ctx says its caller reports the call's outcome.
func outcomeReported(ctx context.Context) bool {
	if ctx == nil {
		return false
	}
	c, _ := ctx.Value(callKey{}).(*Call)
	for c != nil {
		if c.OutcomeReported {
			return true
		}
		c, _ = c.Context.Value(callKey{}).(*Call)
	}
	return false
}

// WithFailureReporter returns a context for a request and a function that marks the call
// made with that context as failed, for the circuit breaker, even though the server answered
// 200: see Call, whose ReportFailure the function is.
func WithFailureReporter(ctx context.Context) (context.Context, func(err error)) {
	c := &Call{}
	c.Init(ctx, true)
	return c, c.ReportFailure
}

// CallInfo is what the pipeline did for one call, filled in by the retry layer for a request
// whose context came from WithCallInfo. Read it after RoundTrip has returned.
type CallInfo struct {
	// Attempts is the number of attempts sent, retries included; 0 when the call was
	// rejected before any (open circuit, full bulkhead).
	Attempts int
	// GaveUp is why the retry layer stopped when the call failed; "" when it succeeded, was
	// rejected before any attempt or ended because the caller gave up.
	GaveUp GaveUp
	// Wait is the wait the retry layer refused when it gave up rather than wait (GaveUp
	// "deadline", "hint_too_long", "wait_too_long"): the server's hint, or the backoff; 0
	// otherwise.
	Wait time.Duration
	// Deadline, with GaveUp "deadline", is the deadline the wait would have passed: the
	// earlier of the context's (the caller's, or the steady client's whole-call deadline) and
	// the pipeline's own TimeoutSeconds. Zero otherwise.
	Deadline time.Time
	// TokensDebited is what the pipeline's tokens-per-minute limit was debited for the
	// call's last attempt (Call.Tokens, at most a whole budget, credit included; see
	// Options.PaceTokensPerMinute); 0 when no tokens-per-minute limit was known as it was sent. Give it to
	// Pipeline.SettleTokens with the usage the answer reports.
	TokensDebited int
}

// WithCallInfo returns a context for a request and the CallInfo the pipeline fills in for the
// call made with it: how a client reports "gave up after 4 attempts" on its errors. The
// context is a *Call.
func WithCallInfo(ctx context.Context) (context.Context, *CallInfo) {
	c := &Call{}
	c.Init(ctx, false)
	return c, &c.Info
}

type failureReport struct {
	mu  sync.Mutex
	err error
	// overloaded is set by ReportOverload.
	overloaded atomic.Bool
}

func (r *failureReport) report(err error) {
	if err == nil {
		err = errServerFailure
	}
	r.mu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.mu.Unlock()
}

// failure returns the failure reported through r, or nil; r may be nil.
func (r *failureReport) failure() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}
