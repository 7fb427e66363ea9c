package resilience

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/steadyllm/steady/internal/redact"
)

// Sentinel errors for the conditions the pipeline creates. Match them with errors.Is; they
// are found through *url.Error too, so a plain http.Client's error matches.
var (
	// ErrCircuitOpen: the circuit is open, half-open with every probe slot taken, or isolated,
	// so the call was rejected without touching the network. The error is a *CircuitOpenError.
	ErrCircuitOpen = errors.New("resilience: circuit open")
	// ErrBulkheadRejected: every slot was busy and the queue was full, or the wait for a slot
	// outlasted BulkheadQueueTimeoutSeconds. The error is a *BulkheadRejectedError.
	ErrBulkheadRejected = errors.New("resilience: bulkhead full")
	// ErrTimeout: one of the pipeline's own time limits ran out. The error is a *TimeoutError
	// and also matches context.DeadlineExceeded. The caller's own cancellation or deadline is
	// never reported as ErrTimeout.
	ErrTimeout = errors.New("resilience: timeout")
	// ErrRedirect: the server answered with a redirect, which the pipeline never follows, so
	// that no credential header and no request body ever reaches another origin. The error is
	// a *RedirectError.
	ErrRedirect = errors.New("resilience: redirect refused")
	// ErrCoolingDown: the pipeline is pausing after a rate limit (RateLimitCooldown) and the
	// call could not wait for the pause to end, so nothing was sent. The error is a
	// *CooldownError.
	ErrCoolingDown = errors.New("resilience: cooling down after a rate limit")
	// ErrInvalidRequest: the request could not be sent as it is (a header HTTP cannot carry),
	// the caller's mistake: it never counts against the circuit and is never retried. The
	// error is an *InvalidRequestError.
	ErrInvalidRequest = errors.New("resilience: invalid request")
)

// InvalidRequestError is returned when the base transport refused a request the caller made
// wrong — a header whose name is not a token or whose value holds a control character — so
// nothing reached the provider.
type InvalidRequestError struct {
	Pipeline string
	Header   string // the header's name, as the request spelt it
	Err      error  // the transport's error
}

func (e *InvalidRequestError) Error() string {
	return fmt.Sprintf("resilience: %q did not send the request: header %s cannot be carried by HTTP (a control "+
		"character in its value, or a name that is not a token)", e.Pipeline, strconv.Quote(redact.Clip(e.Header, 64)))
}

// Unwrap returns the transport's error.
func (e *InvalidRequestError) Unwrap() error { return e.Err }

// Is reports whether target is ErrInvalidRequest.
func (e *InvalidRequestError) Is(target error) bool { return target == ErrInvalidRequest }

// ErrorKind names the failure in the vocabulary of steady's error kinds: the request is wrong.
func (e *InvalidRequestError) ErrorKind() string { return "bad_request" }

// CooldownError is returned when a call meets a rate-limit pause longer than it may wait.
type CooldownError struct {
	Pipeline string
	// RetryAfter is the time until the pause ends, or until the budget has room.
	RetryAfter time.Duration
	// Budget is "" for the pause after a 429 (RateLimitCooldown), "requests" or "tokens" when
	// the pipeline's own pacing found no room in that per-minute limit.
	Budget string
	// Deadline, when not zero, is the context's deadline that the wait would have passed: why
	// the call could not wait (a wait the policy and Call.MaxWait allowed). The steady client
	// reads it to tell its whole-call deadline's refusals from the others.
	Deadline time.Time

	probing bool // refused as another call probes a pause cut at its longest, whatever the deadline
}

func (e *CooldownError) Error() string {
	if e.Budget != "" {
		return fmt.Sprintf("resilience: %q has no room in its %s per minute for %s more: call not sent",
			e.Pipeline, e.Budget, e.RetryAfter.Round(time.Millisecond))
	}
	return fmt.Sprintf("resilience: %q is cooling down after a rate limit for %s more: call not sent",
		e.Pipeline, e.RetryAfter.Round(time.Millisecond))
}

// Is reports whether target is ErrCoolingDown.
func (e *CooldownError) Is(target error) bool { return target == ErrCoolingDown }

// ErrorKind names the failure in the vocabulary of steady's error kinds: a rate limit.
func (e *CooldownError) ErrorKind() string { return "rate_limited" }

// RetryAfterHint is the time until the pause ends.
func (e *CooldownError) RetryAfterHint() time.Duration { return e.RetryAfter }

// CircuitOpenError is returned when the circuit breaker rejects a call.
type CircuitOpenError struct {
	Pipeline string       // the pipeline's name
	State    CircuitState // CircuitOpen, CircuitHalfOpen (no probe slot left) or CircuitIsolated
	// RetryAfter is the time until the circuit lets a probe through; 0 when unknown or
	// isolated (only Reset ends isolation).
	RetryAfter time.Duration
}

func (e *CircuitOpenError) Error() string {
	msg := fmt.Sprintf("resilience: circuit %s for %q", e.State, e.Pipeline)
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(", next probe in %s", e.RetryAfter.Round(time.Millisecond))
	}
	return msg
}

// Is reports whether target is ErrCircuitOpen.
func (e *CircuitOpenError) Is(target error) bool { return target == ErrCircuitOpen }

// ErrorKind names the failure in the vocabulary of steady's error kinds (providers.ErrorKind),
// so that the first code to see the error maps it without knowing this package.
func (e *CircuitOpenError) ErrorKind() string { return "circuit_open" }

// RetryAfterHint is the time until the circuit lets a probe through.
func (e *CircuitOpenError) RetryAfterHint() time.Duration { return e.RetryAfter }

