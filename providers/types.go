package providers

import (
	"context"
	"encoding/json"
	"time"
)

// Role is the author of a message.
type Role string

// The message roles.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool" // the result of a tool call; ToolCallID says which
)

// Message is one turn of a conversation.
type Message struct {
	Role    Role
	Content string
	// Parts is the content of a user message made of several parts — text and images — in
	// order. Set Content or Parts, not both.
	Parts []Part
	// ToolCalls are the calls an assistant message asks for.
	ToolCalls []ToolCall
	// ToolCallID links a RoleTool message to the call it answers.
	ToolCallID string
	// Thinking is the reasoning an assistant message came with (ChatResponse.Message carries
	// it). Send it back unchanged with the rest of the message: Anthropic requires the
	// thinking blocks of the turn that asked for tools when its results are sent.
	Thinking []ThinkingBlock
	// Cache marks the end of a prompt prefix the provider may cache (Anthropic's
	// cache_control breakpoint on this message's last block; OpenAI caches prefixes by
	// itself and ignores it).
	Cache CacheTTL
}

// Part is one part of a message's content: Text, or Image.
type Part struct {
	Text  string
	Image *Image
}

// TextPart returns a text part.
func TextPart(text string) Part { return Part{Text: text} }

// ImagePart returns an image part.
func ImagePart(img Image) Part { return Part{Image: &img} }

// Image is an image given to the model: by URL, or as its bytes with their media type.
type Image struct {
	URL string
	// Data is the image itself (sent base64-encoded) and MediaType its type: "image/png",
	// "image/jpeg", "image/gif" or "image/webp".
	Data      []byte
	MediaType string
	// Detail is OpenAI's resolution hint: "low", "high" or "auto" ("" for the default).
	Detail string
}

// ThinkingBlock is one block of a model's reasoning: its text and the provider's signature
// of it, or, for reasoning the provider withholds, Redacted (opaque data to send back); for
// OpenAI's Responses API, a reasoning item: its ID, its summary as Text and, when the
// provider returned it, its Encrypted content. A block is provider state: send it back
// unchanged, and each wire sends back only what it can read (see state.go).
type ThinkingBlock struct {
	Text      string
	Signature string
	Redacted  string
	// ID is the reasoning item's ID (OpenAI Responses: "rs_…"), "" for other blocks.
	ID string
	// Encrypted is the reasoning item's encrypted_content, which lets a provider that
	// stores nothing (ChatRequest.Store false) read its reasoning back; "" when none came.
	Encrypted string
	// Origin names, opaquely, the endpoint that produced the block (its SharingScope): a
	// block with an Origin is sent back only to a provider of the same origin and dropped
	// by every other. "" for blocks that name none (Anthropic's signed blocks).
	Origin string
}

// CacheTTL asks for a prompt-cache breakpoint and says for how long: "" none, CacheDefault
// (5 minutes with Anthropic), Cache1h.
type CacheTTL string

// The cache lifetimes.
const (
	CacheNone    CacheTTL = ""
	CacheDefault CacheTTL = "default"
	Cache5m      CacheTTL = "5m"
	Cache1h      CacheTTL = "1h"
)

// Tool is a function the model may call. Parameters is its JSON Schema.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
	// Cache marks the end of the cacheable prefix after this tool (see Message.Cache).
	Cache CacheTTL
}

// ToolChoice says whether and which tools the model must call: the zero value leaves it to
// the provider (auto when tools are given).
type ToolChoice struct {
	Mode ToolChoiceMode
	Name string // the tool to call, with ToolChoiceTool
}

// ToolChoiceMode is how the model may use the tools.
type ToolChoiceMode string

// The tool choice modes.
const (
	ToolChoiceAuto     ToolChoiceMode = "auto"     // the model decides
	ToolChoiceNone     ToolChoiceMode = "none"     // no tool call
	ToolChoiceRequired ToolChoiceMode = "required" // at least one tool call, any tool
	ToolChoiceTool     ToolChoiceMode = "tool"     // a call of the tool named Name
)

