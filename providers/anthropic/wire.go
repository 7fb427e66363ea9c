package anthropic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/steadyllm/steady/providers"
)

// The Messages API wire format, as far as this package speaks it. Fields the neutral types do
// not carry (documents, citations…) are left out; tools given in the API's own shape and the
// blocks of an answer the neutral message does not model travel verbatim (see blocks.go).

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
	ToolChoice    *wireChoice   `json:"tool_choice,omitempty"`
	Thinking      *wireThinking `json:"thinking,omitempty"`
	OutputConfig  *wireOutput   `json:"output_config,omitempty"`
	Stream        bool          `json:"stream,omitempty"`

	// raw: a tool or a block of the request is raw JSON (wireTool.raw, wireBlock.raw), which
	// encode then writes as it is.
	raw bool
}

// wireChoice is tool_choice: type "auto", "any", "tool" (with Name) or "none".
type wireChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse *bool  `json:"disable_parallel_tool_use,omitempty"`
}

// wireThinking is extended thinking: {"type": "enabled", "budget_tokens": n}, or
// {"type": "adaptive"} for the models that choose how much to think.
type wireThinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens,omitempty"`
}

// wireOutput is output_config: the effort level and the JSON Schema of a structured output.
type wireOutput struct {
	Effort string      `json:"effort,omitempty"`
	Format *wireFormat `json:"format,omitempty"`
}

type wireFormat struct {
	Type   string          `json:"type"` // "json_schema"
	Schema json.RawMessage `json:"schema"`
}

// wireCache is a cache_control breakpoint.
type wireCache struct {
	Type string `json:"type"` // "ephemeral"
	TTL  string `json:"ttl,omitempty"`
}

