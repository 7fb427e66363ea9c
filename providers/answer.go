package providers

import (
	"encoding/json"
	"time"
)

// FinishReason says why the model stopped.
type FinishReason string

// The finish reasons, mapped from each provider's own vocabulary.
const (
	FinishStop          FinishReason = "stop"           // natural end or a stop sequence
	FinishLength        FinishReason = "length"         // max tokens reached
	FinishToolCalls     FinishReason = "tool_calls"     // the model asks for tool calls
	FinishContentFilter FinishReason = "content_filter" // output withheld by a safety filter
	FinishOther         FinishReason = "other"          // anything else the provider reported
)

// Usage counts tokens. InputTokens is the whole prompt, cached parts included;
// OutputTokens is the whole answer, reasoning included.
type Usage struct {
	InputTokens  int
	OutputTokens int
	// CachedInputTokens is the part of InputTokens read from the provider's prompt cache.
	CachedInputTokens int
	// CacheWriteInputTokens is the part of InputTokens written to the prompt cache
	// (Anthropic reports it; OpenAI caches for free and does not).
	CacheWriteInputTokens int
	// ReasoningTokens is the part of OutputTokens spent reasoning.
	ReasoningTokens int
}

// Total returns input plus output tokens.
func (u Usage) Total() int { return u.InputTokens + u.OutputTokens }

// Add returns the sum of u and v, field by field.
func (u Usage) Add(v Usage) Usage {
	return Usage{InputTokens: u.InputTokens + v.InputTokens, OutputTokens: u.OutputTokens + v.OutputTokens,
		CachedInputTokens:     u.CachedInputTokens + v.CachedInputTokens,
		CacheWriteInputTokens: u.CacheWriteInputTokens + v.CacheWriteInputTokens,
		ReasoningTokens:       u.ReasoningTokens + v.ReasoningTokens}
}

// ChatResponse is a provider-neutral chat answer.
type ChatResponse struct {
	// Provider is the name of the provider that served the call (set by the client, which
	// may have fallen back to another provider than the first one asked).
	Provider string
	// Deployment is the deployment that served it, "<provider>/<deployment>", or the
	// provider's name for a provider of one (set by the client).
	Deployment string
	// Model is the model that served the call: as the server named it, else the model it was
	// asked for (after the client's model mapping for a fallback).
	Model        string
	ID           string
	Message      Message // RoleAssistant, with Content and/or ToolCalls
	FinishReason FinishReason
	Usage        Usage
	RequestID    string // the provider's request ID header, for support tickets
	// ClientRequestID is the call's own ID, as the caller gave it (client.WithRequestID);
	// "" when none.
	ClientRequestID string
	// Reasoning is the reasoning text the provider returned (Anthropic's thinking, the
	// reasoning_content of OpenAI-compatible servers), "" when none; the blocks themselves
	// are in Message.Thinking.
	Reasoning string
	// JSON is the answer as JSON when the request asked for a structured output (Schema or
	// FormatJSON) and the answer is valid JSON; nil otherwise (a refusal, a cut answer).
	JSON json.RawMessage
	// RateLimit is what the provider's rate-limit headers said of this answer; nil when it
	// sent none.
	RateLimit *RateLimit
	// FailedAttempts is the number of HTTP attempts that failed before the one that served:
	// retries of the serving route and every attempt of the routes tried before it (set by the
	// client).
	FailedAttempts int
	// AbandonedUsage is the usage servers reported for attempts the call abandoned — a stream
	// cut after its usage was known — which they may bill (set by the client).
	AbandonedUsage Usage
	// Hedges is the number of hedges the client sent for the call — the same request sent to
	// another route because the first had no answer after the hedge delay — and HedgeWon
	// reports that a hedge served the answer (set by the client).
	Hedges   int
	HedgeWon bool
	// Stored, when the provider stored the answer (OpenAI Responses with Store not false),
	// names it for the next turn's ChatRequest.Previous; nil otherwise — another wire served
	// the call, or nothing was stored: send the whole conversation then.
	Stored *StoredResponse
	// Status is where the answer stands on wires that state it (OpenAI Responses); "" on
	// others. Status.Pending() is true only for a background answer not finished yet
	// (ChatRequest.Background, BackgroundResponder.Retrieve): its Message is not the answer.
	Status ResponseStatus
	// Conversation, when the call continued a conversation its provider keeps
	// (ChatRequest.Conversation), names it with the provider's Origin; nil otherwise.
	Conversation *Conversation
	// RetryAfter, on a pending background answer (Status.Pending()), is how long the server
	// asked the caller to wait before reading it again (its Retry-After or retry-after-ms
	// header, at most 24 h); 0 when it said nothing, and on every other answer.
	RetryAfter time.Duration
	// Cost is what the call cost at the client's prices: the serving attempt and the attempts
	// it abandoned (set by the client; zero without prices).
	Cost CallCost
}

