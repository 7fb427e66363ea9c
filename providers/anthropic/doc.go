// Package anthropic is steady's provider for the Anthropic Messages API (POST /v1/messages),
// plain and streamed, behind the neutral providers.Provider interface.
//
//	p, err := anthropic.New(anthropic.Config{
//		APIKey:     os.Getenv("ANTHROPIC_API_KEY"),
//		Model:      "claude-sonnet-4-5",
//		HTTPClient: &http.Client{Transport: pipeline.Wrap(http.DefaultTransport)},
//	})
//	resp, err := p.Chat(ctx, &providers.ChatRequest{Messages: []providers.Message{
//		{Role: providers.RoleSystem, Content: "Be brief."},
//		{Role: providers.RoleUser, Content: "Hello"},
//	}})
//
// # Why hand-written wire code
//
// This package speaks the wire format itself, with encoding/json and a small server-sent
// events reader, instead of wrapping github.com/anthropics/anthropic-sdk-go: the SDK needs a
// newer Go than steady supports, and its message API alone would bring 17 more modules (gjson,
// sjson, jsonschema, OpenTelemetry, a YAML parser…) into the build of every steady user, also
// of those who never call Anthropic; this package needs nothing beyond the standard library.
// The cost is the risk of drifting from the format, so the separate interop module
// (github.com/steadyllm/steady/interop) sends the same conversation through this package and
// through the official SDK against one fake server, and checks that the request bodies mean
// the same and that both read the same streamed answer the same way.
//
// # Mapping
//
//   - System messages go to the top-level "system" field as text blocks, in order, wherever
//     they stand in the conversation.
//   - Assistant tool calls become tool_use blocks; RoleTool messages become tool_result blocks
//     of a user turn. Consecutive turns of one role are merged into one turn, as the API
//     itself merges them, so that every result answering one assistant turn lands in the
//     single user turn that must follow it.
//   - Tools go to "tools" with their Parameters as "input_schema" (an empty object schema when
//     a tool declares none); Stop goes to "stop_sequences"; Temperature and TopP are sent only
//     when set; MaxTokens 0 sends Config.DefaultMaxTokens, since Anthropic requires the field.
//   - JSON mode: the Messages API has no schema-less JSON mode (its structured outputs need a
//     schema, which providers.ChatRequest does not carry). FormatJSON appends an instruction
//     to answer with a single JSON object to the system prompt. It is best effort: validate
//     the answer.
//   - stop_reason: end_turn and stop_sequence are FinishStop, max_tokens (and
//     model_context_window_exceeded) FinishLength, tool_use FinishToolCalls, anything else
//     FinishOther. A refusal is no finish: it is a KindRefused error, with stop_details'
//     category in Code and its explanation in Message, the text before it in Partial and the
//     usage in Usage (JSON answers and streams alike).
//   - Reasoning: BudgetTokens is extended thinking with budget_tokens, Effort is
//     output_config.effort. The models that take only adaptive thinking (Claude 4.7 and
//     later by default, DefaultThinkingMode; Config.ThinkingModes over it) get
//     {"type":"adaptive"} for either one instead, since they answer a budget with a 400.
//     Previous (a stored answer) is refused: the Messages API keeps none. Thinking blocks go
//     back only when signed (or redacted): another provider's reasoning is dropped.
//   - Tools the neutral fields cannot describe — server tools (web_search_20250305,
//     code_execution…) and client tools defined by a versioned type (bash_20250124,
//     text_editor_20250728, computer use) — are given as providers.Tool{System:
//     providers.SystemAnthropic, Raw: …} and sent as they are, whatever their type; a raw tool
//     of another system is refused. A client tool so defined is called as any other (tool_use
//     blocks become ToolCalls).
//   - Answer blocks that are not text, tool_use or thinking — server_tool_use, the
//     *_tool_result blocks of server tools, any type the API adds later — are kept verbatim in
//     Message.ProviderBlocks (a stream's on its Done delta, built from its content_block_start
//     and input_json_delta events, bounded by Limits.MaxResponseBytes), marked with the
//     provider's origin and where they stood; an assistant message sends them back, to a
//     provider of the same origin only, where they stood, its text split around them.
//   - CountTokens counts a request's prompt with POST /v1/messages/count_tokens
//     (providers.TokenCounter); Config.CountTokens has the steady client count every call
//     before sending it, for pacing.
//   - Usage.InputTokens counts the whole prompt: input_tokens plus the tokens written to and
//     read from the prompt cache, which Anthropic reports apart.
//   - Embed always fails with KindBadRequest: Anthropic has no embeddings API.
//
// # Guarantees
//
// A Provider makes one HTTP exchange per call over the configured *http.Client and never
// retries: the resilience pipeline underneath is the only retry layer. Request bodies are
// in memory, so the pipeline can replay them (http.Request.GetBody is set). Every response
// body is closed, error paths included, and read with a size limit.
//
// Every failure is a *providers.Error: the error envelope's type and message, a Kind from
// the status rules every provider shares (429 rate_limit_error is KindRateLimited with the
// retry-after hint; a spend limit, billing_error or "credit balance is too low" is KindQuotaExhausted; 529
// overloaded_error is KindOverloaded; "prompt is too long" and "input length and `max_tokens`
// exceed context limit" are KindContextTooLong, with the sizes they state in Error.Overflow; a
// model that refuses a prefill is KindBadRequest with Code providers.CodePrefillUnsupported),
// the HTTP status and the request-id header. An error body that is not an envelope becomes a short
// one-line message; an HTML page is never shown. Neither errors nor a printed Config ever hold
// the API key.
//
// A stream is complete once message_delta brought its stop_reason, whether message_stop
// follows or the body ends or breaks without it. It reports an "error" event inside a 200
// response as a *providers.Error classified by its type, so an overloaded_error counts as an
// overload; an event that is not a JSON object as KindUnavailable, naming it; a body that ends
// before the stop_reason as KindStreamTruncated, never as success; the resilience pipeline's
// stream-idle or total timeout as KindTimeout; a broken connection as KindUnavailable. Each of
// these carries the text delivered so far in Partial and the usage reported so far in Usage.
package anthropic
