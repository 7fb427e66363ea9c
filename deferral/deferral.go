// Package deferral turns a failed LLM call into a decision a job queue can act on: try again
// at time T, or never, and why. A background job that calls an LLM should not hold a worker
// and a bulkhead slot while it sleeps through a "retry in 40 s": it should hand the retry to
// its queue (River's JobSnooze, asynq's RetryDelayFunc, gue's ErrRescheduleJobIn, Temporal's
// NextRetryDelay) and free the worker. Decide computes when.
//
//	d := deferral.Decider{Policy: batchPolicy}
//	dec := d.Decide(err, job.Attempt)
//	if !dec.Retry { return permanentFailure(err) }
//	return river.JobSnooze(dec.Delay)
//
// The decision is pure: given the same error, attempt, clock and random source it is the
// same. The client's deferred mode (client.Deferred) returns an *Error carrying it.
package deferral

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/steadyllm/steady/internal/signals"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// Source says where a decision's time came from.
type Source string

// The sources of a retry time, in the order they are consulted.
const (
	// SourceHint: the server said when (Retry-After, retry-after-ms, a rate-limit reset), or
	// the pipeline did (the end of a rate-limit pause, the time a budget has room).
	SourceHint Source = "server_hint"
	// SourceCircuit: the provider's circuit is open; T is its next probe.
	SourceCircuit Source = "circuit_probe"
	// SourceBackoff: the policy's backoff for the job's attempt number.
	SourceBackoff Source = "backoff"
	// SourcePermanent: no retry will cure the failure.
	SourcePermanent Source = "permanent"
)

// Decision is what to do with a failed call.
type Decision struct {
	// Retry is false when the failure is permanent: a bad request, a refused key, an
	// exhausted quota, a model that does not exist, filtered content.
	Retry bool
	// At is when to try again and Delay how long from the decision's now; zero when Retry
	// is false.
	At    time.Time
	Delay time.Duration
	// Attempt is the attempt number the decision was made for (the one that failed).
	Attempt int
	// Source says where At came from; Reason explains it in a few words.
	Source Source
	Reason string
	// Kind is the failure's kind, when it is a *providers.Error ("" otherwise).
	Kind providers.ErrorKind
}

func (d Decision) String() string {
	if !d.Retry {
		return fmt.Sprintf("attempt %d: do not retry (%s)", d.Attempt, d.Reason)
	}
	return fmt.Sprintf("attempt %d: retry in %s (%s: %s)", d.Attempt, d.Delay.Round(time.Millisecond), d.Source, d.Reason)
}

// Decider computes decisions. The zero value uses resilience.DefaultOptions' policy, the wall
// clock and math/rand/v2.
type Decider struct {
	// Policy gives the backoff when the failure carries no hint: a named policy
	// (resilience.NewPolicy), or nil for the default.
	Policy *resilience.Policy
	// Now and Random replace the clock and the random source of the jitter (a value in
	// [0, 1)), for determinism.
	Now    func() time.Time
	Random func() float64
}

var defaultPolicy = func() *resilience.Policy {
	p, err := resilience.NewPolicy("default", resilience.DefaultOptions())
	if err != nil {
		panic(err)
	}
	return p
}()

func (d Decider) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

func (d Decider) backoff(attempt int) time.Duration {
	p := d.Policy
	if p == nil {
		p = defaultPolicy
	}
	r := rand.Float64
	if d.Random != nil {
		r = d.Random
	}
	return p.Backoff(attempt, r())
}

