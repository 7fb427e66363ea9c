package providers

import (
	"context"
	"time"
)

// TokenCounter is implemented by a provider that counts the input tokens of a chat request
// exactly, with its API's own counting (Anthropic: POST /v1/messages/count_tokens), instead of
// the client's estimate of four bytes a token.
//
// A count is a request of its own, never a chat call: the steady client sends it outside the
// provider's resilience pipeline (no retry, no circuit, no bulkhead slot, no pacing debit), so
// that its failures are never counted as the provider's, and only ever uses it to decide: a
// count that fails leaves the estimate in its place.
type TokenCounter interface {
	// CountTokens returns the number of input tokens of req — system prompt, messages and
	// tools, for req's model (or the provider's default) — as the provider will count them
	// when req is sent. It refuses what the provider would refuse of req itself
	// (KindBadRequest, before sending) and fails as a call fails: a *Error with its kind.
	CountTokens(ctx context.Context, req *ChatRequest) (int, error)
	// PreflightCount says whether the client is to count every chat call with CountTokens
	// before sending it, to debit its exact prompt from the route's tokens-per-minute limit
	// (resilience.Options.PaceTokensPerMinute) instead of the estimate, and how long a count
	// may take before the estimate stands in for it (anthropic.Config.CountTokens).
	PreflightCount() (on bool, timeout time.Duration)
}
