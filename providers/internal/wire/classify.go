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
// same vocabulary; the phrases it looks for are in markers.go.
func Classify(status int, errType, code, message string) providers.ErrorKind {
	t, c, m := strings.ToLower(errType), strings.ToLower(code), strings.ToLower(message)
	switch {
	case signals.MentionsQuota(t) || signals.MentionsQuota(c) || signals.MentionsQuota(m):
		return providers.KindQuotaExhausted
	case mentions(contextPhrases, t, c, m):
		return providers.KindContextTooLong
	case mentions(filterPhrases, t, c, m):
		return providers.KindContentFiltered
	case status == 529 || mentions(overloadPhrases, t, c, m):
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
