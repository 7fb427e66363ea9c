// Package steadyasynq hands the retries of LLM calls made in deferred mode
// (client.Deferred) to asynq (github.com/hibiken/asynq), so a worker never sleeps through a
// "retry in 40 s": the task comes back at the time the call's deferral decision says.
//
// Set the server's Config with RetryDelayFunc and IsFailure, return Result(ctx, err) from the
// handler, calling steady with the task's attempt number, and enqueue the tasks with
// MaxRetry(1) or more:
//
//	srv := asynq.NewServer(redisOpt, asynq.Config{
//		RetryDelayFunc: steadyasynq.RetryDelayFunc(nil),
//		IsFailure:      steadyasynq.IsFailure,
//	})
//	mux.HandleFunc("summarise", func(ctx context.Context, t *asynq.Task) error {
//		_, err := c.Chat(ctx, req, client.Deferred(steadyasynq.Attempt(ctx)))
//		return steadyasynq.Result(ctx, err)
//	})
//	enq.Enqueue(task, asynq.MaxRetry(5))
//
// A deferral caused by the provider's capacity (a rate limit, an open circuit, a full
// bulkhead) or by a budget of the application's (budget_exhausted: a cost.Budget refused the
// call until its window ends) does not use up MaxRetry. A wait is at most deferral.MaxDelay
// (a day), so a task refused by a monthly budget comes back daily, using no retry. But asynq archives a task whose retries are used up at
// its next failure before it asks IsFailure whether the failure counts: a task enqueued with
// MaxRetry(0) at its first deferral of any kind, a task that failed MaxRetry counted times at
// its next capacity deferral. Result says so in the archived task's error (ErrNoRetriesLeft)
// rather than let it look like an ordinary failure.
//
// A task that asks for a long answer need not hold a worker while the provider writes it:
// Background is the handler of tasks that ask in background mode and look at the answer later,
// one short run at a time, until it is finished (see Background).
//
// It is a module of its own so that steady's users who do not use asynq never inherit it or
// Redis.
package steadyasynq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/steadyllm/steady/deferral"
	"github.com/steadyllm/steady/providers"
)

// RetryDelayFunc returns an asynq.RetryDelayFunc that retries a task failed by a deferred
// call at the time its decision says (the server's hint, a rate-limit reset, the circuit's
// next probe, or the policy's backoff for the attempt), and any other failure as fallback
// does (asynq.DefaultRetryDelayFunc when nil; its delays are used as they are).
//
// The delay for a deferral is never below a second and never above deferral.MaxDelay plus a
// second: a decision whose time has passed (or was made by hand without one) comes back after
// deferral.MinDelay and the second, not at once in a loop; one centuries away after a day,
// never a negative delay from an overflow.
func RetryDelayFunc(fallback asynq.RetryDelayFunc) asynq.RetryDelayFunc {
	if fallback == nil {
		fallback = asynq.DefaultRetryDelayFunc
	}
	return func(n int, err error, t *asynq.Task) time.Duration {
		var de *deferral.Error
		if errors.As(err, &de) && de.Decision.Retry {
			// asynq keeps a retry's time in whole seconds, rounded down: add one, so the task
			// never comes back before the due time (where it would meet the same pause again).
			// Wait is within [MinDelay, MaxDelay], so the sum neither overflows nor reaches 0.
			return de.Decision.Wait(time.Now()) + time.Second
		}
		return fallback(n, err, t)
	}
}

// IsFailure is asynq's Config.IsFailure: a deferral caused by the provider's capacity — a
// rate limit, a pause after one, an open circuit, a full bulkhead — or by a budget that has no
// room until its window ends (budget_exhausted) is not the task's failure,
// so asynq retries it at the due time without counting an attempt against MaxRetry. Every
// other error counts. (asynq does not ask it for a task whose retries are used up: see
// Result.)
func IsFailure(err error) bool {
	var de *deferral.Error
	if !errors.As(err, &de) || !de.Decision.Retry {
		return true
	}
	return !freeWait(de.Decision.Kind)
}

// ErrNoRetriesLeft is in the error Result returns for a capacity (or budget) deferral that
// asynq will archive because the task has no retries left (with asynq.SkipRetry and the
// call's error):
// the task was enqueued with MaxRetry(0), or used up its retries on counted failures.
// Match it with errors.Is, e.g. in Config.ErrorHandler, to alert on the misconfiguration.
var ErrNoRetriesLeft = errors.New("steadyasynq: a capacity deferral of a task with no retries left is archived")

// Result is what a handler returns for the error of a deferred call, given the handler's
// context: nil for nil; for a permanent failure (a bad request, a refused key, an exhausted
// quota) the error wrapped with asynq.SkipRetry, so the task is archived at once; otherwise
// the error, which RetryDelayFunc schedules.
//
// A capacity or budget deferral (see IsFailure) of a task with no retries left — its retry count at or
// above its MaxRetry, as ctx says — would be archived by asynq as if the provider's limit
// were the task's failure. Result then returns the error wrapped with ErrNoRetriesLeft and
// asynq.SkipRetry, with a message that says why: for MaxRetry(0), "asynq archives a task
// enqueued with MaxRetry(0) at its first failure, capacity deferrals included: enqueue LLM
// tasks with MaxRetry(1) or more". A ctx that is not a handler's (no retry counts in it) is
// taken as a task with retries left, as is a nil ctx.
func Result(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var de *deferral.Error
	if !errors.As(err, &de) {
		return err
	}
	if !de.Decision.Retry {
		return fmt.Errorf("%w (%w)", err, asynq.SkipRetry)
	}
	if !freeWait(de.Decision.Kind) {
		return err
	}
	if ctx == nil {
		return err // no handler's context: taken as a task with retries left
	}
	retried, ok := asynq.GetRetryCount(ctx)
	maxRetry, ok2 := asynq.GetMaxRetry(ctx)
	if !ok || !ok2 || retried < maxRetry {
		return err
	}
	why := "asynq archives a task enqueued with MaxRetry(0) at its first failure, capacity deferrals included: " +
		"enqueue LLM tasks with MaxRetry(1) or more"
	if maxRetry > 0 {
		why = fmt.Sprintf("the task used up its MaxRetry(%d) on counted failures, and asynq archives such a task "+
			"at its next failure, capacity deferrals included", maxRetry)
	}
	return &noRetriesLeft{err: err, why: why}
}

// noRetriesLeft is the error of a capacity or budget deferral that asynq will archive.
type noRetriesLeft struct {
	err error
	why string
}

func (e *noRetriesLeft) Error() string {
	return e.err.Error() + " (archived: " + e.why + ")"
}

// Unwrap returns the call's error, ErrNoRetriesLeft and asynq.SkipRetry.
func (e *noRetriesLeft) Unwrap() []error { return []error{e.err, ErrNoRetriesLeft, asynq.SkipRetry} }

// freeWait reports whether a failure of kind k is a wait rather than the task's failure: the
// provider's capacity, or a budget that has no room until its window ends.
func freeWait(k providers.ErrorKind) bool {
	switch k {
	case providers.KindRateLimited, providers.KindCircuitOpen, providers.KindBulkheadFull, providers.KindBudgetExhausted:
		return true
	}
	return false
}

// Attempt returns the attempt number of the task being handled (1 for the first run), for
// client.Deferred. Runs that IsFailure did not count share a number. A ctx that is not a
// handler's (nil included) gives 1.
func Attempt(ctx context.Context) int {
	if ctx == nil {
		return 1
	}
	n, _ := asynq.GetRetryCount(ctx)
	return n + 1
}
