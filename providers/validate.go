package providers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode"
)

// Ranges of the neutral request's parameters. Providers may allow less (Anthropic's
// temperature stops at 1) and refuse the rest themselves.
const (
	MaxTemperature = 2.0
	MaxTopP        = 1.0
	// MaxModelLen bounds a request's Model in bytes. The model names a route (its circuit,
	// pause and budgets), a metric label and a key of the shared state: real names are a few
	// dozen bytes.
	MaxModelLen = 256
)

// checkModel reports a Model longer than MaxModelLen or holding a control character (a
// newline would forge a log line or split a header), or "" when model is usable.
func checkModel(model string) string {
	if len(model) > MaxModelLen {
		return fmt.Sprintf("Model is %d bytes: must be at most %d", len(model), MaxModelLen)
	}
	if strings.ContainsFunc(model, unicode.IsControl) {
		return fmt.Sprintf("Model = %q: must not hold control characters", clip(model))
	}
	return ""
}

// Validate reports what makes r unusable, before anything is sent: a nil request, no
// messages, an unknown role, a tool result without the ID of its call, a tool without a name
// or with parameters that are not JSON, a raw tool (Tool.Raw) without a System or a "type",
// raw tools of two systems, provider blocks that are not JSON objects of their Type or stand
// in a message that is no assistant's, an unknown response format, and parameters out of
// range (Temperature 0 to MaxTemperature, TopP 0 to MaxTopP, MaxTokens 0 or more), a Model
// longer than MaxModelLen or with a control character, a Previous without an ID, provider-state
// values that are empty, too long or hold control characters. The error
// is a *Error of kind KindBadRequest that names every bad field and what is allowed; nil when
// r is usable.
func (r *ChatRequest) Validate() error {
	if r == nil {
		return badRequest([]string{"the chat request is nil"})
	}
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if p := checkModel(r.Model); p != "" {
		problems = append(problems, p)
	}
	if len(r.Messages) == 0 {
		add("Messages is empty: a chat needs at least one message")
	}
	for i, m := range r.Messages {
		switch m.Role {
		case RoleSystem, RoleUser, RoleAssistant:
		case RoleTool:
			if m.ToolCallID == "" {
				add("Messages[%d]: a %q message needs the ToolCallID of the call it answers", i, RoleTool)
			}
		default:
			add("Messages[%d].Role = %q: must be %q, %q, %q or %q", i, clip(string(m.Role)), RoleSystem, RoleUser, RoleAssistant, RoleTool)
		}
		if len(m.Parts) > 0 {
			if m.Role != RoleUser {
				add("Messages[%d].Parts: only a %q message has parts", i, RoleUser)
			}
			if m.Content != "" {
				add("Messages[%d]: set Content or Parts, not both", i)
			}
		}
		for j, p := range m.Parts {
			checkPart(add, i, j, p)
		}
		if !validCache(m.Cache) {
			add("Messages[%d].Cache = %q: must be empty, %q, %q or %q", i, clip(string(m.Cache)), CacheDefault, Cache5m, Cache1h)
		}
		if len(m.ProviderBlocks) > 0 && m.Role != RoleAssistant {
			add("Messages[%d].ProviderBlocks: only a %q message has provider blocks", i, RoleAssistant)
		}
		for j, b := range m.ProviderBlocks {
			checkProviderBlock(add, i, j, b)
		}
	}
	if t := r.Temperature; t != nil && !within(*t, 0, MaxTemperature) {
		add("Temperature = %g: must be between 0 and %g", *t, MaxTemperature)
	}
	if p := r.TopP; p != nil && !within(*p, 0, MaxTopP) {
		add("TopP = %g: must be between 0 and %g", *p, MaxTopP)
	}
	if r.MaxTokens < 0 {
		add("MaxTokens = %d: must be 0 (the provider's default) or more", r.MaxTokens)
	}
	switch r.Format {
	case FormatText, FormatJSON:
		if r.Format == FormatJSON && r.Schema != nil {
			add("Format = %q with a Schema: use %q (or leave Format empty)", FormatJSON, FormatJSONSchema)
		}
	case FormatJSONSchema:
		if r.Schema == nil {
			add("Format = %q: set Schema", FormatJSONSchema)
		}
	default:
		add("Format = %q: must be %q (text), %q or %q", clip(string(r.Format)), FormatText, FormatJSON, FormatJSONSchema)
	}
	if s := r.Schema; s != nil {
		if trimmed := strings.TrimSpace(string(s.Schema)); trimmed == "" || trimmed[0] != '{' || !json.Valid(s.Schema) {
			add("Schema.Schema must be a JSON Schema object")
		}
		for _, c := range s.Name {
			if !(c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
				add("Schema.Name = %q: letters, digits, '_' and '-' only", clip(s.Name))
				break
			}
		}
	}
	names := map[string]bool{}
	for i, t := range r.Tools {
		if t.Raw != nil || t.System != "" {
			checkRawTool(add, i, t)
			names[t.ToolName()] = true
			continue
		}
		if t.Name == "" {
			add("Tools[%d].Name is empty", i)
		}
		names[t.Name] = true
		if len(strings.TrimSpace(string(t.Parameters))) > 0 && !json.Valid(t.Parameters) {
			add("Tools[%d].Parameters is not valid JSON", i)
		}
		if !validCache(t.Cache) {
			add("Tools[%d].Cache = %q: must be empty, %q, %q or %q", i, clip(string(t.Cache)), CacheDefault, Cache5m, Cache1h)
		}
	}
	if a, b := r.RawToolSystems(); b != "" {
		add("Tools: raw tools of %q and of %q: no provider takes both", clip(a), clip(b))
	}
	switch tc := r.ToolChoice; tc.Mode {
	case "", ToolChoiceAuto, ToolChoiceNone:
	case ToolChoiceRequired:
		if len(r.Tools) == 0 {
			add("ToolChoice %q needs Tools", tc.Mode)
		}
	case ToolChoiceTool:
		if !names[tc.Name] {
			add("ToolChoice names tool %q, which is not in Tools", clip(tc.Name))
		}
	default:
		add("ToolChoice.Mode = %q: must be %q, %q, %q or %q", clip(string(tc.Mode)), ToolChoiceAuto, ToolChoiceNone, ToolChoiceRequired, ToolChoiceTool)
	}
	if rs := r.Reasoning; rs != nil && rs.BudgetTokens < 0 {
		add("Reasoning.BudgetTokens = %d: must be 0 (none) or more", rs.BudgetTokens)
	}
	if rs := r.Reasoning; rs != nil {
		checkWord(add, "Reasoning.Summary", rs.Summary, maxWordLen)
	}
	checkState(add, r)
	return badRequest(problems)
}

