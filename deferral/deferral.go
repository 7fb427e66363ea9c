// Package deferral turns a failed LLM call into a decision a job queue can act on: try again
// at time T, or never, and why. A background job that calls an LLM should not hold a worker
// and a bulkhead slot while it sleeps through a "retry in 40 s": it should hand the retry to
// its queue (River's JobSnooze, asynq's RetryDelayFunc, gue's ErrRescheduleJobIn, Temporal's
// NextRetryDelay) and free the worker. Decide computes when.
//
//	d := deferral.Decider{Policy: batchPolicy}
//	dec := d.Decide(err, job.Attempt)
//	if !dec.Retry { return permanentFailure(err) }
//	return river.JobSnooze(dec.Wait(time.Now()))
//
// Every decision's delay lies within [Decider.Floor, MaxDelay]: a hint, a rate-limit reset or
// a circuit's probe that is already due (or due within the floor) retries at the floor, never
// at once in a loop; one that is days or centuries away retries after MaxDelay, never overflows.
//
// For a fallback chain (a *client.ChainError) the decision is the earliest time any provider
// of the chain may serve, and Decision.Provider names the provider whose failure gave it.
//
// The decision is pure: given the same error, attempt, clock and random source it is the
// same. The client's deferred mode (client.Deferred) returns an *Error carrying it.
//
// A job that asks for a long answer can also wait for it without holding a connection: it
// asks in background mode, hands its queue the Pending that Decider.Defer returns (the
// stored answer to look at, and when), and each later run looks once with Decider.Await —
// never sending the prompt again (see await.go; queue/asynq and queue/river wrap it whole).
package deferral

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/internal/signals"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// MaxDelay is the longest delay of any decision: the cap on servers' hints
// (signals.MaxHint, 24 h). A longer wait — a rate-limit reset a year away, a pause or a
// circuit probe computed far ahead, a bogus date — is cut to it: a job that comes back after
// a day and meets the same limit is deferred again, which costs one call a day; a job parked
// for centuries is lost, and a queue that adds to a saturated duration overflows into a
// negative delay.
const MaxDelay = signals.MaxHint

// MinDelay is the shortest delay of any decision, whatever the policy: a policy whose base
// delay is 0 would otherwise retry a deferred job at once, in a loop. It is far below the
// backoff of any policy meant for jobs and far above a loop.
const MinDelay = 100 * time.Millisecond

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
	// is false. Decider keeps Delay within [Decider.Floor, MaxDelay].
	At    time.Time
	Delay time.Duration
	// Attempt is the attempt number the decision was made for (the one that failed).
	Attempt int
	// Source says where At came from; Reason explains it in a few words (and says when the
	// delay was raised to the floor or cut to MaxDelay).
	Source Source
	Reason string
	// Kind is the kind of the failure that decided, when it is a *providers.Error ("" for
	// another error); Provider is the name of the provider that failed so. For a fallback
	// chain that may pass, they are those of the failure that gave the earliest time; for one
	// that will not, those of the chain's cause.
	Kind     providers.ErrorKind
	Provider string
}

func (d Decision) String() string {
	who := ""
	if d.Provider != "" {
		who = d.Provider + ": "
	}
	if !d.Retry {
		return fmt.Sprintf("attempt %d: do not retry (%s%s)", d.Attempt, who, d.Reason)
	}
	return fmt.Sprintf("attempt %d: retry in %s (%s%s: %s)", d.Attempt, d.Delay.Round(time.Millisecond), who, d.Source, d.Reason)
}

// Wait returns how long from now a queue should wait before the retry: the time until At,
// kept within [MinDelay, MaxDelay]. An At already past (a decision handed to the queue late,
// or made by hand) waits MinDelay, so a queue never reruns a job at once in a loop; an At
// centuries away (which time.Until saturates, and a queue's own addition would overflow)
// waits MaxDelay. A decision with a zero At (made by hand) waits its Delay, within the same
// bounds. It is 0 when Retry is false.
func (d Decision) Wait(now time.Time) time.Duration {
	if !d.Retry {
		return 0
	}
	w := d.Delay
	if !d.At.IsZero() {
		w = d.At.Sub(now) // saturates rather than overflows
	}
	return min(max(w, MinDelay), MaxDelay)
}

