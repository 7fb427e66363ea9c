package providers

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/steadyllm/steady/internal/signals"
)

// Classify maps an HTTP error status and the provider's error type, code and message to a
// Kind. It is shared by the provider implementations so that every wire format lands on the
// same vocabulary.
func Classify(status int, errType, code, message string) ErrorKind {
	t, c, m := strings.ToLower(errType), strings.ToLower(code), strings.ToLower(message)
	has := func(s ...string) bool {
		for _, x := range s {
			if strings.Contains(t, x) || strings.Contains(c, x) || strings.Contains(m, x) {
				return true
			}
		}
		return false
	}
	switch {
	case signals.MentionsQuota(t) || signals.MentionsQuota(c) || signals.MentionsQuota(m):
		return KindQuotaExhausted
	case has("context_length_exceeded", "string_above_max_length", "prompt is too long", "maximum context length", "context window", "request_too_large"):
		return KindContextTooLong
	case has("content_filter", "content_policy", "responsibleaipolicyviolation", "safety"):
		return KindContentFiltered
	case status == 529 || has("overloaded"):
		return KindOverloaded
	}
	switch {
	case status == http.StatusTooManyRequests:
		return KindRateLimited
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return KindAuth
	case status == http.StatusNotFound:
		return KindNotFound
	case status == http.StatusRequestEntityTooLarge:
		return KindContextTooLong
	case status == http.StatusRequestTimeout:
		return KindTimeout
	case status >= 500:
		return KindUnavailable
	case status >= 400:
		return KindBadRequest
	}
	return KindUnknown
}

// RetryAfter reads the server's wait hint from response headers: retry-after-ms, then
// Retry-After in seconds or as an HTTP date. It returns 0 when there is no usable one, and
// never more than a day (see package internal/signals for the rules).
func RetryAfter(h http.Header) time.Duration {
	d, _ := signals.RetryAfter(h, time.Now())
	return d
}

// RequestID returns the provider's request ID header, if any.
func RequestID(h http.Header) string {
	for _, k := range []string{"X-Request-Id", "Request-Id", "Apim-Request-Id"} {
		if v := h.Get(k); v != "" {
			return v
		}
	}
	return ""
}

// TransportError wraps an error that came before any HTTP response (a network failure, a
// rejection by the resilience pipeline, the caller's cancellation) in an *Error. Kinds that
// need the pipeline's sentinels (circuit open, bulkhead full, timeout) are set by the client,
// which knows them; here only cancellation and generic unavailability are told apart.
func TransportError(provider string, err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	kind := KindUnavailable
	if errors.Is(err, context.Canceled) {
		kind = KindCanceled
	}
	return &Error{Provider: provider, Kind: kind, Err: err}
}
