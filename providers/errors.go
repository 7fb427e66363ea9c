package providers

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/steadyllm/steady/internal/redact"
)

// Error is the one error type of steady's client and providers. Match it with errors.As; the
// underlying cause (an SDK error, resilience.ErrCircuitOpen, context.Canceled…) stays
// reachable through errors.Is / errors.As. It never holds the API key.
type Error struct {
	Provider   string
	Kind       ErrorKind
	StatusCode int    // HTTP status, 0 when no response arrived
	Type       string // the provider's error type, e.g. "overloaded_error"
	// Code is the provider's error code, e.g. "insufficient_quota"; for KindRefused, the
	// refusal's category when the provider names one (Anthropic's stop_details.category:
	// "cyber", "bio"…; "" when null or for OpenAI). steady sets CodePrefillUnsupported in place
	// of the provider's generic code when the message says the model refuses a prefill, and
	// CodeResponseGone or CodeConversationGone when the provider no longer holds the state a
	// call named (see state.go).
	Code string
	// Message is the provider's message: for KindRefused the refusal's text (OpenAI's refusal,
	// Anthropic's stop_details.explanation) or, when the provider gave none, steady's words
	// saying so. Like every field copied from a server, it is scrubbed of the API key and
	// bounded.
	Message    string
	RetryAfter time.Duration // the server's hint (or the time until the circuit's next probe)
	Attempts   int           // attempts made, retries included; 0 when unknown or none was sent
	// GaveUp is why the resilience pipeline stopped retrying: one of its resilience.GaveUp
	// codes ("exhausted", "budget", "hint_too_long", "deadline", "circuit_open",
	// "not_retryable"); "" when unknown (a provider called without the client).
	GaveUp    string
	RequestID string // the provider's request ID header
	// ClientRequestID is the call's own ID, as the caller gave it (client.WithRequestID).
	ClientRequestID string
	// RateLimit is what the provider's rate-limit headers said, nil when none came: the
	// headers of an error status, or of the 200 whose answer failed — a refusal, a content
	// filter, an error envelope or error event inside it, a stream cut or broken.
	RateLimit *RateLimit
	// Partial is the text a stream delivered before it failed, or the text a whole answer held
	// before a refusal or a content filter ended it ("" when none).
	Partial string
	// Usage is what the provider reported the failed exchange used, so far as it said: the
	// input tokens of a stream's opening event, the output tokens of its last count, the usage
	// of a refused or filtered answer. It is what an abandoned attempt was billed, to the
	// provider's knowledge. nil when the provider reported none before the failure (and for
	// every error that came with an error status).
	Usage *Usage
	// Overflow, for KindContextTooLong, holds the sizes the server's message stated (the
	// model's context window, what the request needed); nil when it stated none.
	Overflow *ContextOverflow
	Err      error
}

// ContextOverflow is what a context_too_long error said of the sizes involved, in tokens, so
// that a caller can pick a model with a larger window or ask for fewer output tokens. A field
// the server did not state is 0.
type ContextOverflow struct {
	// Window is the model's context window (prompt and output together).
	Window int
	// Requested is what the request needed: the prompt plus the output tokens asked for when
	// the server counted both (OpenAI's "you requested", Anthropic's "A + B"), else the prompt.
	Requested int
	// Input is the prompt's size, when the server stated it apart.
	Input int
	// Output is the output tokens the request asked for (max_tokens), when stated apart.
	Output int
}

// CodePrefillUnsupported is the Code of a bad_request whose message says the model does not
// accept an assistant message at the end of the conversation (a prefill), as newer Anthropic
// models and some OpenAI-compatible servers say. Continuing a cut answer by prefill there
// cannot work; another route may. errors.Is(err, ErrPrefillUnsupported) finds it too.
const CodePrefillUnsupported = "prefill_unsupported"

// ErrPrefillUnsupported matches, with errors.Is, an *Error whose Code is
// CodePrefillUnsupported. It is never returned by itself.
var ErrPrefillUnsupported = errors.New("the model does not support assistant message prefill")

// Is reports whether e is the condition target names: ErrPrefillUnsupported for an error with
// CodePrefillUnsupported, ErrResponseGone for one with CodeResponseGone, ErrConversationGone
// for one with CodeConversationGone. Everything else is matched through Unwrap, as usual.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrPrefillUnsupported:
		return e.Code == CodePrefillUnsupported
	case ErrResponseGone:
		return e.Code == CodeResponseGone
	case ErrConversationGone:
		return e.Code == CodeConversationGone
	}
	return false
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Provider != "" {
		b.WriteString(e.Provider)
		b.WriteString(": ")
	}
	b.WriteString(string(e.Kind))
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
	if e.GaveUp != "" {
		fmt.Fprintf(&b, "; gave up after %d attempt", e.Attempts)
		if e.Attempts != 1 {
			b.WriteString("s")
		}
		b.WriteString(": ")
		b.WriteString(e.GaveUp)
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " [request %s]", e.RequestID)
	}
	if e.ClientRequestID != "" {
		// The caller's text: escaped and bounded, so an ID cannot forge a line of a log.
		fmt.Fprintf(&b, " [call %s]", redact.Safe(e.ClientRequestID, maxRequestIDText))
	}
	return b.String()
}

// NilContext is the message of the bad_request every entry point returns for a nil context,
// instead of panicking.
const NilContext = "nil context: pass context.Background() or the request's context"

// maxRequestIDText bounds the call's own ID where Error prints it.
const maxRequestIDText = 128

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
	usage, overflow := "nil", "nil"
	if e.Usage != nil {
		usage = fmt.Sprintf("%+v", *e.Usage)
	}
	if e.Overflow != nil {
		overflow = fmt.Sprintf("%+v", *e.Overflow)
	}
	return fmt.Sprintf("&providers.Error{Provider:%q, Kind:%q, StatusCode:%d, Type:%q, Code:%q, Message:%q, "+
		"RetryAfter:%d, Attempts:%d, GaveUp:%q, RequestID:%q, ClientRequestID:%q, Partial:<%d bytes>, "+
		"Usage:%s, Overflow:%s, Err:%s}",
		e.Provider, e.Kind, e.StatusCode, e.Type, e.Code, e.Message, e.RetryAfter, e.Attempts, e.GaveUp, e.RequestID,
		redact.Clip(e.ClientRequestID, maxRequestIDText), len(e.Partial), usage, overflow, cause)
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Temporary reports whether the same request may succeed later at the same provider: see
// ErrorKind.Temporary.
func (e *Error) Temporary() bool { return e.Kind.Temporary() }

// KindOf returns the Kind of the first *Error in err's chain, or KindUnknown.
func KindOf(err error) ErrorKind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindUnknown
}
