package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/steadyllm/steady/providers"
)

// The Messages API wire format, as far as this package speaks it. Fields the neutral types do
// not carry (images, documents, thinking, cache control, tool_choice…) are left out.

// maxTemperature is the highest temperature the Messages API accepts (the neutral request
// allows up to providers.MaxTemperature, as OpenAI does).
const maxTemperature = 1.0

// jsonInstruction is appended to the system prompt for providers.FormatJSON: the Messages API
// has no schema-less JSON mode.
const jsonInstruction = "Respond with a single valid JSON object and nothing else: no prose, no Markdown code fences."

// wireRequest is the body of POST /v1/messages.
type wireRequest struct {
	Model         string        `json:"model"`
	MaxTokens     int           `json:"max_tokens"`
	System        []wireBlock   `json:"system,omitempty"`
	Messages      []wireMessage `json:"messages"`
	StopSequences []string      `json:"stop_sequences,omitempty"`
	Temperature   *float64      `json:"temperature,omitempty"`
	TopP          *float64      `json:"top_p,omitempty"`
	Tools         []wireTool    `json:"tools,omitempty"`
	Stream        bool          `json:"stream,omitempty"`
}

// wireMessage is one turn; its content is always a list of blocks.
type wireMessage struct {
	Role    string      `json:"role"`
	Content []wireBlock `json:"content"`
}

// wireBlock is a content block of a request. Type says which fields apply:
// "text" Text; "tool_use" ID, Name, Input; "tool_result" ToolUseID, Content.
type wireBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   string          `json:"content,omitempty"`
}

// respBlock is a content block of an answer. It is not wireBlock because blocks this package
// skips (server tool results, say) may carry fields of other shapes under the same names.
type respBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// wireTool is a client tool the model may call.
type wireTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// wireResponse is a message: the body of a non-streamed answer and the "message" of a
// message_start event.
type wireResponse struct {
	Type       string      `json:"type"`
	ID         string      `json:"id"`
	Model      string      `json:"model"`
	Content    []respBlock `json:"content"`
	StopReason string      `json:"stop_reason"`
	Usage      wireUsage   `json:"usage"`
}

// isAnswer reports whether r is a message: its type says so, or (for servers that leave the
// type out) it has content or a stop reason. {}, null and error envelopes are not answers.
func (r *wireResponse) isAnswer() bool {
	return r.Type == "message" || r.Type == "" && (len(r.Content) > 0 || r.StopReason != "")
}

// wireUsage counts tokens. input_tokens excludes the prompt tokens written to or read from
// the prompt cache, which are reported apart.
type wireUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// input is the whole prompt: uncached, cache-written and cache-read tokens together, which is
// what OpenAI's prompt_tokens counts too.
func (u wireUsage) input() int {
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
}