// DecodeJSON decodes the structured answer into v: an error when the answer is no JSON.
func (r *ChatResponse) DecodeJSON(v any) error {
	if r.JSON == nil {
		return &Error{Provider: r.Provider, Kind: KindUnavailable, Message: "the answer is not the JSON the request asked for"}
	}
	return json.Unmarshal(r.JSON, v)
}

// RateLimit is a snapshot of a provider's rate limits, from the headers of one answer
// (OpenAI's x-ratelimit-*, Anthropic's anthropic-ratelimit-*). A zero field was not sent.
type RateLimit struct {
	// Requests and Tokens are the per-minute limits of requests and of tokens (Anthropic's
	// combined input and output budget, or OpenAI's).
	Requests, Tokens RateBudget
	// InputTokens and OutputTokens are Anthropic's separate token rate limits.
	InputTokens, OutputTokens RateBudget
	// At is when the answer arrived: the resets are relative to it.
	At time.Time
}

// RateBudget is one rate limit: the limit, what remains of it, and when it is whole again.
type RateBudget struct {
	Limit, Remaining int
	Reset            time.Time
}

// Delta is one increment of a streamed answer.
type Delta struct {
	// Restart is set on the first delta of an answer that replaces everything the stream
	// delivered before it: the client rescued a stream that failed after content on another
	// route (StreamRescue "restart"). Discard what you have received and start again.
	Restart bool
	// Continued is set on the first delta of the rest of an answer that another route
	// continues: the client continued a stream that failed after content (StreamRescue
	// "continue"). Keep what you have: what follows goes on from it, nothing repeated.
	Continued bool
	Text      string
	// Reasoning is a fragment of the model's reasoning text (Anthropic's thinking deltas,
	// the reasoning_content of OpenAI-compatible servers).
	Reasoning string
	ToolCalls []ToolCallDelta
	// Done is set on the last delta of a complete stream, which carries FinishReason and
	// Usage (Usage may be zero when the provider reports none, or when the stream ended after
	// its finish reason but before its usage: see Stream).
	Done         bool
	FinishReason FinishReason
	Usage        Usage
	// Thinking, on the Done delta, holds the reasoning blocks of the whole answer, signed,
	// to send back with the assistant message in a multi-turn tool conversation.
	Thinking []ThinkingBlock
	// ProviderBlocks, on the Done delta, holds the blocks of the whole answer that the
	// neutral deltas do not carry (a server tool's call and results: see
	// Message.ProviderBlocks), to send back with the assistant message. Their At counts the
	// bytes of the Text deltas before them, their Calls the tool calls.
	ProviderBlocks []ProviderBlock
	// RateLimit, on the first delta the stream yields — whatever it carries: text, a tool
	// call, or the Done delta of an answer with no visible content (a reasoning model that
	// spent its budget thinking) — is what the provider's rate-limit headers said; nil on
	// every later delta, and when the headers said nothing. A stream that fails carries it on
	// its error too (Error.RateLimit), whether or not a delta took it.
	RateLimit *RateLimit
	// Model, on the Done delta, is the model that served the answer as the server named it
	// (OpenAI's chunks, Anthropic's message_start, the Responses API's response.model), as
	// ChatResponse.Model is for a whole answer; "" when the server named none (the client's
	// Stream.Model then falls back to the model it asked for).
	Model string
	// Stored, on the Done delta, names the stored answer as ChatResponse.Stored does.
	Stored *StoredResponse
	// Compaction, on the Done delta, is the answer's compaction item (see Message.Compaction),
	// to send back with the assistant message; nil when none came.
	Compaction *Compaction
	// Conversation, on the Done delta, names the conversation as ChatResponse.Conversation does.
	Conversation *Conversation
}

