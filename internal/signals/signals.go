// Package signals reads what an LLM server signals about retrying in an HTTP answer: the wait
// it asks for (retry-after-ms, Retry-After), whether it wants a retry at all
// (x-should-retry), and whether a 429 means an exhausted quota rather than a passing rate
// limit. It is the one home of these rules: the resilience pipeline and every provider use it,
// so a hint means the same thing to the layer that waits and to the error the caller sees.
//
// Everything here treats the server as untrusted: a value that is negative, not a number,
// infinite, garbage or present twice with different meanings never becomes a negative,
// overflowing or zero wait.
package signals

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxHint is the longest wait a hint can express. Longer hints (and numbers too large for a
// time.Duration) are clamped to it: they still mean "longer than any retry should wait", but
// never overflow. A day is long enough for every rate limit and short enough that a job
// rescheduled for it looks again the next day.
const MaxHint = 24 * time.Hour

// MinHint is the shortest usable hint. Shorter ones, zero and dates in the past, say "now",
// which would let a client spin; they count as no hint at all, so backoff applies.
const MinHint = time.Millisecond

// maxValueLen bounds the text of one header value that is parsed; hints are a few characters.
const maxValueLen = 64

// RetryAfter returns the wait the server asked for in h, and whether it asked for a usable
// one. retry-after-ms (OpenAI, Azure) wins over Retry-After (seconds, fractional allowed, or an
// HTTP date, measured from now). Each header may appear more than once: unusable values are
// ignored and the longest usable one counts, so a proxy that adds its own shorter hint cannot
// shorten the upstream's. Values above MaxHint are clamped to it; values below MinHint, zero,
// negative, NaN, infinite, garbage and past dates are unusable.
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if d, ok := longest(h["Retry-After-Ms"], now, parseMillis); ok {
		return d, true
	}
	return longest(h["Retry-After"], now, parseRetryAfter)
}

// longest parses every value with parse and returns the longest usable one.
func longest(values []string, now time.Time, parse func(string, time.Time) (time.Duration, bool)) (time.Duration, bool) {
	var best time.Duration
	found := false
	for _, v := range values {
		if d, ok := parse(v, now); ok && d > best {
			best, found = d, true
		}
	}
	return best, found
}

func parseMillis(v string, _ time.Time) (time.Duration, bool) {
	f, ok := number(v)
	if !ok {
		return 0, false
	}
	return clamp(f * float64(time.Millisecond))
}

func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	if f, ok := number(v); ok {
		return clamp(f * float64(time.Second))
	}
	v = strings.TrimSpace(v)
	if len(v) > maxValueLen {
		return 0, false
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d := t.Sub(now) // saturates instead of overflowing for far dates
	if d >= MaxHint {
		return MaxHint, true
	}
	return clamp(float64(d))
}

