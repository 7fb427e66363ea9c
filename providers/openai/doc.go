// Package openai is steady's provider for the OpenAI chat completions, Responses and
// embeddings APIs. One Provider serves one endpoint of one Dialect: OpenAI itself, Azure OpenAI
// (deployments, api-key header, configurable api-version) or any OpenAI-compatible server
// (vLLM, Ollama, Groq, OpenRouter, LiteLLM…). Config.API chooses the chat API: chat
// completions (the default), spoken through github.com/sashabaranov/go-openai, or the
// Responses API, spoken by this package's own wire code (go-openai has none): typed input
// and output items, reasoning items kept across turns (sent back only to the endpoint that
// produced them), answers stored and continued from (ChatRequest.Previous), conversations kept
// by the provider (ChatRequest.Conversation, NewConversation), server-side compaction and its
// compaction items (ChatRequest.CompactThreshold, Message.Compaction), background answers
// polled and cancelled (ChatRequest.Background, Retrieve, Cancel), semantic stream events. See
// responses.go for how the neutral request maps to it.
//
//	p, err := openai.New(openai.Config{
//		Dialect:    openai.Compatible,
//		BaseURL:    "http://localhost:11434/v1",
//		Model:      "llama3.2",
//		HTTPClient: resilientClient, // the steady client passes its pipeline here
//	})
//	resp, err := p.Chat(ctx, &providers.ChatRequest{Messages: []providers.Message{
//		{Role: providers.RoleUser, Content: "Hello"},
//	}})
//
// Users who also import go-openai alias one of the two packages, for example
// goopenai "github.com/sashabaranov/go-openai". Provider.Client returns the go-openai client
// for the rest of the API; it runs over the same resilient *http.Client.
//
// # Guarantees
//
//   - One HTTP exchange per call over the configured *http.Client; go-openai has no retries,
//     so the resilience pipeline underneath is the only retry layer.
//   - Every failure is a *providers.Error: API errors classified by the status rules every
//     provider shares, with the HTTP status, the server's retry-after hint and the request ID taken from the
//     response headers even on error paths (go-openai drops them there); an HTML or other
//     non-JSON error body is never copied into the message; the API key never appears in an
//     error or in a printed Config.
//   - Error response bodies are always closed, including on the stream path where go-openai
//     reads them but never closes them.
//   - A stream is complete once a choice brought its finish_reason: the last delta has Done
//     set, with the finish reason and the usage of the stream_options.include_usage chunk
//     (zero when the body ended before it), whether data: [DONE] follows or the body ends or
//     breaks without it. A body that ends before any finish_reason is a KindStreamTruncated
//     error, never io.EOF (go-openai returns io.EOF for both). An error event inside a 200
//     stream is classified like an HTTP error (an overloaded error is KindOverloaded); a chunk
//     that is not valid JSON ends the stream with KindUnavailable, naming it.
//   - A refusal (the message's refusal field, or delta.refusal pieces, which are never
//     delivered as text) is a KindRefused error whose Message is the refusal; finish_reason
//     "content_filter" is a KindContentFiltered error: the answer was cut. Both carry the
//     content that came before in Partial, and the usage in Usage.
//   - "context_length_exceeded" is KindContextTooLong, with the window and the tokens
//     requested in Error.Overflow when the message states them.
//   - go-openai's limit of 300 consecutive non-data stream lines, which gateways' keep-alive
//     comments can reach, is raised to 10000.
//   - The Responses API keeps every guarantee above on its own wire: one exchange, no
//     redirect, every body, event and error body within Limits, the same classifier. Its
//     stream is complete at response.completed (or response.incomplete, response.failed): a
//     body that ends before is KindStreamTruncated (cleanly) or KindUnavailable (broken), with
//     Partial; an "error" event and a failed response are classified by their code; a refusal
//     part is KindRefused, incomplete_details.reason content_filter KindContentFiltered.
package openai