// JSONSchema asks for an answer that is a JSON value matching Schema (structured output).
type JSONSchema struct {
	// Name names the schema (OpenAI requires one: letters, digits, '_' and '-'); "" means
	// "response".
	Name        string
	Description string
	Schema      json.RawMessage
	// Strict asks the provider to enforce the schema exactly (OpenAI's strict mode, which
	// requires every property to be required and additionalProperties false). Anthropic's
	// structured outputs always enforce it.
	Strict bool
}

// Reasoning configures a reasoning model: Effort for models that take an effort level
// (OpenAI's reasoning_effort, Anthropic's output_config.effort), BudgetTokens for
// Anthropic's extended thinking (at least 1 024, below MaxTokens). Anthropic's models that
// take only adaptive thinking (4.7 and later; anthropic.Config.ThinkingModes) get adaptive
// thinking for a budget or an effort, the budget itself unsent.
type Reasoning struct {
	Effort       string // "minimal", "low", "medium", "high" (and the provider's own levels)
	BudgetTokens int
	// Summary asks a provider that summarises its reasoning for a summary of it (OpenAI
	// Responses' reasoning.summary: "auto", "concise", "detailed"), delivered as
	// ChatResponse.Reasoning and Delta.Reasoning; "" asks none. Other wires ignore it.
	Summary string
}

// ToolCall is a call the model asks for; Arguments is a JSON object.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// ResponseFormat asks for structured output.
type ResponseFormat string

// The response formats.
const (
	FormatText       ResponseFormat = ""            // free text (the default)
	FormatJSON       ResponseFormat = "json"        // a JSON object (JSON mode)
	FormatJSONSchema ResponseFormat = "json_schema" // a JSON value matching ChatRequest.Schema
)

// ChatRequest is a provider-neutral chat request. Zero fields are left to the provider's
// defaults; pointers distinguish "unset" from zero.
type ChatRequest struct {
	Model       string
	Messages    []Message
	MaxTokens   int
	Temperature *float64
	TopP        *float64
	Stop        []string
	Format      ResponseFormat
	// Schema is the JSON Schema of a structured output: set it, with Format FormatJSONSchema
	// or Format left empty.
	Schema *JSONSchema
	Tools  []Tool
	// ToolChoice says whether and which tool the model must call.
	ToolChoice ToolChoice
	// ParallelToolCalls, when set, allows or forbids several tool calls in one answer.
	ParallelToolCalls *bool
	// Reasoning configures reasoning models; nil leaves the provider's default.
	Reasoning *Reasoning
	// Previous continues the conversation from an answer its provider stored (OpenAI
	// Responses' previous_response_id; ChatResponse.Stored gives it): Messages then holds only
	// the new turn. It pins the call to the provider that stored it: no other is ever asked,
	// and a provider that keeps no stored answers refuses the request (see state.go).
	Previous *StoredResponse
	// Store says whether the provider keeps the answer (OpenAI Responses' store): nil leaves
	// its default (OpenAI: on), false stores nothing, as zero data retention requires. Wires
	// that store nothing ignore it.
	Store *bool
	// Include names extra data the answer should carry (OpenAI Responses' include, e.g.
	// IncludeReasoningEncrypted). Wires without it ignore it.
	Include []string
	// Background asks the provider to work on the answer without holding the connection
	// (OpenAI Responses' background; see background.go): Chat returns at once with the answer
	// pending (ChatResponse.Status) and stored (ChatResponse.Stored), for
	// BackgroundResponder.Retrieve or Cancel. ChatStream streams it as any answer, and a cut
	// stream reads the rest of the same answer instead of failing (OpenAI: starting_after).
	// It needs a stored answer: with Store false, or on a provider that stores no answers, the
	// request is refused (KindBadRequest, before sending), and the client sends it only to
	// routes that store answers and never hedges it.
	Background bool
}

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
	// Requests and Tokens are the per-minute budgets of requests and of tokens (Anthropic's
	// combined input and output budget, or OpenAI's).
	Requests, Tokens RateBudget
	// InputTokens and OutputTokens are Anthropic's separate token budgets.
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
	Text    string
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
	// RateLimit, on the first delta, is what the provider's rate-limit headers said.
	RateLimit *RateLimit
	// Stored, on the Done delta, names the stored answer as ChatResponse.Stored does.
	Stored *StoredResponse
}

