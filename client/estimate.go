package client

import "github.com/steadyllm/steady/providers"

// DefaultAnswerTokens is the answer a request that sets no MaxTokens is assumed to need, for
// pacing (EstimateTokens).
const DefaultAnswerTokens = 256

// EstimateTokens is the estimate of the tokens a chat request will use that the client
// debits from a provider's tokens-per-minute limit before sending it
// (resilience.Options.PaceTokensPerMinute): the prompt (EstimateInputTokens) plus MaxTokens,
// or DefaultAnswerTokens when the request sets none. It is what the APIs themselves debit when
// a request arrives (prompt and maximum answer); the answers' rate-limit headers correct the
// budget afterwards. A provider that counts prompts exactly may replace the prompt's part
// before a call (see CountTokens and providers.TokenCounter).
func EstimateTokens(req *providers.ChatRequest) int {
	if req == nil {
		return 0
	}
	answer := req.MaxTokens
	if answer <= 0 {
		answer = DefaultAnswerTokens
	}
	return EstimateInputTokens(req) + answer
}

// EstimateInputTokens estimates the prompt tokens of a chat request at four bytes of text per
// token, rounded up for each message (its text and parts, tool calls and results, reasoning
// and provider blocks) and for the tool definitions (raw ones whole) and the schema together:
// tokenizers start afresh at each message, so rounding once over the whole prompt would count
// short conversations low. An image counts as a fixed 1 000 tokens. The pre-flight cost of a
// call (client.WithBudgets) prices this estimate.
func EstimateInputTokens(req *providers.ChatRequest) int {
	if req == nil {
		return 0
	}
	tokens := 0
	for _, m := range req.Messages {
		bytes := len(m.Content)
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
		tokens += textTokens(bytes)
	}
	bytes := 0
	for _, t := range req.Tools {
		bytes += len(t.Name) + len(t.Description) + len(t.Parameters) + len(t.Raw)
	}
	if req.Schema != nil {
		bytes += len(req.Schema.Schema)
	}
	return tokens + textTokens(bytes)
}

// textTokens is the estimate of the tokens of n bytes of text: four bytes a token, rounded up.
func textTokens(n int) int { return (n + 3) / 4 }

// imagesOf counts the image parts of req's messages.
func imagesOf(req *providers.ChatRequest) int {
	n := 0
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			if p.Image != nil {
				n++
			}
		}
	}
	return n
}

// embedTokens estimates the tokens of an embedding request: its inputs at four bytes a token.
func embedTokens(req *providers.EmbedRequest) int {
	bytes := 0
	for _, in := range req.Inputs {
		bytes += len(in)
	}
	return (bytes + 3) / 4
}
