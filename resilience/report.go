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
// event inside an event stream, say. Call report before closing the body; the first report
// wins, later ones and reports after the body ended are ignored. The pipeline never looks
// inside bodies itself: it knows HTTP, not LLM wire formats.
func WithFailureReporter(ctx context.Context) (context.Context, func(err error)) {
	r := &failureReport{}
	return context.WithValue(ctx, failureKey{}, r), r.report
}

func (r *failureReport) report(err error) {
	if err == nil {
		err = errCallFailed
	}
	r.mu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.mu.Unlock()
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
