package providers

import (
	"net/http"
	"time"

	"github.com/steadyllm/steady/internal/signals"
)

// ParseRateLimit reads the rate-limit headers of an answer that arrived at now: OpenAI's
// x-ratelimit-{limit,remaining,reset}-{requests,tokens} and Anthropic's
// anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}.
// A reset may be a duration ("1s", "6m0s", "17ms", as OpenAI sends), an RFC 3339 time (as
// Anthropic sends) or a number of seconds. It returns nil when h holds none of them; a value
// that does not parse is left zero.
func ParseRateLimit(h http.Header, now time.Time) *RateLimit {
	rl, ok := signals.ParseRateLimits(h, now)
	if !ok {
		return nil
	}
	b := func(s signals.Budget) RateBudget {
		return RateBudget{Limit: s.Limit, Remaining: s.Remaining, Reset: s.Reset}
	}
	return &RateLimit{Requests: b(rl.Requests), Tokens: b(rl.Tokens), InputTokens: b(rl.InputTokens),
		OutputTokens: b(rl.OutputTokens), At: now}
}
