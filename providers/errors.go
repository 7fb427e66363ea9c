package providers

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrorKind classifies a failure so a program can act on it without parsing messages.
type ErrorKind string

// The error kinds.
const (
	KindRateLimited     ErrorKind = "rate_limited"     // 429: wait RetryAfter and try again
	KindQuotaExhausted  ErrorKind = "quota_exhausted"  // 429 insufficient_quota / spend limit: waiting will not help
	KindOverloaded      ErrorKind = "overloaded"       // 529 or an overloaded error inside a stream
	KindUnavailable     ErrorKind = "unavailable"      // 5xx, network failure
	KindTimeout         ErrorKind = "timeout"          // the pipeline's own timeout
	KindCircuitOpen     ErrorKind = "circuit_open"     // rejected by an open circuit, nothing sent
	KindBulkheadFull    ErrorKind = "bulkhead_full"    // rejected by a full bulkhead, nothing sent
	KindAuth            ErrorKind = "auth"             // 401, 403: the key is wrong or lacks rights
	KindBadRequest      ErrorKind = "bad_request"      // 400, 404, 422…: the request itself is wrong
	KindContextTooLong  ErrorKind = "context_too_long" // the prompt exceeds the model's context window
	KindContentFiltered ErrorKind = "content_filtered" // a safety filter refused the prompt or the output
	KindStreamTruncated ErrorKind = "stream_truncated" // the stream ended without its terminal event
	KindCanceled        ErrorKind = "canceled"         // the caller's context ended
	KindUnknown         ErrorKind = "unknown"
)

// Error is the one error type of steady's client and providers. Match it with errors.As; the
// underlying cause (an SDK error, resilience.ErrCircuitOpen, context.Canceled…) stays
// reachable through errors.Is / errors.As. It never holds the API key.
type Error struct {
	Provider   string
	Kind       ErrorKind
	StatusCode int           // HTTP status, 0 when no response arrived
	Type       string        // the provider's error type, e.g. "overloaded_error"
	Code       string        // the provider's error code, e.g. "insufficient_quota"
	Message    string        // the provider's message
	RetryAfter time.Duration // the server's hint (or the time until the circuit's next probe)
	Attempts   int           // attempts made, retries included; 0 when unknown
	RequestID  string
	// Partial is what a stream delivered before it failed.
	Partial string
	Err     error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", e.Provider, e.Kind)
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.StatusCode)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	} else if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, "; retry after %s", e.RetryAfter.Round(time.Millisecond))
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " [request %s]", e.RequestID)
	}
	return b.String()
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Temporary reports whether the same request may succeed later or elsewhere: rate limits,
// overload, unavailability, timeouts, open circuits, full bulkheads and truncated streams.
func (e *Error) Temporary() bool {
	switch e.Kind {
	case KindRateLimited, KindOverloaded, KindUnavailable, KindTimeout, KindCircuitOpen,
		KindBulkheadFull, KindStreamTruncated:
		return true
	}
	return false
}

// KindOf returns the Kind of the first *Error in err's chain, or KindUnknown.
func KindOf(err error) ErrorKind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindUnknown
}