// Decide returns the decision for err, the failure of attempt number attempt (1 for the
// first) of a job. A *providers.Error (or a *client.ChainError, through errors.As, which finds
// the failure that explains the chain) decides by its kind: a kind that is not Temporary is
// permanent; otherwise the time is the server's hint (RetryAfter; for a rate limit without
// one, the reset of the spent budget), the circuit's next probe, or the policy's backoff for
// attempt. Any other error (a network failure) retries after the backoff. A nil err is no
// failure and never retried.
func (d Decider) Decide(err error, attempt int) Decision {
	now := d.now()
	attempt = max(attempt, 1)
	if err == nil {
		return Decision{Attempt: attempt, Source: SourcePermanent, Reason: "the call did not fail"}
	}
	var pe *providers.Error
	if !errors.As(err, &pe) {
		return d.after(now, attempt, d.backoff(attempt), SourceBackoff, "not a provider error: backoff", "")
	}
	if pe.Kind == providers.KindCanceled {
		return d.after(now, attempt, d.backoff(attempt), SourceBackoff, "the call was canceled: backoff", pe.Kind)
	}
	if !pe.Kind.Temporary() {
		return Decision{Attempt: attempt, Source: SourcePermanent, Kind: pe.Kind,
			Reason: string(pe.Kind) + " will not pass by retrying"}
	}
	if pe.RetryAfter > 0 {
		src, why := SourceHint, "the server's hint"
		switch {
		case pe.Kind == providers.KindCircuitOpen:
			src, why = SourceCircuit, "the circuit's next probe"
		case errors.Is(pe, resilience.ErrCoolingDown):
			why = "the end of the rate-limit pause"
		}
		return d.after(now, attempt, pe.RetryAfter, src, why, pe.Kind)
	}
	if pe.Kind == providers.KindRateLimited && pe.RateLimit != nil {
		if at, ok := spentReset(pe.RateLimit); ok && at.After(now) {
			return d.after(now, attempt, at.Sub(now), SourceHint, "the rate-limit reset", pe.Kind)
		}
	}
	return d.after(now, attempt, d.backoff(attempt), SourceBackoff, "the policy's backoff", pe.Kind)
}

// DecideResponse returns the decision for the outcome of a bare pipeline's call (an
// http.Client over resilience.Pipeline.Wrap): its last response, or its error. A response
// below 400 is no failure; a retryable status (429, 5xx but 501) retries at the server's hint
// or after the backoff; another status is permanent. A pipeline rejection (circuit open,
// rate-limit pause) retries when it says.
func (d Decider) DecideResponse(resp *http.Response, err error, attempt int) Decision {
	now := d.now()
	attempt = max(attempt, 1)
	if err != nil {
		var hinted interface{ RetryAfterHint() time.Duration }
		if errors.As(err, &hinted) && hinted.RetryAfterHint() > 0 {
			src := SourceHint
			if errors.Is(err, resilience.ErrCircuitOpen) {
				src = SourceCircuit
			}
			return d.after(now, attempt, hinted.RetryAfterHint(), src, "the pipeline's hint", "")
		}
		return d.after(now, attempt, d.backoff(attempt), SourceBackoff, "transport error: backoff", "")
	}
	if resp == nil || resp.StatusCode < http.StatusBadRequest {
		return Decision{Attempt: attempt, Source: SourcePermanent, Reason: "the call did not fail"}
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusRequestTimeout, http.StatusBadGateway, http.StatusServiceUnavailable,
		http.StatusGatewayTimeout, http.StatusInternalServerError, 529:
	default:
		return Decision{Attempt: attempt, Source: SourcePermanent,
			Reason: fmt.Sprintf("status %d will not pass by retrying", resp.StatusCode)}
	}
	if h, ok := signals.RetryAfter(resp.Header, now); ok {
		return d.after(now, attempt, h, SourceHint, "the server's hint", "")
	}
	if rl := providers.ParseRateLimit(resp.Header, now); rl != nil && resp.StatusCode == http.StatusTooManyRequests {
		if at, ok := spentReset(rl); ok && at.After(now) {
			return d.after(now, attempt, at.Sub(now), SourceHint, "the rate-limit reset", "")
		}
	}
	return d.after(now, attempt, d.backoff(attempt), SourceBackoff, "the policy's backoff", "")
}

func (d Decider) after(now time.Time, attempt int, delay time.Duration, src Source, why string, kind providers.ErrorKind) Decision {
	return Decision{Retry: true, At: now.Add(delay), Delay: delay, Attempt: attempt, Source: src, Reason: why, Kind: kind}
}

// spentReset returns the latest reset among the budgets of rl that are spent (Remaining 0
// with a Limit): when a retry can pass.
func spentReset(rl *providers.RateLimit) (time.Time, bool) {
	var at time.Time
	for _, b := range []providers.RateBudget{rl.Requests, rl.Tokens, rl.InputTokens, rl.OutputTokens} {
		if b.Limit > 0 && b.Remaining == 0 && b.Reset.After(at) {
			at = b.Reset
		}
	}
	return at, !at.IsZero()
}

// Error is the failure of a call made in deferred mode (client.Deferred): the failure itself
// (Err, a *providers.Error or *client.ChainError) and the decision for the job's queue.
// errors.As finds it; errors.As and errors.Is see through it to Err.
type Error struct {
	Decision Decision
	Err      error
}

func (e *Error) Error() string { return e.Err.Error() + " — deferred: " + e.Decision.String() }

// Unwrap returns the call's failure.
func (e *Error) Unwrap() error { return e.Err }
