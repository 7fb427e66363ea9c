package providers

import (
	"context"
	"encoding/json"
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
	// ToolCalls are the calls an assistant message asks for.
	ToolCalls []ToolCall
	// ToolCallID links a RoleTool message to the call it answers.
	ToolCallID string
}

// Tool is a function the model may call. Parameters is its JSON Schema.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
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
	FormatText ResponseFormat = ""     // free text (the default)
	FormatJSON ResponseFormat = "json" // a JSON object (JSON mode)
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
	Tools       []Tool
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

// Usage counts tokens.
type Usage struct {
	InputTokens  int
	OutputTokens int
}

// Total returns input plus output tokens.
func (u Usage) Total() int { return u.InputTokens + u.OutputTokens }

// ChatResponse is a provider-neutral chat answer.
type ChatResponse struct {
	// Provider is the name of the provider that served the call (set by the client, which
	// may have fallen back to another provider than the first one asked).
	Provider     string
	Model        string
	ID           string
	Message      Message // RoleAssistant, with Content and/or ToolCalls
	FinishReason FinishReason
	Usage        Usage
	RequestID    string // the provider's request ID header, for support tickets
	// ClientRequestID is the call's own ID, as the caller gave it (client.WithRequestID);
	// "" when none.
	ClientRequestID string
}

// Delta is one increment of a streamed answer.
type Delta struct {
	Text      string
	ToolCalls []ToolCallDelta
	// Done is set on the last delta of a complete stream, which carries FinishReason and
	// Usage (Usage may be zero when the provider reports none).
	Done         bool
	FinishReason FinishReason
	Usage        Usage
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
// it returns io.EOF. A stream that ends without its terminal event returns a *Error of kind
// KindStreamTruncated instead, never io.EOF. A failing Recv leaves the connection open, so that
// the caller can report the failure to the resilience pipeline (resilience.WithFailureReporter)
// before it closes; a stream may release its connection by itself after the Done delta.
// Close releases the connection; it is safe to call more than once and must be called.
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
	Provider   string
	Model      string
	Embeddings [][]float32
	Usage      Usage
	// ClientRequestID is the call's own ID, as the caller gave it (client.WithRequestID).
	ClientRequestID string
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
//     not an answer) is a *Error with the kind that fits (ErrorKind), the HTTP status, the
//     server's hint and request ID, and no secret in any field. Any other failure — a network
//     error, the pipeline's rejection (circuit open, bulkhead full, timeout, redirect), the
//     caller's cancellation — is either mapped to its kind (KindCanceled when ctx has ended)
//     or returned as the http.Client gave it, and the client maps it.
//   - Streams: ChatStream returns once the response headers arrived (an error status is
//     returned there, never as a stream). The Stream's Recv yields deltas in order, then a
//     last delta with Done, FinishReason and Usage, then io.EOF; a stream that ends without its
//     terminal event is KindStreamTruncated, never io.EOF; every failure carries the text
//     delivered so far in Error.Partial. A failing Recv leaves the connection open so the
//     caller can report the failure to the pipeline before it calls Close; Close releases the
//     connection, may be called more than once and from another goroutine, and must be called.
//   - Capabilities: it says what it can do through Describer (Description.Capabilities); a
//     provider that says nothing is tried for everything.
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
