package providers

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/steadyllm/steady/internal/redact"
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
	KindRedirected      ErrorKind = "redirected"       // the server redirected; steady never follows (check BaseURL)
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
		b.WriteString(redact.New().Text(e.Err.Error(), maxCauseText))
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, "; retry after %s", e.RetryAfter.Round(time.Millisecond))
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " [request %s]", e.RequestID)
	}
	return b.String()
}

// maxCauseText bounds the text of the cause that Error shows when there is no message.
const maxCauseText = 300

// Format prints the error as Error does for every verb (%v, %+v, %s, %q…), and %#v as
// GoString: no verb reaches a field by reflection.
func (e *Error) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = io.WriteString(f, e.GoString())
		return
	}
	if verb == 'q' {
		_, _ = fmt.Fprintf(f, "%q", e.Error())
		return
	}
	_, _ = io.WriteString(f, e.Error())
}

// GoString describes the error as Go syntax: its fields as they are (every one of them was
// scrubbed when the error was made), the partial stream text by its length only, the cause
// by its type only.
func (e *Error) GoString() string {
	cause := "nil"
	if e.Err != nil {
		cause = fmt.Sprintf("%T", e.Err)
	}
	return fmt.Sprintf("&providers.Error{Provider:%q, Kind:%q, StatusCode:%d, Type:%q, Code:%q, Message:%q, "+
		"RetryAfter:%d, Attempts:%d, RequestID:%q, Partial:<%d bytes>, Err:%s}",
		e.Provider, e.Kind, e.StatusCode, e.Type, e.Code, e.Message, e.RetryAfter, e.Attempts, e.RequestID,
		len(e.Partial), cause)
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
