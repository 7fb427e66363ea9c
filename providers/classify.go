package providers

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
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
	case has("insufficient_quota", "billing_hard_limit", "billing_not_active", "spend_limit", "exceeded your current quota", "credit balance is too low"):
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
// Retry-After in seconds or as an HTTP date. It returns 0 when there is none.
func RetryAfter(h http.Header) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
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