// Decider computes decisions. The zero value uses resilience.DefaultOptions' policy, the wall
// clock and math/rand/v2.
type Decider struct {
	// Policy gives the backoff when the failure carries no hint, and the floor: a named policy
	// (resilience.NewPolicy), or nil for the default.
	Policy *resilience.Policy
	// Now and Random replace the clock and the random source of the jitter (a value in
	// [0, 1)), for determinism.
	Now    func() time.Time
	Random func() float64
	// PollFirst, PollMax and MaxAwait shape a job's wait for a background answer (Defer,
	// Await): the first look PollFirst after the answer started, each later one twice as long
	// after the previous, at most PollMax apart (both jittered by ±20 %), and no more waiting
	// MaxAwait after it started. 0 means DefaultPollFirst, DefaultPollMax, DefaultMaxAwait; a
	// PollMax below PollFirst is PollFirst.
	PollFirst, PollMax, MaxAwait time.Duration
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

func (d Decider) policy() *resilience.Policy {
	if d.Policy == nil {
		return defaultPolicy
	}
	return d.Policy
}

func (d Decider) backoff(attempt int) time.Duration {
	r := rand.Float64
	if d.Random != nil {
		r = d.Random
	}
	return d.policy().Backoff(attempt, r())
}

// Floor returns the shortest delay of any decision: the shortest backoff the policy can give
// (its first retry's, with the least jitter: Policy.Backoff(1, 0)), and never below MinDelay.
// A hint, a reset or a circuit probe that is due sooner — or already past — retries at the
// floor: the job comes back as soon as a first retry would, not at once. A backoff is never
// raised by it, unless the policy's own is below MinDelay (a base delay of 0).
func (d Decider) Floor() time.Duration {
	return max(d.policy().Backoff(1, 0), MinDelay)
}

// maxVisit and maxDepth bound the errors Decide looks at in one error's tree, and how deep,
// so that a hostile tree (a cycle of Unwrap, a huge fan-out) cannot hang it: a real one — a
// chain of a few dozen providers, each failure wrapped a few times — is far smaller.
const (
	maxVisit = 4096
	maxDepth = 32
)

// Decide returns the decision for err, the failure of attempt number attempt (1 for the
// first; zero or negative count as 1) of a job. A nil err is no failure and never retried.
// An error that holds no *providers.Error (a network failure) retries after the backoff.
//
// Otherwise Decide looks at every *providers.Error in err's tree (through Unwrap() error and
// Unwrap() []error: for a *client.ChainError, its Cause and every provider's failure):
//
//   - when the first of them (a chain's Cause) is a failure the request caused — not
//     Temporary and not one that falls back, e.g. a bad request or a prompt too long — it is
//     permanent: no provider will serve that request;
//   - otherwise each failure that may pass gives a time — the server's hint (RetryAfter; for
//     a rate limit without one, the reset of the spent budget), the circuit's next probe, or
//     the policy's backoff for attempt; a canceled call, or one whose whole-call deadline
//     (client.WithCallTimeout, CallTimeoutSeconds) ran out, the backoff, the Reason saying
//     so — and the decision is the earliest of them, so a chain comes back when its first
//     provider can serve;
//   - when none may pass (a refused key and an exhausted quota) it is permanent.
//
// Every delay is kept within [Floor, MaxDelay] (see Decision.Reason for when it was).
func (d Decider) Decide(err error, attempt int) Decision {
	now := d.now()
	attempt = max(attempt, 1)
	if err == nil {
		return Decision{Attempt: attempt, Source: SourcePermanent, Reason: "the call did not fail"}
	}
	failures := providerErrors(err)
	if len(failures) == 0 {
		return d.after(now, attempt, d.backoff(attempt), SourceBackoff, "not a provider error: backoff", nil)
	}
	cause := failures[0]
	if !mayPass(cause.Kind) && !cause.Kind.FallsBack() {
		return permanent(attempt, cause, string(cause.Kind)+" will not pass by retrying")
	}
	var best Decision
	n := 0
	for _, f := range failures {
		if !mayPass(f.Kind) {
			continue
		}
		dec := d.decideOne(now, attempt, f)
		if n == 0 || dec.At.Before(best.At) { // ties go to the first: the chain's cause
			best = dec
		}
		n++
	}
	switch {
	case n == 0 && len(failures) == 1:
		return permanent(attempt, cause, string(cause.Kind)+" will not pass by retrying")
	case n == 0:
		kinds := make([]string, len(failures))
		for i, f := range failures {
			kinds[i] = string(f.Kind)
		}
		return permanent(attempt, cause, "no failure will pass by retrying: "+strings.Join(kinds, ", "))
	case n > 1:
		best.Reason += fmt.Sprintf("; the earliest of %d providers that may serve", n)
	}
	return best
}

// mayPass reports whether a failure of kind k may pass if the job runs again: a Temporary
// kind, or the caller's own cancellation (a worker shut down mid-call), which says nothing
// about the request.
func mayPass(k providers.ErrorKind) bool {
	return k.Temporary() || k == providers.KindCanceled
}

func permanent(attempt int, pe *providers.Error, why string) Decision {
	dec := Decision{Attempt: attempt, Source: SourcePermanent, Reason: why}
	if pe != nil {
		dec.Kind, dec.Provider = pe.Kind, pe.Provider
	}
	return dec
}

// decideOne returns the time at which the failure pe, which may pass, may pass.
func (d Decider) decideOne(now time.Time, attempt int, pe *providers.Error) Decision {
	if pe.Kind == providers.KindCanceled {
		return d.after(now, attempt, d.backoff(attempt), SourceBackoff, "the call was canceled: backoff", pe)
	}
	if pe.RetryAfter > 0 {
		src, why := SourceHint, "the server's hint"
		switch {
		case pe.Kind == providers.KindCircuitOpen:
			src, why = SourceCircuit, "the circuit's next probe"
		case errors.Is(pe, resilience.ErrCoolingDown):
			why = "the end of the rate-limit pause"
		case pe.Kind == providers.KindBudgetExhausted:
			why = budgetReason(pe)
		}
		return d.after(now, attempt, pe.RetryAfter, src, why, pe)
	}
	if pe.Kind == providers.KindRateLimited && pe.RateLimit != nil {
		if at, ok := spentReset(pe.RateLimit); ok {
			// A reset already past means the budget has room again: the floor, not at once.
			return d.after(now, attempt, at.Sub(now), SourceHint, "the rate-limit reset", pe)
		}
	}
	why := "the policy's backoff"
	var te *resilience.TimeoutError
	if pe.Kind == providers.KindTimeout && errors.As(pe.Err, &te) && te.Limit == resilience.TimeoutCall {
		// The job's own budget ran out, not the provider's patience: the next run gets a whole
		// deadline again, after the usual backoff.
		why = fmt.Sprintf("the call's deadline (%s) ran out: the policy's backoff", te.After)
	}
	return d.after(now, attempt, d.backoff(attempt), SourceBackoff, why, pe)
}

// budgetReason says what a call refused by a budget waits for, naming the budget when the
// error says which (a cost.Refusal, as every refusal of a cost.Ledger carries).
func budgetReason(pe *providers.Error) string {
	var r *cost.Refusal
	if !errors.As(pe.Err, &r) || r == nil {
		return "the end of the budget's window"
	}
	switch r.Code {
	case cost.CodeStoreUnavailable:
		return fmt.Sprintf("budget %q: the spend store's next try (failing closed)", r.Budget)
	case cost.CodeKeysFull:
		return fmt.Sprintf("budget %q keeps as many keys as it may: the end of its %s", r.Budget, r.Window)
	}
	return fmt.Sprintf("budget %q has room again: the end of its %s", r.Budget, r.Window)
}

// providerErrors returns every *providers.Error in err's tree, each once, in the order
// errors.As visits them (depth first; a *client.ChainError's Cause first). It does not look
// inside a *providers.Error, whose cause is the same failure. It visits at most maxVisit
// errors, none deeper than maxDepth.
func providerErrors(err error) []*providers.Error {
	var out []*providers.Error
	seen := map[*providers.Error]bool{}
	budget := maxVisit
	var walk func(error, int)
	walk = func(e error, depth int) {
		if e == nil || budget <= 0 || depth > maxDepth {
			return
		}
		budget--
		pe, ok := e.(*providers.Error)
		if !ok {
			// An error may present itself as a *providers.Error through an As method, as
			// errors.As would let it.
			if x, isAs := e.(interface{ As(any) bool }); isAs && x.As(&pe) {
				ok = true
			}
		}
		if ok {
			if pe != nil && !seen[pe] {
				seen[pe] = true
				out = append(out, pe)
			}
			return
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap(), depth+1)
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x, depth+1)
			}
		}
	}
	walk(err, 0)
	return out
}