// ToolCallDelta is a fragment of a streamed tool call: the first fragment of a call carries
// its ID and Name, later ones more Arguments text. Index identifies the call.
type ToolCallDelta struct {
	Index     int
	ID        string
	Name      string
	Arguments string
	// Restart is set on the first fragment of a tool call that replaces the call of the same
	// Index whose arguments were cut (StreamRescue "continue"): discard the arguments received
	// for that Index; the call starts again with this fragment's ID and Name. Arguments are
	// never spliced from two answers.
	Restart bool
}

// Stream reads a streamed answer. Recv returns deltas in order; after the delta with Done set
// it returns io.EOF. A failing Recv leaves the connection open, so that the caller can report
// the failure to the resilience pipeline (resilience.WithFailureReporter) before it closes; a
// stream may release its connection by itself after the Done delta. Close releases the
// connection; it is safe to call more than once and must be called.
//
// How a stream ends, on every wire:
//
//   - Complete means complete: once the provider sent its finish reason (OpenAI: a choice's
//     finish_reason; Anthropic: message_delta's stop_reason), the answer is whole. The stream
//     then gives its Done delta, with the finish reason and the usage reported, whether the
//     body goes on to its terminal event ("data: [DONE]", message_stop) or ends without it:
//     cleanly, before OpenAI's usage chunk (Usage is then zero), or broken (a reset, an
//     unexpected EOF, the pipeline's timeout, a limit). Only the caller's own cancellation or
//     Close, and what the server says after it (an error event, a malformed event), still fail.
//   - A stream that ends before its finish reason is KindStreamTruncated when the body ended
//     cleanly, KindUnavailable (or the pipeline's KindTimeout) when it broke; never io.EOF.
//   - An event whose data is not a JSON object is never skipped: the stream fails with
//     KindUnavailable, saying which event (counting from 1) it was.
//   - A whole stream that is not the answer asked for fails: a refusal (OpenAI's
//     delta.refusal, Anthropic's stop_reason "refusal") with KindRefused, OpenAI's
//     finish_reason "content_filter" with KindContentFiltered. Refusal text is never
//     delivered as Text; it is the error's Message.
//   - An answer that grows past Limits.MaxResponseBytes — whatever it is made of, however
//     many events carry it — fails with KindUnavailable wrapping a *LimitError.
//   - Every failure carries the text delivered so far in Error.Partial, the usage the
//     provider reported so far (Anthropic's message_start and message_delta, an OpenAI usage
//     chunk) in Error.Usage, nil when none came — what an abandoned attempt was billed — and
//     the rate-limit snapshot of the response headers in Error.RateLimit.
//   - The first delta a stream yields carries that snapshot (Delta.RateLimit), and the Done
//     delta the model that served as the server named it (Delta.Model).
type Stream interface {
	Recv() (Delta, error)
	Close() error
}

// TextKeeper is implemented by a Stream that keeps the text it has delivered (the Text of
// every delta so far, in order), as the streams of this module's providers do for the Partial
// of their errors, within their Limits.MaxResponseBytes. The client then reads it instead of
// keeping a second copy. Text must be safe to call between calls of Recv. The client keeps
// the text of a Stream that is no TextKeeper itself, and bounds what such a stream delivers
// (text, reasoning, tool calls) at DefaultMaxResponseBytes, past which the stream fails as a
// provider's would; a provider with another bound implements TextKeeper and bounds its own.
type TextKeeper interface {
	Text() string
}
