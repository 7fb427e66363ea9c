package resilience

import (
	"context"
	"net/http"
	"time"

	"github.com/steadyllm/steady/internal/signals"
)

// A 429 says "too many", but of two different things, and each has its own cure:
//
//   - a rate budget (requests or tokens a minute) ran out: nothing sent before it refills can
//     succeed, so the whole pipeline waits for it (the cooldown);
//   - too many calls at once: the next call succeeds as soon as one of those in flight ends,
//     so the cure is fewer at once — a smaller concurrency limit — and no pause at all.
//
// Providers tell them apart in their headers more than in their bodies: OpenAI's and
// Anthropic's budget 429s carry the x-ratelimit-* / anthropic-ratelimit-* headers with a
// budget at 0 (or too little for the call) and a hint of when it refills; a server that
// limits concurrency (a self-hosted one, a gateway) sends a bare 429, or one whose headers show
// room in every budget. So, for a 429 that is not a spent quota (see quotaExhausted):
//
//	rate-limit headers: a budget at 0, or fewer tokens left than the call's Call.Tokens → budget
//	a hint (retry-after-ms, Retry-After) longer than concurrencyHint                   → budget
//	anything else: no headers, budgets with room, no hint or a short one               → concurrency
//
// A concurrency 429 is acted on as such only under an adaptive limit (AdaptiveConcurrency)
// above its floor: it lowers the limit, and the call's retry gives its slot back and waits for
// one under the lowered limit, without a route-wide pause (see retryThroughLimit). With a fixed
// limit, or at the adaptive limit's floor (nothing left to lower), every 429 pauses the
// pipeline as a budget's does: a provider that keeps refusing one call at a time has no
// concurrency left to give back.

// concurrencyHint is the longest hint a 429 may carry and still signal concurrency: a server
// that asks for a second or less asks for "a moment", until a call in flight ends; one that
// asks for longer is waiting for a budget to refill.
const concurrencyHint = time.Second

// rateLimit is what a 429 signals.
type rateLimit uint8

const (
	// limitNone: not a 429, or a spent quota (permanent: neither a pause nor an overload).
	limitNone rateLimit = iota
	// limitBudget: a rate budget ran out; the pipeline pauses until it refills.
	limitBudget
	// limitConcurrency: too many calls at once; an adaptive limit shrinks.
	limitConcurrency
)

// rateLimitOf reads what resp signals, for a call made with ctx, at now: one of the rows of
// the table above. Only a 429 signals anything; a 429 whose body names a spent quota signals
// limitNone. The body is left intact.
func rateLimitOf(ctx context.Context, resp *http.Response, now time.Time) rateLimit {
	if resp == nil || resp.StatusCode != http.StatusTooManyRequests || quotaExhausted(resp) {
		return limitNone
	}
	if d, ok := signals.RetryAfter(resp.Header, now); ok && d > concurrencyHint {
		return limitBudget
	}
	if rl, ok := signals.ParseRateLimits(resp.Header, now); ok {
		tokens := 0
		if ctx != nil {
			tokens = tokensOf(ctx)
		}
		if rl.Requests.HasRemaining && rl.Requests.Remaining == 0 {
			return limitBudget
		}
		for _, b := range [...]signals.Budget{rl.Tokens, rl.InputTokens, rl.OutputTokens} {
			if b.HasRemaining && (b.Remaining == 0 || b.Remaining < tokens) {
				return limitBudget
			}
		}
	}
	return limitConcurrency
}