// number parses a plain decimal number: digits with an optional fraction and exponent. Hex,
// infinities, NaN and signs are refused (a negative wait is no wait).
func number(v string) (float64, bool) {
	v = strings.TrimSpace(v)
	if v == "" || len(v) > maxValueLen {
		return 0, false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || (c == '+' || c == '-') && i > 0 && (v[i-1] == 'e' || v[i-1] == 'E')) {
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil && !isRange(err) {
		return 0, false
	}
	if math.IsNaN(f) || f < 0 {
		return 0, false
	}
	return f, true
}

func isRange(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// clamp turns a number of nanoseconds into a usable wait: at most MaxHint (so it never
// overflows), and unusable below MinHint.
func clamp(ns float64) (time.Duration, bool) {
	switch {
	case math.IsNaN(ns) || ns < float64(MinHint):
		return 0, false
	case ns >= float64(MaxHint):
		return MaxHint, true
	}
	return time.Duration(ns), true
}

// ShouldRetry reads x-should-retry. It reports the server's answer and whether it gave a
// clear one: "true" or "false" in any case, the same in every copy of the header. Anything
// else is no answer. Callers consult it only for error statuses: a success is never retried,
// whatever a header says.
func ShouldRetry(h http.Header) (retry, ok bool) {
	values := h["X-Should-Retry"]
	if len(values) == 0 {
		return false, false
	}
	for i, v := range values {
		var b bool
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			b = true
		case "false":
			b = false
		default:
			return false, false
		}
		if i > 0 && b != retry {
			return false, false // conflicting copies: no clear answer
		}
		retry = b
	}
	return retry, true
}

// QuotaMarkers are the error codes and phrases, in lower case, with which providers say that
// waiting will not help: the account is out of credit or over its spend limit.
var QuotaMarkers = []string{
	"insufficient_quota",
	"billing_hard_limit",
	"billing_not_active",
	"spend_limit",
	"exceeded your current quota",
	"credit balance is too low",
}

// MentionsQuota reports whether text (any case) holds one of the QuotaMarkers.
func MentionsQuota(text string) bool {
	lower := strings.ToLower(text)
	for _, m := range QuotaMarkers {
		if strings.Contains(lower, m) {
			return true
		}
	}
	return false
}

// MentionsQuotaBytes is MentionsQuota for a body peeked from the wire.
func MentionsQuotaBytes(body []byte) bool {
	// Lower-casing a copy costs an allocation, but this runs only for 429 bodies of a few
	// kilobytes at most.
	return MentionsQuota(string(body))
}

// Budget is one rate limit as an answer's headers state it. The Has fields say which parts
// were sent (a remaining count of 0 is news; a missing one is not).
type Budget struct {
	Limit, Remaining       int
	Reset                  time.Time
	HasLimit, HasRemaining bool
}

// RateLimits are the budgets an answer's rate-limit headers state.
type RateLimits struct {
	Requests, Tokens, InputTokens, OutputTokens Budget
}

// ParseRateLimits reads OpenAI's x-ratelimit-{limit,remaining,reset}-{requests,tokens} and
// Anthropic's anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,
// remaining,reset} from h, for an answer that arrived at now. A reset may be a duration ("1s",
// "6m0s"), an RFC 3339 time or a number of seconds. It reports false when h holds none of
// them; a value that does not parse is left out.
func ParseRateLimits(h http.Header, now time.Time) (RateLimits, bool) {
	var rl RateLimits
	if len(h) == 0 {
		return rl, false
	}
	found := false
	read := func(b *Budget, limit, remaining, reset string) {
		if v, ok := first(h, limit); ok {
			found = true
			if n, ok := count(v); ok {
				b.Limit, b.HasLimit = n, true
			}
		}
		if v, ok := first(h, remaining); ok {
			found = true
			if n, ok := count(v); ok {
				b.Remaining, b.HasRemaining = n, true
			}
		}
		if v, ok := first(h, reset); ok {
			found = true
			b.Reset = resetTime(v, now)
		}
	}
	read(&rl.Requests, "X-Ratelimit-Limit-Requests", "X-Ratelimit-Remaining-Requests", "X-Ratelimit-Reset-Requests")
	read(&rl.Tokens, "X-Ratelimit-Limit-Tokens", "X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Tokens")
	read(&rl.Requests, "Anthropic-Ratelimit-Requests-Limit", "Anthropic-Ratelimit-Requests-Remaining", "Anthropic-Ratelimit-Requests-Reset")
	read(&rl.Tokens, "Anthropic-Ratelimit-Tokens-Limit", "Anthropic-Ratelimit-Tokens-Remaining", "Anthropic-Ratelimit-Tokens-Reset")
	read(&rl.InputTokens, "Anthropic-Ratelimit-Input-Tokens-Limit", "Anthropic-Ratelimit-Input-Tokens-Remaining", "Anthropic-Ratelimit-Input-Tokens-Reset")
	read(&rl.OutputTokens, "Anthropic-Ratelimit-Output-Tokens-Limit", "Anthropic-Ratelimit-Output-Tokens-Remaining", "Anthropic-Ratelimit-Output-Tokens-Reset")
	return rl, found
}

// first returns the first value of the canonical key k in h.
func first(h http.Header, k string) (string, bool) {
	if v := h[k]; len(v) > 0 && strings.TrimSpace(v[0]) != "" {
		return strings.TrimSpace(v[0]), true
	}
	return "", false
}

// count reads a non-negative whole number.
func count(v string) (int, bool) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// resetTime reads a reset as an RFC 3339 time, a duration from now or seconds from now, at most
// MaxHint ahead (a reset further away is read as MaxHint from now, like a hint); zero when it is
// none of them.
func resetTime(v string, now time.Time) time.Time {
	t := time.Time{}
	if p, err := time.Parse(time.RFC3339, v); err == nil {
		t = p
	} else if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		t = now.Add(min(d, MaxHint))
	} else if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 && s < 1e9 {
		t = now.Add(min(time.Duration(s*float64(time.Second)), MaxHint))
	}
	if limit := now.Add(MaxHint); t.After(limit) {
		t = limit
	}
	return t
}
