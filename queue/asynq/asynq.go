// Package steadyasynq hands the retries of LLM calls made in deferred mode
// (client.Deferred) to asynq (github.com/hibiken/asynq), so a worker never sleeps through a
// "retry in 40 s": the task comes back at the time the call's deferral decision says.
//
// Set the server's Config with RetryDelayFunc and IsFailure, and return Result(err) from the
// handler, calling steady with the task's attempt number:
//
//	srv := asynq.NewServer(redisOpt, asynq.Config{
//		RetryDelayFunc: steadyasynq.RetryDelayFunc(nil),
//		IsFailure:      steadyasynq.IsFailure,
//	})
//	mux.HandleFunc("summarise", func(ctx context.Context, t *asynq.Task) error {
//		_, err := c.Chat(ctx, req, client.Deferred(steadyasynq.Attempt(ctx)))
//		return steadyasynq.Result(err)
//	})
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
// does (asynq.DefaultRetryDelayFunc when nil).
func RetryDelayFunc(fallback asynq.RetryDelayFunc) asynq.RetryDelayFunc {
	if fallback == nil {
		fallback = asynq.DefaultRetryDelayFunc
	}
	return func(n int, err error, t *asynq.Task) time.Duration {
		var de *deferral.Error
		if errors.As(err, &de) && de.Decision.Retry {
			// asynq keeps a retry's time in whole seconds, rounded down: add one, so the task
			// never comes back before the due time (where it would meet the same pause again).
			return max(time.Until(de.Decision.At), 0) + time.Second
		}
		return fallback(n, err, t)
	}
}

// IsFailure is asynq's Config.IsFailure: a deferral caused by the provider's capacity — a
// rate limit, a pause after one, an open circuit, a full bulkhead — is not the task's failure,
// so asynq retries it at the due time without counting an attempt against MaxRetry. Every
// other error counts.
func IsFailure(err error) bool {
	var de *deferral.Error
	if !errors.As(err, &de) || !de.Decision.Retry {
		return true
	}
	switch de.Decision.Kind {
	case providers.KindRateLimited, providers.KindCircuitOpen, providers.KindBulkheadFull:
		return false
	}
	return true
}

// Result is what a handler returns for the error of a deferred call: nil for nil; for a
// permanent failure (a bad request, a refused key, an exhausted quota) the error wrapped with
// asynq.SkipRetry, so the task is archived at once; otherwise the error, which
// RetryDelayFunc schedules.
func Result(err error) error {
	if err == nil {
		return nil
	}
	var de *deferral.Error
	if errors.As(err, &de) && !de.Decision.Retry {
		return fmt.Errorf("%w (%w)", err, asynq.SkipRetry)
	}
	return err
}

// Attempt returns the attempt number of the task being handled (1 for the first run), for
// client.Deferred. Runs that IsFailure did not count share a number.
func Attempt(ctx context.Context) int {
	n, _ := asynq.GetRetryCount(ctx)
	return n + 1
}
