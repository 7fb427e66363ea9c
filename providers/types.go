package providers

import "encoding/json"

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
	// Compaction is the compaction item an assistant message came with (server-side
	// compaction: ChatRequest.CompactThreshold): the provider's encrypted summary of the
	// conversation before it. Send it back with the message; it is provider state, sent only
	// to its Origin (see state.go and PruneCompacted).
	Compaction *Compaction
	// ProviderBlocks are the blocks of an assistant answer that the fields above do not
	// model — Anthropic's server tool calls and their results (server_tool_use,
	// web_search_tool_result, code_execution_tool_result…), and any block type an API adds
	// later — kept verbatim, each where it stood among the text and the tool calls, so that
	// the provider that wrote them reads them back on the next turn (ChatResponse.Message
	// carries them). They are provider state (see state.go): send them back unchanged with
	// the rest of the message; a provider of another origin drops them.
	ProviderBlocks []ProviderBlock
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
//
// A tool the neutral fields cannot describe — a provider's server tool (Anthropic's
// {"type":"web_search_20250305","name":"web_search","max_uses":5}), or a client tool it
// defines by a versioned type (bash_20250124, text_editor_20250728, computer use) — is given
// as Raw, its definition in the provider's own shape, with System naming the provider whose
// API takes it; the other fields stay empty. It is sent as it is, whatever its type, so a
// tool version released after this module works the day it is announced. Only providers of
// that System take the request: the client skips the others in a fallback chain, and a
// provider of another system refuses it (KindBadRequest, before sending). A client tool
// defined so is called as any other (ChatResponse.Message.ToolCalls, by its name); a server
// tool's calls and results come back as Message.ProviderBlocks.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
	// Cache marks the end of the cacheable prefix after this tool (see Message.Cache).
	Cache CacheTTL
	// System is the GenAI system (SystemAnthropic…) whose API takes Raw; "" for a function
	// tool.
	System string
	// Raw is the tool's definition as the API of System takes it: a JSON object with its
	// "type" (and, for every type known today, its "name"). nil for a function tool.
	Raw json.RawMessage
}

// RawType returns the "type" of a tool given as Raw, "" for a function tool or a Raw that
// names none.
func (t Tool) RawType() string {
	typ, _ := rawHead(t.Raw)
	return typ
}

// ToolName returns the name the model calls the tool by: Name, or the "name" of a Raw
// definition.
func (t Tool) ToolName() string {
	if t.Raw == nil {
		return t.Name
	}
	_, name := rawHead(t.Raw)
	return name
}

// rawHead reads the "type" and "name" of a JSON object, "" for either that is missing or
// not a string.
func rawHead(raw json.RawMessage) (typ, name string) {
	if len(raw) == 0 {
		return "", ""
	}
	var head struct {
		Type any `json:"type"`
		Name any `json:"name"`
	}
	if json.Unmarshal(raw, &head) != nil {
		return "", ""
	}
	typ, _ = head.Type.(string)
	name, _ = head.Name.(string)
	return typ, name
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
	// Conversation continues a conversation the provider keeps (OpenAI Responses'
	// conversation): its items come before Messages, and the call adds its input and answer
	// to it. Like Previous (which it excludes) it pins the call to the provider that keeps it,
	// and a provider that keeps none refuses the request (see state.go).
	Conversation *Conversation
	// CompactThreshold, above 0, asks the provider to compact the conversation server-side
	// once its rendered prompt passes that many tokens (OpenAI Responses' context_management
	// [{"type":"compaction","compact_threshold":N}]): the answer then carries a compaction item
	// (Message.Compaction) standing for the conversation before it. 0 asks nothing; wires
	// without server-side compaction ignore it.
	CompactThreshold int
	// Prefill says that the last message, an assistant message, is the beginning of the answer,
	// which the provider continues rather than answers anew (an assistant prefill): the answer
	// then holds only what follows it. Anthropic's Messages API continues any final assistant
	// message (not with extended thinking, not on the 4.6 models and later, and never one
	// ending in whitespace); an OpenAI-compatible server only in the flavour it declares
	// (openai.Config.Prefill); OpenAI and Azure have none. A provider that cannot continue the
	// request refuses it before sending: KindBadRequest with Code CodePrefillUnsupported. See
	// Prefiller. The client sets it when it continues a stream cut after content
	// (StreamRescue "continue").
	Prefill bool
}