// wireSource is the source of an image block: base64 data with its media type, or a URL.
type wireSource struct {
	Type      string `json:"type"` // "base64" or "url"
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

// wireMessage is one turn; its content is always a list of blocks.
type wireMessage struct {
	Role    string      `json:"role"`
	Content []wireBlock `json:"content"`
}

// wireBlock is a content block of a request. Type says which fields apply:
// "text" Text; "image" Source; "tool_use" ID, Name, Input; "tool_result" ToolUseID, Content;
// "thinking" Thinking, Signature; "redacted_thinking" Data. Any block may end a cacheable
// prefix (CacheControl).
type wireBlock struct {
	Type         string          `json:"type"`
	Text         string          `json:"text,omitempty"`
	Source       *wireSource     `json:"source,omitempty"`
	ID           string          `json:"id,omitempty"`
	Name         string          `json:"name,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	Content      string          `json:"content,omitempty"`
	Thinking     string          `json:"thinking,omitempty"`
	Signature    string          `json:"signature,omitempty"`
	Data         string          `json:"data,omitempty"`
	CacheControl *wireCache      `json:"cache_control,omitempty"`

	// raw, when set, is the whole block, a JSON object given by its provider
	// (providers.ProviderBlock), sent instead of the fields above (CacheControl added).
	raw json.RawMessage
}

// wireTool is a client tool the model may call.
type wireTool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl *wireCache      `json:"cache_control,omitempty"`

	// raw, when set, is the whole definition as the caller gave it (providers.Tool.Raw), sent
	// instead of the fields above.
	raw json.RawMessage
}

// emptySchema is the input_schema of a tool that declares no parameters.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// buildRequest turns a neutral request into a Messages API body (see toWire).
func (p *Provider) buildRequest(req *providers.ChatRequest, stream bool) ([]byte, error) {
	w, err := p.toWire(req, stream)
	if err != nil {
		return nil, err
	}
	return p.encode(w)
}

// toWire turns a neutral request into a Messages API request. It refuses, with a bad_request
// *providers.Error and before anything is sent, what the API would refuse anyway or what
// cannot be expressed: no model, no messages, an empty turn, tool arguments that are not JSON,
// a raw tool of another system, an unknown response format, a stored answer to continue from
// (Previous), a conversation kept elsewhere (Conversation) or pruned at a compaction item,
// background mode (Background). Store, Include, CompactThreshold and compaction items that
// stand for messages still in the request are OpenAI's and ignored.
func (p *Provider) toWire(req *providers.ChatRequest, stream bool) (*wireRequest, error) {
	if err := req.Validate(); err != nil {
		return nil, p.errs.Finish(err.(*providers.Error))
	}
	if t := req.Temperature; t != nil && *t > maxTemperature {
		return nil, p.badRequest(fmt.Sprintf("Temperature = %g: Anthropic allows 0 to %g", *t, maxTemperature))
	}
	if req.Previous != nil {
		// The conversation lives with the provider that stored it: answering without it would
		// be answering another question (see providers/state.go).
		return nil, p.badRequest("Previous: the Messages API keeps no stored answers to continue from; send the whole conversation")
	}
	if req.Background {
		return nil, p.badRequest("Background: the Messages API has no background mode; send the request without it")
	}
	if pin, ok := req.Pin(); ok {
		// A conversation kept by another provider, or one pruned at its compaction item: the
		// earlier messages are not in the request.
		return nil, p.badRequest("the request continues from " + pin.What + ", which the Messages API cannot read; send the whole conversation")
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
	if req.Prefill {
		if err := p.checkPrefill(w.Model, req); err != nil {
			return nil, err
		}
	}
	switch {
	case req.Schema != nil && p.schemaByTool:
		// Forced tool use: the model "calls" a tool whose input is the answer (fromResponse
		// turns it back into the answer's text).
		w.Tools = append(w.Tools, wireTool{Name: schemaTool(req.Schema), Description: req.Schema.Description,
			InputSchema: req.Schema.Schema})
		w.ToolChoice = &wireChoice{Type: "tool", Name: schemaTool(req.Schema)}
	case req.Schema != nil:
		w.OutputConfig = &wireOutput{Format: &wireFormat{Type: "json_schema", Schema: req.Schema.Schema}}
	case req.Format == providers.FormatJSON:
		w.System = append(w.System, wireBlock{Type: "text", Text: jsonInstruction})
	case req.Format != providers.FormatText:
		return nil, p.badRequest(fmt.Sprintf("unknown response format %q", req.Format))
	}
	for i, t := range req.Tools {
		if t.Raw != nil {
			if t.System != providers.SystemAnthropic {
				return nil, p.badRequest(fmt.Sprintf("Tools[%d] (%s) is a tool of %q: the Messages API takes only function tools and its own (System %q)",
					i, t.RawType(), t.System, providers.SystemAnthropic))
			}
			w.Tools, w.raw = append(w.Tools, wireTool{raw: t.Raw}), true
			continue
		}
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
		w.Tools = append(w.Tools, wireTool{Name: t.Name, Description: t.Description, InputSchema: schema,
			CacheControl: cacheControl(t.Cache)})
	}
	if w.ToolChoice == nil {
		w.ToolChoice = toolChoice(req)
	}
	if r := req.Reasoning; r != nil {
		adaptive := thinkingMode(p.thinking, w.Model) == ThinkingAdaptive
		switch {
		case adaptive && (r.BudgetTokens > 0 || r.Effort != ""):
			// The model refuses budget_tokens (a 400): reasoning asked for either way turns
			// adaptive thinking on, and the effort, if any, guides how much.
			w.Thinking = &wireThinking{Type: "adaptive"}
		case r.BudgetTokens > 0:
			if r.BudgetTokens < minThinkingBudget || r.BudgetTokens >= w.MaxTokens {
				return nil, p.badRequest(fmt.Sprintf("Reasoning.BudgetTokens = %d: Anthropic needs at least %d and less than MaxTokens (%d)",
					r.BudgetTokens, minThinkingBudget, w.MaxTokens))
			}
			w.Thinking = &wireThinking{Type: "enabled", BudgetTokens: r.BudgetTokens}
		}
		if r.Effort != "" {
			if w.OutputConfig == nil {
				w.OutputConfig = &wireOutput{}
			}
			w.OutputConfig.Effort = r.Effort
		}
	}
	return &w, nil
}

// minThinkingBudget is the smallest budget_tokens of extended thinking the API accepts.
const minThinkingBudget = 1024

// schemaTool is the name of the tool that carries a structured answer in forced tool use.
func schemaTool(s *providers.JSONSchema) string {
	if s.Name != "" {
		return s.Name
	}
	return "response"
}

// toolChoice maps the neutral tool choice; nil leaves the API's default. Forbidding parallel
// calls needs a tool_choice, so it gets "auto" when none was given.
func toolChoice(req *providers.ChatRequest) *wireChoice {
	var c wireChoice
	switch req.ToolChoice.Mode {
	case providers.ToolChoiceAuto:
		c.Type = "auto"
	case providers.ToolChoiceNone:
		return &wireChoice{Type: "none"}
	case providers.ToolChoiceRequired:
		c.Type = "any"
	case providers.ToolChoiceTool:
		c.Type, c.Name = "tool", req.ToolChoice.Name
	}
	if pt := req.ParallelToolCalls; pt != nil && !*pt && len(req.Tools) > 0 {
		if c.Type == "" {
			c.Type = "auto"
		}
		c.DisableParallelToolUse = new(bool)
		*c.DisableParallelToolUse = true
	}
	if c.Type == "" {
		return nil
	}
	out := c // only a choice that is sent leaves the stack
	return &out
}

// cacheControl maps a neutral cache mark.
func cacheControl(c providers.CacheTTL) *wireCache {
	switch c {
	case providers.CacheNone:
		return nil
	case providers.Cache5m, providers.Cache1h:
		return &wireCache{Type: "ephemeral", TTL: string(c)}
	}
	return &wireCache{Type: "ephemeral"}
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
			w.System = append(w.System, wireBlock{Type: "text", Text: m.Content, CacheControl: cacheControl(m.Cache)})
		}
		return nil
	case providers.RoleUser:
		role = "user"
		if m.Content != "" {
			blocks = append(blocks, wireBlock{Type: "text", Text: m.Content})
		}
		for _, part := range m.Parts {
			blocks = append(blocks, partBlock(part))
		}
	case providers.RoleAssistant:
		role = "assistant"
		for _, t := range m.Thinking {
			if t.Redacted != "" {
				blocks = append(blocks, wireBlock{Type: "redacted_thinking", Data: t.Redacted})
			} else if t.Signature != "" { // unsigned reasoning (another provider's) cannot go back
				blocks = append(blocks, wireBlock{Type: "thinking", Thinking: t.Text, Signature: t.Signature})
			}
		}
		var err error
		if blocks, err = p.answerBlocks(w, blocks, i, m); err != nil {
			return err
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
	switch {
	case len(blocks) == 0 && len(m.ProviderBlocks) > 0:
		// An answer of another origin's blocks alone (a server tool's, paused): nothing of it
		// can go back, and the turns around it merge.
		return nil
	case len(blocks) == 0:
		return p.badRequest(fmt.Sprintf("message %d (%s) is empty: Anthropic rejects empty turns", i, m.Role))
	}
	blocks[len(blocks)-1].CacheControl = cacheControl(m.Cache)
	if n := len(w.Messages); n > 0 && w.Messages[n-1].Role == role {
		w.Messages[n-1].Content = append(w.Messages[n-1].Content, blocks...)
		return nil
	}
	w.Messages = append(w.Messages, wireMessage{Role: role, Content: blocks})
	return nil
}

// partBlock maps a part of a user message.
func partBlock(part providers.Part) wireBlock {
	img := part.Image
	switch {
	case img == nil:
		return wireBlock{Type: "text", Text: part.Text}
	case img.URL != "":
		return wireBlock{Type: "image", Source: &wireSource{Type: "url", URL: img.URL}}
	}
	return wireBlock{Type: "image", Source: &wireSource{Type: "base64", MediaType: img.MediaType,
		Data: base64.StdEncoding.EncodeToString(img.Data)}}
}