// BulkheadRejectedError is returned when the bulkhead turns a call away.
type BulkheadRejectedError struct {
	Pipeline string
	// MaxConcurrency is the limit in force (the adaptive limit, with AdaptiveConcurrency).
	MaxConcurrency int
	MaxQueue       int
	// Waited is how long the call queued before it was rejected: 0 when the queue was full,
	// the queue timeout, or the time it waited before it was shed.
	Waited time.Duration
	// Reason is why: a full queue, the queue timeout, or shed for a call of a higher class.
	Reason BulkheadRejection
	// Priority is the class of the call.
	Priority Priority
	// RetryAfter estimates when a slot would be free for the call: the pace at which slots
	// were freed while calls waited, times the calls of its class or higher ahead of it. 0
	// when the bulkhead has not seen calls wait yet, and cannot tell.
	RetryAfter time.Duration
}

func (e *BulkheadRejectedError) Error() string {
	if e.Reason == RejectedShed {
		return fmt.Sprintf("resilience: bulkhead of %q: %s call shed from a full queue for a call of another class (%d in flight)",
			e.Pipeline, e.Priority, e.MaxConcurrency)
	}
	if e.Waited > 0 {
		return fmt.Sprintf("resilience: bulkhead of %q: no slot free after waiting %s (%d in flight)",
			e.Pipeline, e.Waited.Round(time.Millisecond), e.MaxConcurrency)
	}
	return fmt.Sprintf("resilience: bulkhead of %q full (%d in flight, %d queued)",
		e.Pipeline, e.MaxConcurrency, e.MaxQueue)
}

// Is reports whether target is ErrBulkheadRejected.
func (e *BulkheadRejectedError) Is(target error) bool { return target == ErrBulkheadRejected }

// ErrorKind names the failure in the vocabulary of steady's error kinds.
func (e *BulkheadRejectedError) ErrorKind() string { return "bulkhead_full" }

// RetryAfterHint is the estimate of when a slot would be free (RetryAfter), 0 when unknown.
func (e *BulkheadRejectedError) RetryAfterHint() time.Duration { return e.RetryAfter }

// TimeLimit names one of the pipeline's time limits.
type TimeLimit string

// The pipeline's time limits.
const (
	TimeoutTotal      TimeLimit = "total"       // TimeoutSeconds
	TimeoutAttempt    TimeLimit = "attempt"     // AttemptTimeoutSeconds
	TimeoutStreamIdle TimeLimit = "stream-idle" // StreamIdleTimeoutSeconds
	TimeoutFirstToken TimeLimit = "first-token" // FirstTokenTimeoutSeconds (Call.AwaitFirstToken)
	// TimeoutStreamStall is a stream silent, after its first content, for longer than its
	// route's rhythm allows (StreamStallFactor, Call.WatchStream).
	TimeoutStreamStall TimeLimit = "stream-stall"
	// TimeoutCall is the steady client's whole-call deadline (CallTimeoutSeconds,
	// client.WithCallTimeout), across every try and fallback of a call; its TimeoutError
	// names no pipeline.
	TimeoutCall TimeLimit = "call"
)

// TimeoutError is returned when one of the pipeline's own time limits runs out.
// It matches ErrTimeout and context.DeadlineExceeded, and Timeout() reports true,
// so code that checks net.Error or os.IsTimeout treats it as a timeout.
type TimeoutError struct {
	Pipeline string
	Limit    TimeLimit     // which limit ran out
	After    time.Duration // its length
}

func (e *TimeoutError) Error() string {
	if e.Pipeline == "" {
		return fmt.Sprintf("resilience: %s timeout of %s exceeded", e.Limit, e.After)
	}
	return fmt.Sprintf("resilience: %s timeout of %s exceeded for %q", e.Limit, e.After, e.Pipeline)
}

// Is reports whether target is ErrTimeout or context.DeadlineExceeded.
func (e *TimeoutError) Is(target error) bool {
	return target == ErrTimeout || target == context.DeadlineExceeded
}

// ErrorKind names the failure in the vocabulary of steady's error kinds.
func (e *TimeoutError) ErrorKind() string { return "timeout" }

// Timeout reports true, as net.Error's Timeout does.
func (e *TimeoutError) Timeout() bool { return true }

// Temporary reports true: a later call may succeed. It completes the net.Error interface.
func (e *TimeoutError) Temporary() bool { return true }

// RedirectError is returned instead of a redirect response (a 3xx with a Location header).
// LLM APIs do not redirect; a redirect means a wrong BaseURL, a proxy in the way or a hostile
// server, and following it could hand the API key to whoever the Location names. It names the
// status and the origin pointed to, never the path or query of either URL.
type RedirectError struct {
	Pipeline   string
	StatusCode int
	// Origin is the scheme://host[:port] of the Location header, or "" when it is relative
	// to the request's own origin or unreadable.
	Origin string
}

func (e *RedirectError) Error() string {
	to := "elsewhere"
	if e.Origin != "" {
		to = "to " + e.Origin
	}
	return fmt.Sprintf("resilience: %q answered %d %s, a redirect %s: redirects are never followed "+
		"(check the base URL)", e.Pipeline, e.StatusCode, http.StatusText(e.StatusCode), to)
}

// Is reports whether target is ErrRedirect.
func (e *RedirectError) Is(target error) bool { return target == ErrRedirect }

// ErrorKind names the failure in the vocabulary of steady's error kinds.
func (e *RedirectError) ErrorKind() string { return "redirected" }

// HTTPStatus is the status of the refused redirect.
func (e *RedirectError) HTTPStatus() int { return e.StatusCode }