// DecideResponse returns the decision for the outcome of a bare pipeline's call (an
// http.Client over resilience.Pipeline.Wrap): its last response, or its error. A response
// below 400 (or none) is no failure; a retryable status (429, 5xx but 501) retries at the
// server's hint or after the backoff; another status is permanent. A pipeline rejection
// (circuit open, rate-limit pause) retries when it says. Every delay is kept within [Floor,
// MaxDelay], as Decide's.
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
			return d.after(now, attempt, hinted.RetryAfterHint(), src, "the pipeline's hint", nil)
		}
		return d.after(now, attempt, d.backoff(attempt), SourceBackoff, "transport error: backoff", nil)
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
		return d.after(now, attempt, h, SourceHint, "the server's hint", nil)
	}
	if rl := providers.ParseRateLimit(resp.Header, now); rl != nil && resp.StatusCode == http.StatusTooManyRequests {
		if at, ok := spentReset(rl); ok {
			return d.after(now, attempt, at.Sub(now), SourceHint, "the rate-limit reset", nil)
		}
	}
	return d.after(now, attempt, d.backoff(attempt), SourceBackoff, "the policy's backoff", nil)
}

// after returns the decision to retry after delay, kept within [Floor, MaxDelay]. pe is the
// failure that decided, nil when it is not a *providers.Error.
func (d Decider) after(now time.Time, attempt int, delay time.Duration, src Source, why string, pe *providers.Error) Decision {
	if floor := d.Floor(); delay < floor {
		if delay <= 0 {
			why += ", already due"
		}
		why += fmt.Sprintf(", raised to the floor (%s)", floor)
		delay = floor
	} else if delay > MaxDelay {
		why += fmt.Sprintf(", cut to the longest deferral (%s)", MaxDelay)
		delay = MaxDelay
	}
	dec := Decision{Retry: true, At: now.Add(delay), Delay: delay, Attempt: attempt, Source: src, Reason: why}
	if pe != nil {
		dec.Kind, dec.Provider = pe.Kind, pe.Provider
	}
	return dec
}

// spentReset returns the latest reset among the budgets of rl that are spent (Remaining 0
// with a Limit): when a retry can pass. It may be past, or centuries away: after bounds it.
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
// errors.As finds it; errors.As and errors.Is see through it to Err. A nil Err reads as
// "deferred call failed".
type Error struct {
	Decision Decision
	Err      error
}

func (e *Error) Error() string {
	msg := "deferred call failed"
	if e.Err != nil {
		msg = e.Err.Error()
	}
	return msg + " — deferred: " + e.Decision.String()
}

// Unwrap returns the call's failure.
func (e *Error) Unwrap() error { return e.Err }
