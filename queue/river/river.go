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
//     bulkhead) or a budget of the application's (budget_exhausted: a cost.Budget refused the
//     call until its window ends): river.JobSnooze until the due time, which does not count an
//     attempt, so waiting for a limit never uses up MaxAttempts. A wait is at most
//     deferral.MaxDelay (a day), so a job refused by a monthly budget is snoozed a day at a
//     time, looking again each day, using no attempt;
//   - another temporary failure (overloaded, unavailable, a timeout): the error, counted as an
//     attempt, retried at the due time (the wrapper's NextRetry);
//   - a permanent failure (a bad request, a refused key, an exhausted quota): river.JobCancel,
//     so the job never runs again.
//
// The due time handed to River is never sooner than deferral.MinDelay after Work returns nor
// later than deferral.MaxDelay (see deferral.Decision.Wait), whatever the decision says: a
// snooze of 0 would make the job available again at once, in a loop.
//
// A job that asks for a long answer need not hold a worker while the provider writes it:
// Background is the worker of jobs that ask in background mode and look at the answer later,
// one short run at a time, snoozed in between, until it is finished (see Background).
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
	due dueTimes
}

// Wrap returns w with its deferred failures handed to River.
func Wrap[T river.JobArgs](w river.Worker[T]) *Worker[T] { return &Worker[T]{Worker: w} }

// Work runs the wrapped worker and turns a deferred failure into what River acts on.
func (w *Worker[T]) Work(ctx context.Context, job *river.Job[T]) error {
	return w.due.toRiver(w.Worker.Work(ctx, job), job.ID, job.Attempt, job.MaxAttempts)
}

// NextRetry returns the due time of the job's last deferred failure (never past when Work
// returned, never more than deferral.MaxDelay after it), or the wrapped worker's choice.
func (w *Worker[T]) NextRetry(job *river.Job[T]) time.Time {
	if at, ok := w.due.take(job.ID); ok {
		return at
	}
	return w.Worker.NextRetry(job)
}

// dueTimes holds the due times of jobs' counted retries until River asks for them.
type dueTimes struct {
	m sync.Map // job ID → the due time of its counted retry
}

// toRiver turns err, the outcome of a run of job id (attempt of maxAttempts), into what River
// acts on: a deferred failure is snoozed, cancelled or retried at its due time (see the
// package documentation); anything else is returned as it is.
func (t *dueTimes) toRiver(err error, id int64, attempt, maxAttempts int) error {
	var de *deferral.Error
	if err == nil || !errors.As(err, &de) {
		return err
	}
	dec := de.Decision
	if !dec.Retry {
		return river.JobCancel(err)
	}
	// Wait keeps the delay within [deferral.MinDelay, deferral.MaxDelay]: a snooze of 0
	// would make the job available again at once (a loop), a due time River finds past would
	// fall back to its default policy, and one centuries away would park the job for good.
	now := time.Now()
	wait := dec.Wait(now)
	if freeWait(dec.Kind) {
		return river.JobSnooze(wait)
	}
	// River asks NextRetry only when the job has attempts left: remembering the time of one
	// that has none would keep it in the map for ever.
	if attempt < maxAttempts {
		t.m.Store(id, now.Add(wait))
	}
	return err
}

// take returns, and forgets, the due time of job id's counted retry.
func (t *dueTimes) take(id int64) (time.Time, bool) {
	if at, ok := t.m.LoadAndDelete(id); ok {
		return at.(time.Time), true
	}
	return time.Time{}, false
}

// freeWait reports whether a failure of kind k is a wait rather than the job's failure: the
// provider's capacity, or a budget that has no room until its window ends.
func freeWait(k providers.ErrorKind) bool {
	switch k {
	case providers.KindRateLimited, providers.KindCircuitOpen, providers.KindBulkheadFull, providers.KindBudgetExhausted:
		return true
	}
	return false
}
