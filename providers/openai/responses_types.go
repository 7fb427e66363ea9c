package openai

import (
	"encoding/json"

	"github.com/steadyllm/steady/providers"
)

// The Responses API's wire format, as far as this package speaks it: the request body, the
// response object and the stream events. Hosted tools and files are left out; output items of
// other types are skipped when read.

// respRequest is the body of POST /responses.
type respRequest struct {
	Model              string          `json:"model"`
	Input              []respItem      `json:"input"`
	MaxOutputTokens    int             `json:"max_output_tokens,omitempty"`
	Temperature        *float64        `json:"temperature,omitempty"`
	TopP               *float64        `json:"top_p,omitempty"`
	Tools              []respTool      `json:"tools,omitempty"`
	ToolChoice         any             `json:"tool_choice,omitempty"` // "auto", "none", "required" or a respNamedChoice
	ParallelToolCalls  *bool           `json:"parallel_tool_calls,omitempty"`
	Text               *respTextConfig `json:"text,omitempty"`
	Reasoning          *respReasoning  `json:"reasoning,omitempty"`
	Store              *bool           `json:"store,omitempty"`
	Include            []string        `json:"include,omitempty"`
	PreviousResponseID string          `json:"previous_response_id,omitempty"`
	Conversation       string          `json:"conversation,omitempty"`
	ContextManagement  []respContext   `json:"context_management,omitempty"`
	Stream             bool            `json:"stream,omitempty"`
	Background         bool            `json:"background,omitempty"`
}

// respContext is an entry of context_management: {"type":"compaction","compact_threshold":N},
// server-side compaction once the rendered prompt passes N tokens.
type respContext struct {
	Type             string `json:"type"`
	CompactThreshold int    `json:"compact_threshold,omitempty"`
}

// respItem is an input item. Type says which fields apply: "message" Role and Content;
// "function_call" CallID, Name and Arguments; "function_call_output" CallID and Output;
// "reasoning" ID, Summary and EncryptedContent; "compaction" ID and EncryptedContent.
type respItem struct {
	Type      string      `json:"type"`
	Role      string      `json:"role,omitempty"`
	Content   respContent `json:"content,omitzero"`
	ID        string      `json:"id,omitempty"`
	CallID    string      `json:"call_id,omitempty"`
	Name      string      `json:"name,omitempty"`
	Arguments string      `json:"arguments,omitempty"`
	Output    *string     `json:"output,omitempty"` // required, "" included, on function_call_output
	// Summary is required on a reasoning item, [] included: omitzero drops only a nil one.
	Summary          []respSummary `json:"summary,omitzero"`
	EncryptedContent string        `json:"encrypted_content,omitempty"`
}

// respContent is a message's content: its text as one string, or its parts (a user message
// of text and images).
type respContent struct {
	set   bool // a message's: sent even when the text is empty
	text  string
	parts []respPart
}

// IsZero reports whether the content is absent, for omitzero: it is on every item but a
// message.
func (c respContent) IsZero() bool { return !c.set }

// MarshalJSON writes the text as a string, or the parts as a list.
func (c respContent) MarshalJSON() ([]byte, error) {
	if c.parts != nil {
		return json.Marshal(c.parts)
	}
	return json.Marshal(c.text)
}