// Bounds of the provider-state fields of a request, which travel in its body: real values are
// a few dozen bytes.
const (
	maxWordLen    = 64  // Reasoning.Summary, an Include entry
	maxStateIDLen = 256 // Previous.ID, Previous.Origin
	maxIncludes   = 32
)

// checkState reports what is wrong with the provider-state fields of r (see state.go).
func checkState(add func(string, ...any), r *ChatRequest) {
	var origins []string // of the state that pins the request
	if pr := r.Previous; pr != nil {
		if pr.ID == "" {
			add("Previous.ID is empty: set Previous from the ChatResponse.Stored of the answer to continue")
		}
		checkWord(add, "Previous.ID", pr.ID, maxStateIDLen)
		checkWord(add, "Previous.Origin", pr.Origin, maxStateIDLen)
		origins = append(origins, pr.Origin)
	}
	if cv := r.Conversation; cv != nil {
		if cv.ID == "" {
			add("Conversation.ID is empty: name the conversation to continue")
		}
		if r.Previous != nil {
			add("Previous and Conversation are both set: a call continues from a stored answer or from a conversation, not both")
		}
		checkWord(add, "Conversation.ID", cv.ID, maxStateIDLen)
		checkWord(add, "Conversation.Origin", cv.Origin, maxStateIDLen)
		origins = append(origins, cv.Origin)
	}
	for i, m := range r.Messages {
		c := m.Compaction
		if c == nil {
			continue
		}
		if m.Role != RoleAssistant {
			add("Messages[%d].Compaction: only an %q message carries a compaction item", i, RoleAssistant)
		}
		if c.Encrypted == "" {
			add("Messages[%d].Compaction.Encrypted is empty: send the item back as the answer gave it", i)
		}
		checkWord(add, fmt.Sprintf("Messages[%d].Compaction.ID", i), c.ID, maxStateIDLen)
		checkWord(add, fmt.Sprintf("Messages[%d].Compaction.Origin", i), c.Origin, maxStateIDLen)
		if c.Pruned {
			origins = append(origins, c.Origin)
		}
	}
	first := ""
	for _, o := range origins {
		if first == "" {
			first = o
		}
		if o != "" && o != first {
			add("the request's provider state (Previous, Conversation, a pruned compaction item) comes from different providers (Origins differ): " +
				"no provider holds all of it")
			break
		}
	}
	if r.CompactThreshold < 0 {
		add("CompactThreshold = %d: must be 0 (no server-side compaction) or more", r.CompactThreshold)
	}
	if len(r.Include) > maxIncludes {
		add("Include has %d entries: at most %d", len(r.Include), maxIncludes)
	}
	for i, in := range r.Include {
		if in == "" {
			add("Include[%d] is empty", i)
		}
		checkWord(add, fmt.Sprintf("Include[%d]", i), in, maxWordLen)
	}
}

