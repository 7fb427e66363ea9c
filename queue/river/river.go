// Package steadyriver hands the retries of LLM calls made in deferred mode
// (client.Deferred) to River (github.com/riverqueue/river), so a worker never sleeps through
// a "retry in 40 s": the job comes back at the time the call's deferral decision says.
//
// Wrap the worker whose Work calls steady with the job's attempt number:
//
//	func (w *SummariseWorker) Work(ctx context.Context, job *river.Job[SummariseArgs]) error {
//		_, err := w.llm.Chat(ctx, req, client.Deferred(job.Attempt))
//		return err
//	}
//	river.AddWorker(workers, steadyriver.Wrap[SummariseArgs](&SummariseWorker{…}))
//
// What the wrapper returns to River for a deferred failure:
//
//   - the provider's capacity (a rate limit, a pause after one, an open circuit, a full
//     bulkhead): river.JobSnooze until the due time, which does not count an attempt, so
//     waiting for a limit never uses up MaxAttempts;
//   - another temporary failure (overloaded, unavailable, a timeout): the error, counted as an
//     attempt, retried at the due time (the wrapper's NextRetry);
//   - a permanent failure (a bad request, a refused key, an exhausted quota): river.JobCancel,
//     so the job never runs again.
//
// It is a module of its own so that steady's users who do not use River never inherit it or
// PostgreSQL's driver.
package steadyriver

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/riverqueue/river"

	"github.com/steadyllm/steady/deferral"
	"github.com/steadyllm/steady/providers"
)

// Worker is a River worker whose deferred LLM failures are handed to River (see the package
// documentation). Its other methods are the wrapped worker's.
type Worker[T river.JobArgs] struct {
	river.Worker[T]
	due sync.Map // job ID → the due time of its counted retry, until River asks (NextRetry)
}

// Wrap returns w with its deferred failures handed to River.
func Wrap[T river.JobArgs](w river.Worker[T]) *Worker[T] { return &Worker[T]{Worker: w} }

// Work runs the wrapped worker and turns a deferred failure into what River acts on.
func (w *Worker[T]) Work(ctx context.Context, job *river.Job[T]) error {
	err := w.Worker.Work(ctx, job)
	var de *deferral.Error
	if err == nil || !errors.As(err, &de) {
		return err
	}
	dec := de.Decision
	switch {
	case !dec.Retry:
		return river.JobCancel(err)
	case capacity(dec.Kind):
		return river.JobSnooze(max(time.Until(dec.At), 0))
	}
	w.due.Store(job.ID, dec.At)
	return err
}

// NextRetry returns the due time of the job's last deferred failure, or the wrapped worker's
// choice.
func (w *Worker[T]) NextRetry(job *river.Job[T]) time.Time {
	if at, ok := w.due.LoadAndDelete(job.ID); ok {
		return at.(time.Time)
	}
	return w.Worker.NextRetry(job)
}

// capacity reports whether a failure of kind k is the provider's capacity rather than the
// job's failure.
func capacity(k providers.ErrorKind) bool {
	switch k {
	case providers.KindRateLimited, providers.KindCircuitOpen, providers.KindBulkheadFull:
		return true
	}
	return false
}
