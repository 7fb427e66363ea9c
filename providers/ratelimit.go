package providers

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ParseRateLimit reads the rate-limit headers of an answer that arrived at now: OpenAI's
// x-ratelimit-{limit,remaining,reset}-{requests,tokens} and Anthropic's
// anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}.
// A reset may be a duration ("1s", "6m0s", "17ms", as OpenAI sends), an RFC 3339 time (as
// Anthropic sends) or a number of seconds. It returns nil when h holds none of them; a value
// that does not parse is left zero.
func ParseRateLimit(h http.Header, now time.Time) *RateLimit {
	if len(h) == 0 {
		return nil
	}
	var rl RateLimit
	found := false
	read := func(b *RateBudget, limit, remaining, reset string) {
		if v := h.Get(limit); v != "" {
			b.Limit, found = atoi(v), true
		}
		if v := h.Get(remaining); v != "" {
			b.Remaining, found = atoi(v), true
		}
		if v := h.Get(reset); v != "" {
			b.Reset, found = resetTime(v, now), true
		}
	}
	read(&rl.Requests, "X-Ratelimit-Limit-Requests", "X-Ratelimit-Remaining-Requests", "X-Ratelimit-Reset-Requests")
	read(&rl.Tokens, "X-Ratelimit-Limit-Tokens", "X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Tokens")
	for _, k := range []struct {
		b    *RateBudget
		name string
	}{{&rl.Requests, "requests"}, {&rl.Tokens, "tokens"}, {&rl.InputTokens, "input-tokens"}, {&rl.OutputTokens, "output-tokens"}} {
		p := "Anthropic-Ratelimit-" + k.name
		read(k.b, p+"-Limit", p+"-Remaining", p+"-Reset")
	}
	if !found {
		return nil
	}
	rl.At = now
	return &rl
}

func atoi(s string) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// resetTime reads a reset as a duration from now, an RFC 3339 time or seconds from now.
func resetTime(v string, now time.Time) time.Time {
	v = strings.TrimSpace(v)
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return now.Add(d)
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 && s < 1e9 {
		return now.Add(time.Duration(s * float64(time.Second)))
	}
	return time.Time{}
}
