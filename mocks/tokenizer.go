package mocks

// maxTextTokens bounds what a tokenizer given to WithTokenizer may say one text costs: a
// count beyond it (or below 0) is cut to it (or to 0), so that sums over a request cannot
// overflow nor go negative.
const maxTextTokens = 1 << 24

// WithTokenizer makes the server count prompt tokens with count instead of [Tokens]: the
// prompt_tokens and input_tokens of chat completions (streamed or not), Responses,
// embeddings and Anthropic messages, the input_tokens of count_tokens, and the prompt's part
// of what a call costs under token rate limits ([WithRateLimits]) and context windows
// ([WithContextWindows]). A test of a client that estimates prompt tokens uses it to give
// the server a tokenizer of its own (a real one, or a known ratio to the estimate) and check
// the client learns from the usage it reports.
//
// count is called once per text (each message's content, the system prompt or
// instructions, each embedding input) from the server's handlers, concurrently: it must be
// safe for concurrent use and must not retain its argument. Its result is held within 0 and
// 2²⁴ per text; an empty text counts 0 without a call, and a request's prompt at least 1,
// as with [Tokens]. Completion tokens,
// the reply's cut at max_tokens, and the reply's part of a rate-limit cost are still [Tokens]'.
// A nil count restores [Tokens].
func WithTokenizer(count func(text string) int) Option {
	return func(o *options) { o.tokenizer = count }
}

// countPrompt counts one text of a prompt: with the tokenizer of WithTokenizer, held within
// bounds, else with Tokens.
func (s *Server) countPrompt(text string) int {
	if text == "" {
		return 0
	}
	if s.tokenizer == nil {
		return Tokens(text)
	}
	return min(max(s.tokenizer(text), 0), maxTextTokens)
}