// ToolCallDelta is a fragment of a streamed tool call: the first fragment of a call carries
// its ID and Name, later ones more Arguments text. Index identifies the call.
type ToolCallDelta struct {
	Index     int
	ID        string
	Name      string
	Arguments string
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
//   - Every failure carries the text delivered so far in Error.Partial, and the usage the
//     provider reported so far (Anthropic's message_start and message_delta, an OpenAI usage
//     chunk) in Error.Usage, nil when none came: what an abandoned attempt was billed.
type Stream interface {
	Recv() (Delta, error)
	Close() error
}

// TextKeeper is implemented by a Stream that keeps the text it has delivered (the Text of
// every delta so far, in order), as the streams of this module's providers do for the Partial
// of their errors. The client then reads it instead of keeping a second copy. Text must be
// safe to call between calls of Recv.
type TextKeeper interface {
	Text() string
}

// EmbedRequest asks for one embedding per input.
type EmbedRequest struct {
	Model  string
	Inputs []string
}

// EmbedResponse holds the embeddings in input order.
type EmbedResponse struct {
	Provider string
	// Deployment is the deployment that served it, as in ChatResponse.
	Deployment string
	// Model is the model that served the call, as in ChatResponse.
	Model      string
	Embeddings [][]float32
	Usage      Usage
	RateLimit  *RateLimit
	// ClientRequestID is the call's own ID, as the caller gave it (client.WithRequestID).
	ClientRequestID string
	// FailedAttempts is the number of HTTP attempts that failed before the one that served
	// (set by the client).
	FailedAttempts int
}

// Provider turns neutral requests into calls to one LLM API. It is the contract between
// steady's client and every provider, in-tree or not:
//
//   - Concurrency: a Provider is safe for concurrent use.
//   - Transport: it makes exactly one HTTP exchange per call, over the *http.Client it was
//     built with (the client gives it one whose transport is the provider's resilience
//     pipeline). It never retries, never follows a redirect, and never sleeps: the pipeline is
//     the only retry layer.
//   - Requests: it refuses a request it cannot express before sending anything, with a *Error
//     of KindBadRequest (ChatRequest.Validate and EmbedRequest.Validate check the neutral
//     rules); it never modifies req.
//   - Bodies: it closes every response body it receives, on every path, and reads each within
//     its Limits (a LimitError past them).
//   - Errors: a failure the API reported (an error status, an error envelope, a 200 that is
//     not an answer, a refusal, an answer cut by a content filter) is a *Error with the kind
//     that fits (ErrorKind), the HTTP status, the server's hint and request ID, and no secret
//     in any field. Any other failure — a network
//     error, the pipeline's rejection (circuit open, bulkhead full, timeout, redirect), the
//     caller's cancellation — is either mapped to its kind (KindCanceled when ctx has ended)
//     or returned as the http.Client gave it, and the client maps it.
//   - Streams: ChatStream returns once the response headers arrived (an error status is
//     returned there, never as a stream). The Stream's Recv yields deltas in order, then a
//     last delta with Done, FinishReason and Usage, then io.EOF; a stream that ends before its
//     finish reason is KindStreamTruncated, never io.EOF, and one that ends after it is
//     complete (see Stream for every rule); every failure carries the text delivered so far in
//     Error.Partial and the usage reported so far in Error.Usage. A failing Recv leaves the
//     connection open so the caller can report the failure to the pipeline before it calls
//     Close; Close releases the connection, may be called more than once and from another
//     goroutine, and must be called.
//   - Capabilities: it says what it can do through Describer (Description.Capabilities); a
//     provider that says nothing is tried for everything but stored answers.
//   - Provider state: it sends back only the state it can read (ThinkingBlock, by its fields
//     and Origin) and drops the rest; it refuses a request that continues from a stored answer
//     (Previous) it does not hold, or cannot hold at all, with KindBadRequest before sending
//     (see state.go).
type Provider interface {
	// Name is the provider's configured name, e.g. "openai" or "azure-eu".
	Name() string
	// Chat sends req and waits for the whole answer.
	Chat(ctx context.Context, req *ChatRequest) (*ChatResponse, error)
	// ChatStream sends req and returns the answer as it is generated.
	ChatStream(ctx context.Context, req *ChatRequest) (Stream, error)
	// Embed returns one embedding per input of req, in input order.
	Embed(ctx context.Context, req *EmbedRequest) (*EmbedResponse, error)
}
