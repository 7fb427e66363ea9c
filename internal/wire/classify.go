package wire

import (
	"net/http"
	"strings"
	"time"

	"github.com/steadyllm/steady/internal/signals"
	"github.com/steadyllm/steady/providers"
)

// Classify maps an HTTP error status and the provider's error type, code and message to a
// kind. It is shared by the provider implementations so that every wire format lands on the
// same vocabulary.
func Classify(status int, errType, code, message string) providers.ErrorKind {
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
		return providers.KindQuotaExhausted
	case has("context_length_exceeded", "string_above_max_length", "prompt is too long", "maximum context length", "context window", "request_too_large"):
		return providers.KindContextTooLong
	case has("content_filter", "content_policy", "responsibleaipolicyviolation", "safety"):
		return providers.KindContentFiltered
	case status == 529 || has("overloaded"):
		return providers.KindOverloaded
	}
	switch {
	case status == http.StatusTooManyRequests:
		return providers.KindRateLimited
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return providers.KindAuth
	case status == http.StatusNotFound:
		return providers.KindNotFound
	case status == http.StatusRequestEntityTooLarge:
		return providers.KindContextTooLong
	case status == http.StatusRequestTimeout:
		return providers.KindTimeout
	case status >= 500:
		return providers.KindUnavailable
	case status >= 400:
		return providers.KindBadRequest
	}
	return providers.KindUnknown
}

// RetryAfter reads the server's wait hint from response headers: retry-after-ms, then
// Retry-After in seconds or as an HTTP date. It returns 0 when there is no usable one, and
// never more than a day (see package internal/signals for the rules).
func RetryAfter(h http.Header) time.Duration {
	d, _ := signals.RetryAfter(h, time.Now())
	return d
}
