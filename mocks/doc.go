// Package mocks is a fake LLM server for tests, examples and demos: it speaks the OpenAI (chat
// completions and Responses), Azure OpenAI and Anthropic wire formats, JSON and streaming, and
// fails on command.
//
// # Endpoints
//
//   - OpenAI: POST /v1/chat/completions (stream, stream_options.include_usage, tool calls),
//     POST /v1/embeddings (float or base64), GET /v1/models. Auth: Authorization: Bearer.
//   - OpenAI Responses: POST /v1/responses (Azure: /openai/v1/responses, no api-version): input
//     items (messages with input_text and input_image parts, function_call,
//     function_call_output, reasoning, compaction), the response object, or its semantic events each with
//     a sequence_number (response.created, response.in_progress, response.output_item.added,
//     response.content_part.added, response.output_text.delta, response.refusal.delta,
//     response.function_call_arguments.delta, response.reasoning_summary_text.delta, their done
//     events, response.completed or response.incomplete, and "error" events). A reasoning
//     effort adds a reasoning item (its summary with reasoning.summary, its encrypted content
//     with include reasoning.encrypted_content); answers stored (store, on by default) can be
//     continued (previous_response_id) and their reasoning items named by ID; the fake refuses
//     max_output_tokens below 16, reasoning content it did not encrypt, and unknown stored IDs
//     as the API does. The stream's terminal event is response.completed, which carries the
//     finish and the usage: OmitTerminal changes nothing there.
//   - OpenAI Responses in background mode (background: true, with store): the answer comes
//     back queued; GET /v1/responses/{id} reads it (in_progress at the first read, then
//     complete), POST /v1/responses/{id}/cancel cancels it, an unknown ID is a 404. A
//     background stream is kept whole, cut by its step's faults like any stream (Cut,
//     CutAfter), and GET /v1/responses/{id}?stream=true&starting_after=N serves its events
//     after N, so a cut stream can be resumed (see background.go). A step with Expire, or
//     [Server.Forget], makes an answer gone: its reads, cancels and resumes are 404s. Reads
//     and cancels follow only their own route's script ([RouteStoredResponses]): an error
//     step fails them, another adds its headers (a Retry-After on a pending read).
//   - OpenAI Responses server-side compaction (context_management
//     [{"type":"compaction","compact_threshold":N}]): a prompt of N tokens or more is answered
//     with a compaction item first (its encrypted content this server's); a compaction item in
//     the input replaces every message before it but the instructions, and one the server did
//     not encrypt is refused, as another provider's is by the API.
//   - OpenAI Conversations: POST /v1/conversations creates one, GET and DELETE
//     /v1/conversations/{id} read and delete it; a Responses request that names it
//     (conversation) gets its items before its input and adds its turn to it; an unknown one
//     is a 404, one with previous_response_id a 400 (see conversations.go).
//   - Azure OpenAI: POST /openai/deployments/{deployment}/chat/completions and …/embeddings,
//     with ?api-version= required. Auth: api-key header (or Bearer).
//   - Anthropic: POST /v1/messages (JSON, or the full event stream message_start,
//     content_block_start, ping, content_block_delta…, content_block_stop, message_delta,
//     message_stop), GET /v1/models with anthropic-version. Auth: x-api-key or Bearer;
//     anthropic-version is required. Thinking with a budget, or adaptive
//     ({"type":"adaptive"}); the Claude models of version 4.7 and later refuse a budget, as
//     the API does. Tools by versioned type (web_search_20250305, bash_20250124…) are taken, a
//     type of another shape refused; with a web search tool the answer searches first (a text,
//     server_tool_use with its input streamed as input_json_delta, web_search_tool_result with
//     encrypted content, a cited text), and a search sent back on the next turn must come back
//     as it was (its result after its server_tool_use, its encrypted content unchanged) or it
//     is a 400. [Step.Blocks] adds any block, of any type. POST /v1/messages/count_tokens
//     answers {"input_tokens": n}, the prompt tokens the answers report, and refuses what
//     counts no prompt (max_tokens, stream…); it has a route of its own ([RouteCountTokens])
//     and no rate limit.
//
// A missing key is the provider's 401, a bad body its 400, before any fault is chosen. Replies
// are deterministic: the scripted text, the server's [WithReply] text, or an echo of the last
// user message; token counts follow [Tokens] (about 4 bytes per token), or for the prompt a
// tokenizer of the test's own ([WithTokenizer]). Every reply carries a request id
// (x-request-id or request-id) and the provider's rate-limit headers.
//
// # Choosing faults
//
// Each call takes one [Step], from the most specific source that has one:
//
//  1. the scenario its [ScenarioHeader] header names (user-defined with [WithScenario], or one
//     of [BuiltinScenarios]);
//  2. else the first [Outage] in force for its model and route, on the server's clock
//     ([WithOutage]); an outage consumes no script, which resumes where it was when the
//     outage ends;
//  3. else its model's own script while it lasts ([WithModelScript]; the model is the body's
//     "model", or the Azure deployment);
//  4. else its route's own script while it lasts ([WithRouteScript]);
//  5. else the default script ([WithScript], [Server.Script]) or default scenario;
//  6. else, in chaos mode ([WithChaos]), a random fault for a seeded fraction of calls;
//  7. else a normal reply.
//
// Before any of these, a request the API itself would refuse is refused, consuming no step: a
// missing key (401), a bad body (400), a prompt beyond its model's context window
// ([WithContextWindows]), a trailing assistant message to a model that rejects prefill
// ([WithRejectPrefill]), with a concurrency limit a request that finds the server full (529
// or 503), and, with rate limits, a request over its key's budget (429).
//
// A prefill is continued as the APIs continue it: the Messages API continues a final assistant
// message (refusing one that ends in whitespace or comes with extended thinking); the Chat
// Completions side one marked "prefix": true (DeepSeek, Mistral) or sent with
// continue_final_message and add_generation_prompt false (vLLM), and answers an unmarked one
// as a finished turn, as OpenAI does. The answer is what follows the prefill in the reply text
// (the reply whole when it does not begin with it), never the prefill again.
//
// Steps cover error statuses in the provider's envelope, 429 with retry-after-ms, Retry-After
// and rate-limit headers, quota exhaustion, Anthropic's 529, x-should-retry, the silent
// provider (headers late with Delay, never with Stall), connection resets, cut or truncated
// streams, error events in a 200 stream, malformed JSON and slow streams. Others strike a
// stream after it opened, where only a first-token limit, an idle limit or a check of the
// finish reason can tell: a late first token, a stall after N words, a malformed event
// mid-stream, a complete stream without its terminal event, a cut after N words (see [Step]
// for how events are counted). Refusals (OpenAI's refusal field, Anthropic's stop_reason
// "refusal") and OpenAI's content filter come whole or after N words. A [Config] loads all of
// it from a JSON file.
//
// # Rate limits
//
// With [WithRateLimits] (every key), [WithRouteRateLimits] (each key, on one route) or
// [WithKeyRateLimits] (one key), the server enforces requests and tokens per minute per API
// key, as the real APIs do: a request debits one
// request and its prompt plus max_tokens tokens, budgets refill continuously, a request that
// does not fit is answered 429 with retry-after and retry-after-ms, and every answer carries
// the key's real x-ratelimit-* (durations) or anthropic-ratelimit-* (RFC 3339) headers.
// [RateLimits.Minute] shortens the minute and [WithClock] replaces the clock, so tests of
// pacing take seconds or no time at all. A [Config] sets them with "limits", "routeLimits" and
// "keyLimits"; [Server.RateLimits], [Server.RouteRateLimits] and [Server.KeyRateLimits] change
// them while the server runs.
//
// # Latency profiles
//
// For tests and benchmarks of hedged requests and latency-aware routing, a [LatencyProfile]
// gives requests a time to first token drawn per request (a base delay, a log-normal spread
// around it and a jitter, and a fraction of stragglers that wait longer) and a pace between
// the words of a stream:
//
//	s := mocks.NewServer(
//		mocks.WithKeyLatency("sk-east", mocks.LatencyProfile{FirstToken: 80 * time.Millisecond,
//			Straggler: 2 * time.Second, StragglerRate: 0.1, Seed: 1, HeadersFirst: true}),
//		mocks.WithKeyLatency("sk-west", mocks.LatencyProfile{FirstToken: 120 * time.Millisecond}))
//
// A request takes its API key's profile ([WithKeyLatency]: one key per deployment), else its
// model's ([WithModelLatency]; an Azure deployment is its model), else its route's
// ([WithRouteLatency]), else every request's ([WithLatency]). [Server.Latency],
// [Server.ModelLatency], [Server.RouteLatency] and [Server.KeyLatency] change them for the
// requests that arrive next; a [Config] sets them with "latency", "modelLatency",
// "routeLatency" and "keyLatency". Stragglers fall at random (StragglerRate), as a real
// provider's do; a seed makes the draws repeatable, and StragglerEvery makes the count of
// stragglers exact where a test needs that (a benchmark of hedging should not: a straggler
// every n-th request almost never meets a hedge that straggles too). The [Journal] records
// each request's delay and whether it straggled. The delays run on the server's timers
// ([WithAfterFunc]: a manual clock makes them cost nothing) and end at once when the client
// goes away, so a cancelled hedge frees its handler.
//
// # Concurrency limit
//
// With [WithConcurrencyLimit] the server serves at most a number of calls at once, counting each
// from its arrival until its answer is written, and refuses the others at once as an
// overloaded provider does: Anthropic's 529 overloaded_error, OpenAI's 503 "The server is
// overloaded or not ready yet." (or 529); a route may have a limit of its own
// ([ConcurrencyLimit].Routes). [Server.SetConcurrencyLimit] and
// [Server.SetRouteConcurrencyLimit] change them while the server runs — the provider's capacity
// halving mid-run — and [Server.Concurrency] says how many were served, refused and in flight
// at most.
//
// # Steering a running server
//
// Everything above can change while the server runs, from Go ([Server.Script],
// [Server.RouteScript], [Server.RouteLatency], [Server.RouteRateLimits],
// [Server.SetRouteConcurrencyLimit], [Server.Reset], …) or from another process through the
// admin API, HTTP and JSON under [AdminPrefix] (/_fake/), which the fakellm command serves
// too and [Admin] is the Go client of:
//
//	a := mocks.Admin("http://127.0.0.1:8080")      // a fakellm started elsewhere
//	_ = a.RouteScript(ctx, mocks.RouteChat, mocks.Status(503).Always()) // the primary fails
//	_ = a.ResetRoute(ctx, mocks.RouteChat)                              // and recovers
//
// It changes a script (the default, a route's or a model's), a latency profile (every
// request's, a route's, a model's or an API key's), rate limits (every key's, a route's or a
// key's) and concurrency limits (the server's or a route's); it reads the settings in force
// with the scripts' positions and the counters ([State]), and the journal's last requests
// without their headers or bodies; it resets everything, or one route, to the settings the
// server started with. A change is published whole and applies to the requests that arrive
// after its answer: a request in flight keeps the step, the delays and the budget it began
// with. Every bad value is answered 400 naming the field, the value and what is allowed
// ([AdminError], [Problem]); a body is at most [MaxAdminBodyBytes]. The API answers loopback
// peers only, for a loopback Host and from no other Origin, whatever address the server
// listens on; [WithoutAdmin] turns it off. Its requests are not journaled.
//
// # The full request
//
// The fake answers a JSON Schema (OpenAI response_format json_schema, Anthropic
// output_config.format) with a small instance of the schema, a forced tool choice with a call
// of that tool, a thinking budget with a signed thinking block (and thinking_delta /
// signature_delta in streams), a reasoning effort with reasoning tokens, and reports prompt
// cache writes and reads; it checks image parts as the APIs do.
//
// # Bounds
//
// People leave the fake running as a dev server, so nothing a client sends can exhaust it:
// the work a request costs is linear in its size, and what outlives a request is bounded.
//
//   - Bodies: the server reads at most [DefaultMaxBodyBytes] (4 MiB; [WithMaxBodyBytes], a
//     scenario file's "maxBodyBytes", fakellm -max-body). A longer body is answered 413 in the
//     API's own error shape (type request_too_large), without being read at all when
//     Content-Length says so; a body is buffered as it arrives, not at its announced length.
//   - Nesting: a body that nests JSON deeper than [MaxJSONDepth] (64) levels is answered 400;
//     nested tool results, content blocks and JSON Schemas are then each read in one pass.
//   - Embeddings: at most [MaxEmbeddingInputs] (2048) inputs and [MaxEmbeddingValues]
//     inputs × dimensions per request (400 beyond); each input is hashed once.
//   - Replies: a streamed text or tool call has at most 4096 deltas (a longer echo groups
//     words); an unknown scenario name is echoed cut to 128 bytes.
//   - Memory kept across requests: the [Journal] within its [JournalLimits] (below), the fake
//     prompt cache's last 4096 prompts, and the rate-limit budgets of at most 10 000 keys.
//   - Configuration a request is checked against: at most [MaxModels] (1024) models each with
//     a script, a context window or a prefill rejection (looked up by name), and at most
//     [MaxOutages] (1024) outages (checked in order).
//
// The journal keeps the latest [DefaultJournalEntries] (10 000) requests, the first
// [DefaultJournalBodyBytes] (1 MiB) of each body (a longer one is cut and marked
// [Request].BodyTruncated) and [DefaultJournalTotalBytes] (64 MiB) in all, dropping the
// oldest; change them with [WithJournalLimits], a scenario file's "journal" or fakellm's
// -journal-* flags. Its counters ([Journal.Len], [Journal.Wait], [Journal.MaxConcurrency],
// [Journal.Stats]) count every request, kept or dropped.
//
// # Guarantees
//
// The server listens on 127.0.0.1 only. Stalls, delays and slow streams end when the client
// goes away or [Server.Close] is called, so Close never hangs and no goroutine outlives it. The
// [Journal] records the requests (secrets redacted), within its limits, and the peak
// concurrency. The package imports only the standard library.
package mocks
