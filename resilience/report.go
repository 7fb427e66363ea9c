package resilience

import (
	"context"
	"sync"
)

type failureKey struct{}

type failureReport struct {
	mu  sync.Mutex
	err error
}

// WithFailureReporter returns a context for a request and a function that marks the call
// made with that context as failed, for the circuit breaker, even though the server answered
// 200. Use it for failures that only the reader of a body can see: an "overloaded" error
// event inside an event stream, say. For such a request the breaker settles the outcome when
// the body is closed (not at EOF, since the last bytes may hold the error), so call report
// before Close, and always Close. The first report wins; reports after Close are ignored. The pipeline never looks
// inside bodies itself: it knows HTTP, not LLM wire formats.
func WithFailureReporter(ctx context.Context) (context.Context, func(err error)) {
	r := &failureReport{}
	return context.WithValue(ctx, failureKey{}, r), r.report
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

func hasFailureReporter(ctx context.Context) bool {
	_, ok := ctx.Value(failureKey{}).(*failureReport)
	return ok
}

// reportedFailure returns the failure reported for the call made with ctx, or nil.
func reportedFailure(ctx context.Context) error {
	r, _ := ctx.Value(failureKey{}).(*failureReport)
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

type callInfoKey struct{}

// CallInfo is what the pipeline did for one call, filled in by the retry layer for a request
// whose context came from WithCallInfo. Read it after RoundTrip has returned.
type CallInfo struct {
	// Attempts is the number of attempts sent, retries included; 0 when the call was
	// rejected before any (open circuit, full bulkhead).
	Attempts int
	// GaveUp is why the retry layer stopped when the call failed; "" when it succeeded, was
	// rejected before any attempt or ended because the caller gave up.
	GaveUp GaveUp
}

// WithCallInfo returns a context for a request and the CallInfo the pipeline fills in for the
// call made with it: how a client reports "gave up after 4 attempts" on its errors.
func WithCallInfo(ctx context.Context) (context.Context, *CallInfo) {
	info := &CallInfo{}
	return context.WithValue(ctx, callInfoKey{}, info), info
}
