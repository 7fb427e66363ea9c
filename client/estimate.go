package client

import "github.com/steadyllm/steady/providers"

// DefaultAnswerTokens is the answer a request that sets no MaxTokens is assumed to need, for
// pacing (EstimateTokens).
const DefaultAnswerTokens = 256

// EstimateTokens is the estimate of the tokens a chat request will use that the client
// debits from a provider's tokens-per-minute budget before sending it
// (resilience.Options.PaceTokensPerMinute): the prompt at four bytes of text per token —
// every message's text and parts, tool calls and results, provider blocks, tool definitions
// (raw ones whole), the schema —
// plus MaxTokens, or DefaultAnswerTokens when the request sets none. It is what the APIs
// themselves debit when a request arrives (prompt and maximum answer); the answers'
// rate-limit headers correct the budget afterwards. An image counts as a fixed 1 000 tokens.
// A provider that counts prompts exactly may replace the prompt's part before a call (see
// CountTokens and providers.TokenCounter).
func EstimateTokens(req *providers.ChatRequest) int {
	if req == nil {
		return 0
	}
	bytes := 0
	for _, m := range req.Messages {
		bytes += len(m.Content)
		for _, p := range m.Parts {
			bytes += len(p.Text)
			if p.Image != nil {
				bytes += 4 * 1000
			}
		}
		for _, tc := range m.ToolCalls {
			bytes += len(tc.Name) + len(tc.Arguments)
		}
		for _, t := range m.Thinking {
			bytes += len(t.Text)
		}
		for _, b := range m.ProviderBlocks {
			bytes += len(b.Raw)
		}
	}
	for _, t := range req.Tools {
		bytes += len(t.Name) + len(t.Description) + len(t.Parameters) + len(t.Raw)
	}
	if req.Schema != nil {
		bytes += len(req.Schema.Schema)
	}
	answer := req.MaxTokens
	if answer <= 0 {
		answer = DefaultAnswerTokens
	}
	return (bytes+3)/4 + answer
}

// embedTokens estimates the tokens of an embedding request: its inputs at four bytes a token.
func embedTokens(req *providers.EmbedRequest) int {
	bytes := 0
	for _, in := range req.Inputs {
		bytes += len(in)
	}
	return (bytes + 3) / 4
}