// checkRawTool reports what is wrong with tool i, given as Raw: a System is required, the
// definition must be a JSON object with a "type", and the neutral fields stay empty.
func checkRawTool(add func(string, ...any), i int, t Tool) {
	if t.System == "" {
		add("Tools[%d].Raw needs a System: the provider whose API takes it, such as %q", i, SystemAnthropic)
	}
	checkWord(add, fmt.Sprintf("Tools[%d].System", i), t.System, maxWordLen)
	if t.Raw == nil {
		add("Tools[%d].System = %q without Raw: a function tool names no system", i, clip(t.System))
		return
	}
	if !isObject(t.Raw) {
		add("Tools[%d].Raw must be a JSON object, the tool's definition", i)
		return
	}
	if typ, _ := rawHead(t.Raw); typ == "" {
		add("Tools[%d].Raw has no \"type\": the tool's versioned type, such as \"web_search_20250305\"", i)
	}
	if t.Name != "" || t.Description != "" || len(t.Parameters) > 0 || t.Cache != CacheNone {
		add("Tools[%d]: set Raw or Name, Description, Parameters and Cache, not both", i)
	}
}

// RawToolSystems returns the systems of the raw tools of r (Tool.Raw): a, the first one ("" for
// none), and b, a second one that differs from it ("" when every raw tool is a's). Only
// providers of system a can serve a request with raw tools.
func (r *ChatRequest) RawToolSystems() (a, b string) {
	for _, t := range r.Tools {
		switch {
		case t.Raw == nil:
		case a == "":
			a = t.System
		case t.System != a:
			return a, t.System
		}
	}
	return a, ""
}

// checkProviderBlock reports what is wrong with block j of message i: a JSON object whose
// "type" is its Type, and an Origin and a place that can be its own.
func checkProviderBlock(add func(string, ...any), i, j int, b ProviderBlock) {
	field := fmt.Sprintf("Messages[%d].ProviderBlocks[%d]", i, j)
	switch typ, _ := rawHead(b.Raw); {
	case !isObject(b.Raw):
		add("%s.Raw must be a JSON object, the block as its provider sent it", field)
	case b.Type == "" || typ != b.Type:
		add("%s.Type = %q: must be the block's \"type\" (%q)", field, clip(b.Type), clip(typ))
	}
	checkWord(add, field+".Type", b.Type, maxWordLen)
	checkWord(add, field+".Origin", b.Origin, maxStateIDLen)
	if b.At < 0 || b.Calls < 0 {
		add("%s: At = %d, Calls = %d: must not be negative", field, b.At, b.Calls)
	}
}

// isObject reports whether raw is a JSON object.
func isObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{' && json.Valid(raw)
}

// checkWord reports a value that is longer than max bytes or holds a control character.
func checkWord(add func(string, ...any), field, v string, max int) {
	switch {
	case len(v) > max:
		add("%s is %d bytes: must be at most %d", field, len(v), max)
	case strings.ContainsFunc(v, unicode.IsControl):
		add("%s = %q: must not hold control characters", field, clip(v))
	}
}

// checkPart reports what is wrong with part j of message i.
func checkPart(add func(string, ...any), i, j int, p Part) {
	img := p.Image
	switch {
	case img == nil && p.Text == "":
		add("Messages[%d].Parts[%d] is empty: set Text or Image", i, j)
	case img != nil && p.Text != "":
		add("Messages[%d].Parts[%d]: set Text or Image, not both", i, j)
	case img == nil:
	case (img.URL == "") == (len(img.Data) == 0):
		add("Messages[%d].Parts[%d].Image: set URL or Data, one of them", i, j)
	case len(img.Data) > 0 && !imageTypes[img.MediaType]:
		add("Messages[%d].Parts[%d].Image.MediaType = %q: must be image/png, image/jpeg, image/gif or image/webp", i, j, clip(img.MediaType))
	}
}

// imageTypes are the media types of images both APIs accept.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

func validCache(c CacheTTL) bool {
	return c == CacheNone || c == CacheDefault || c == Cache5m || c == Cache1h
}

// Validate reports what makes r unusable, before anything is sent: a nil request, no inputs,
// an empty input (every API refuses those), a Model longer than MaxModelLen or with a control
// character. The error is a *Error of kind KindBadRequest; nil
// when r is usable.
func (r *EmbedRequest) Validate() error {
	if r == nil {
		return badRequest([]string{"the embedding request is nil"})
	}
	var problems []string
	if p := checkModel(r.Model); p != "" {
		problems = append(problems, p)
	}
	if len(r.Inputs) == 0 {
		problems = append(problems, "Inputs is empty: an embedding request needs at least one input")
	}
	for i, in := range r.Inputs {
		if in == "" {
			problems = append(problems, fmt.Sprintf("Inputs[%d] is empty: providers refuse empty inputs", i))
			break
		}
	}
	return badRequest(problems)
}

// badRequest joins problems into one bad_request error, or returns nil for none.
func badRequest(problems []string) error {
	if len(problems) == 0 {
		return nil
	}
	return &Error{Kind: KindBadRequest, Message: "invalid request: " + strings.Join(problems, "; ")}
}

func within(v, lo, hi float64) bool { return !math.IsNaN(v) && v >= lo && v <= hi }

// clip shortens a value repeated in a message.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