// emptySchema is the input_schema of a tool that declares no parameters.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// buildRequest turns a neutral request into a Messages API body. It refuses, with a
// bad_request *providers.Error and before anything is sent, what the API would refuse anyway
// or what cannot be expressed: no model, no messages, an empty turn, tool arguments that are
// not JSON, an unknown response format.
func (p *Provider) buildRequest(req *providers.ChatRequest, stream bool) ([]byte, error) {
	if err := req.Validate(); err != nil {
		return nil, p.errs.Finish(err.(*providers.Error))
	}
	if t := req.Temperature; t != nil && *t > maxTemperature {
		return nil, p.badRequest(fmt.Sprintf("Temperature = %g: Anthropic allows 0 to %g", *t, maxTemperature))
	}
	w := wireRequest{
		Model:         req.Model,
		MaxTokens:     req.MaxTokens,
		StopSequences: req.Stop,
		Temperature:   req.Temperature,
		TopP:          req.TopP,
		Stream:        stream,
	}
	if w.Model == "" {
		w.Model = p.model
	}
	if w.Model == "" {
		return nil, p.badRequest("no model: set ChatRequest.Model or Config.Model")
	}
	switch {
	case w.MaxTokens == 0:
		w.MaxTokens = p.maxTokens
	case w.MaxTokens < 0:
		return nil, p.badRequest(fmt.Sprintf("MaxTokens = %d: must not be negative", req.MaxTokens))
	}
	for i, m := range req.Messages {
		if err := p.addMessage(&w, i, m); err != nil {
			return nil, err
		}
	}
	if len(w.Messages) == 0 {
		return nil, p.badRequest("the request has no user or assistant messages")
	}
	switch req.Format {
	case providers.FormatText:
	case providers.FormatJSON:
		w.System = append(w.System, wireBlock{Type: "text", Text: jsonInstruction})
	default:
		return nil, p.badRequest(fmt.Sprintf("unknown response format %q", req.Format))
	}
	for i, t := range req.Tools {
		if t.Name == "" {
			return nil, p.badRequest(fmt.Sprintf("tool %d has no name", i))
		}
		schema := emptySchema
		if len(bytes.TrimSpace(t.Parameters)) > 0 {
			if !json.Valid(t.Parameters) {
				return nil, p.badRequest(fmt.Sprintf("tool %q: Parameters is not valid JSON", t.Name))
			}
			schema = t.Parameters
		}
		w.Tools = append(w.Tools, wireTool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	body, err := json.Marshal(w)
	if err != nil {
		return nil, &providers.Error{Provider: p.name, Kind: providers.KindBadRequest, Message: "encoding the request: " + err.Error(), Err: err}
	}
	return body, nil
}

// addMessage appends neutral message i to w. System messages go to the top-level system
// field, in order, wherever they stand. Tool results become tool_result blocks of a user turn.
// Consecutive turns of the same role are merged into one, as the API itself would merge them,
// so that all the results answering one assistant turn land in the one user turn that must
// follow it.
func (p *Provider) addMessage(w *wireRequest, i int, m providers.Message) error {
	var role string
	var blocks []wireBlock
	switch m.Role {
	case providers.RoleSystem:
		if m.Content != "" {
			w.System = append(w.System, wireBlock{Type: "text", Text: m.Content})
		}
		return nil
	case providers.RoleUser:
		role = "user"
		if m.Content != "" {
			blocks = append(blocks, wireBlock{Type: "text", Text: m.Content})
		}
	case providers.RoleAssistant:
		role = "assistant"
		if m.Content != "" {
			blocks = append(blocks, wireBlock{Type: "text", Text: m.Content})
		}
		for _, tc := range m.ToolCalls {
			input := json.RawMessage(`{}`)
			if strings.TrimSpace(tc.Arguments) != "" {
				input = json.RawMessage(tc.Arguments)
			}
			if !json.Valid(input) {
				return p.badRequest(fmt.Sprintf("message %d: tool call %q: Arguments is not valid JSON", i, tc.ID))
			}
			if tc.ID == "" || tc.Name == "" {
				return p.badRequest(fmt.Sprintf("message %d: a tool call needs an ID and a Name", i))
			}
			blocks = append(blocks, wireBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: input})
		}
	case providers.RoleTool:
		if m.ToolCallID == "" {
			return p.badRequest(fmt.Sprintf("message %d: a tool message needs a ToolCallID", i))
		}
		role = "user"
		blocks = append(blocks, wireBlock{Type: "tool_result", ToolUseID: m.ToolCallID, Content: m.Content})
	default:
		return p.badRequest(fmt.Sprintf("message %d: unknown role %q", i, m.Role))
	}
	if len(blocks) == 0 {
		return p.badRequest(fmt.Sprintf("message %d (%s) is empty: Anthropic rejects empty turns", i, m.Role))
	}
	if n := len(w.Messages); n > 0 && w.Messages[n-1].Role == role {
		w.Messages[n-1].Content = append(w.Messages[n-1].Content, blocks...)
		return nil
	}
	w.Messages = append(w.Messages, wireMessage{Role: role, Content: blocks})
	return nil
}

// fromResponse turns a message into the neutral assistant message: the text blocks joined,
// the tool_use blocks as tool calls in order. Other blocks (thinking, server tools) are
// skipped.
func fromResponse(r *wireResponse) providers.Message {
	msg := providers.Message{Role: providers.RoleAssistant}
	var text strings.Builder
	for _, b := range r.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			args := "{}"
			if len(b.Input) > 0 {
				var c bytes.Buffer
				if json.Compact(&c, b.Input) == nil {
					args = c.String()
				}
			}
			msg.ToolCalls = append(msg.ToolCalls, providers.ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		}
	}
	msg.Content = text.String()
	return msg
}

// finishReason maps Anthropic's stop_reason.
func finishReason(stop string) providers.FinishReason {
	switch stop {
	case "end_turn", "stop_sequence":
		return providers.FinishStop
	case "max_tokens", "model_context_window_exceeded":
		return providers.FinishLength
	case "tool_use":
		return providers.FinishToolCalls
	case "refusal":
		return providers.FinishContentFilter
	}
	return providers.FinishOther
}