// respPart is a part of a user message: "input_text" Text, or "input_image" ImageURL (a URL or
// a data: URL of the bytes) and Detail.
type respPart struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"image_url,omitempty"`
	Detail   string `json:"detail,omitempty"`
}

// respSummary is a part of a reasoning item's summary: {"type":"summary_text","text":…}.
type respSummary struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// respTool is a function tool. Strict is sent, false, because the Responses API makes function
// tools strict by default (which refuses any schema that does not require every property and
// forbid others), where chat completions, and the neutral Tool, are not.
type respTool struct {
	Type        string          `json:"type"` // "function"
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
}

// respNamedChoice forces a call of one function: {"type":"function","name":…}.
type respNamedChoice struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

// respTextConfig is text: the format of the answer, {"format":{"type":"json_schema",…}} or
// {"format":{"type":"json_object"}}.
type respTextConfig struct {
	Format respFormat `json:"format"`
}

type respFormat struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// respReasoning is reasoning: the effort and the summary asked for.
type respReasoning struct {
	Effort  string `json:"effort,omitempty"`
	Summary string `json:"summary,omitempty"`
}

// respResponse is a response object: the body of a non-streamed answer, and the "response" of
// the stream's response.* events.
type respResponse struct {
	ID                string        `json:"id"`
	Object            string        `json:"object"`
	Model             string        `json:"model"`
	Status            string        `json:"status"`
	Error             *respError    `json:"error"`
	IncompleteDetails *respDetails  `json:"incomplete_details"`
	Output            []respOutItem `json:"output"`
	Usage             *respUsage    `json:"usage"`
	Conversation      *struct {
		ID string `json:"id"`
	} `json:"conversation"`
}

// isAnswer reports whether r is a response object: its object says so, or (for servers that
// leave it out) it has a status or output. {}, null and error envelopes are not.
func (r *respResponse) isAnswer() bool {
	return r.Object == "response" || r.Object == "" && (r.Status != "" || len(r.Output) > 0)
}

// respError is a response's error, and the data of an "error" event of a stream (where some
// servers nest it under "error", as in an HTTP error envelope).
type respError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   string `json:"param"`
}

// respDetails is incomplete_details: why a response stopped short ("max_output_tokens",
// "content_filter").
type respDetails struct {
	Reason string `json:"reason"`
}

// respUsage counts tokens. input_tokens is the whole prompt, cached tokens included, as the
// neutral Usage counts it.
type respUsage struct {
	InputTokens        int `json:"input_tokens"`
	OutputTokens       int `json:"output_tokens"`
	InputTokensDetails *struct {
		CachedTokens     int `json:"cached_tokens"`
		CacheWriteTokens int `json:"cache_write_tokens"`
	} `json:"input_tokens_details"`
	OutputTokensDetails *struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

// neutral returns the neutral usage.
func (u *respUsage) neutral() providers.Usage {
	if u == nil {
		return providers.Usage{}
	}
	out := providers.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens}
	if d := u.InputTokensDetails; d != nil {
		out.CachedInputTokens, out.CacheWriteInputTokens = d.CachedTokens, d.CacheWriteTokens
	}
	if d := u.OutputTokensDetails; d != nil {
		out.ReasoningTokens = d.ReasoningTokens
	}
	return out
}

// respOutItem is an output item of the types this package reads: "message" (Content of
// output_text and refusal parts), "function_call" (CallID, Name, Arguments), "reasoning"
// (ID, Summary, EncryptedContent, and Content of reasoning_text parts from servers that show
// their reasoning) and "compaction" (ID, EncryptedContent). Items of other types (hosted
// tools…) may use the same field names for other shapes: they keep their type alone.
type respOutItem struct {
	Type             string
	ID               string
	Content          []respOutPart
	CallID           string
	Name             string
	Arguments        string
	Summary          []respSummary
	EncryptedContent string
}

// respOutPart is a part of an output message or of a reasoning item: "output_text" Text,
// "refusal" Refusal, "reasoning_text" Text.
type respOutPart struct {
	Type    string `json:"type"`
	Text    string `json:"text"`
	Refusal string `json:"refusal"`
}

// UnmarshalJSON reads an item: its type, then its fields when it is of a type this package
// reads.
func (it *respOutItem) UnmarshalJSON(data []byte) error {
	// One decoding reads the items of the known types; only when it fails is the type read
	// alone, for an item of another type may give the same names to other shapes.
	var full struct {
		Type             string        `json:"type"`
		ID               string        `json:"id"`
		Content          []respOutPart `json:"content"`
		CallID           string        `json:"call_id"`
		Name             string        `json:"name"`
		Arguments        string        `json:"arguments"`
		Summary          []respSummary `json:"summary"`
		EncryptedContent string        `json:"encrypted_content"`
	}
	err := json.Unmarshal(data, &full)
	if err != nil {
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(data, &head); err != nil {
			return err
		}
		full.Type = head.Type
	}
	*it = respOutItem{Type: full.Type}
	switch full.Type {
	case "message", "function_call", "reasoning", "compaction":
	default:
		return nil
	}
	if err != nil {
		return err
	}
	*it = respOutItem{Type: full.Type, ID: full.ID, Content: full.Content, CallID: full.CallID, Name: full.Name,
		Arguments: full.Arguments, Summary: full.Summary, EncryptedContent: full.EncryptedContent}
	return nil
}

// respEvent is the data of any stream event this package reads: the union of the fields those
// events carry. (Each also has a sequence_number, which only a resumed stream needs.)
type respEvent struct {
	Type        string          `json:"type"`
	OutputIndex int             `json:"output_index"`
	Delta       string          `json:"delta"`     // *.delta events
	Arguments   string          `json:"arguments"` // response.function_call_arguments.done
	Item        *respOutItem    `json:"item"`      // response.output_item.added and .done
	Response    json.RawMessage `json:"response"`  // response.created, .completed, .incomplete, .failed…
	// SequenceNumber orders the events of one response: a resumed background stream skips
	// the ones it delivered and resumes again after a gap (responses_resume.go).
	SequenceNumber *int `json:"sequence_number"`
	// An "error" event's fields, at the top level as the API sends them, or nested as some
	// servers send them.
	Code    string     `json:"code"`
	Message string     `json:"message"`
	Param   string     `json:"param"`
	Error   *respError `json:"error"`
}
