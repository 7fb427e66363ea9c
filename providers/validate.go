package providers

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// Ranges of the neutral request's parameters. Providers may allow less (Anthropic's
// temperature stops at 1) and refuse the rest themselves.
const (
	MaxTemperature = 2.0
	MaxTopP        = 1.0
)

// Validate reports what makes r unusable, before anything is sent: a nil request, no
// messages, an unknown role, a tool result without the ID of its call, a tool without a name
// or with parameters that are not JSON, an unknown response format, and parameters out of
// range (Temperature 0 to MaxTemperature, TopP 0 to MaxTopP, MaxTokens 0 or more). The error
// is a *Error of kind KindBadRequest that names every bad field and what is allowed; nil when
// r is usable.
func (r *ChatRequest) Validate() error {
	if r == nil {
		return badRequest([]string{"the chat request is nil"})
	}
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
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
	default:
		add("Format = %q: must be %q (text) or %q", clip(string(r.Format)), FormatText, FormatJSON)
	}
	for i, t := range r.Tools {
		if t.Name == "" {
			add("Tools[%d].Name is empty", i)
		}
		if len(strings.TrimSpace(string(t.Parameters))) > 0 && !json.Valid(t.Parameters) {
			add("Tools[%d].Parameters is not valid JSON", i)
		}
	}
	return badRequest(problems)
}

// Validate reports what makes r unusable, before anything is sent: a nil request, no inputs,
// an empty input (every API refuses those). The error is a *Error of kind KindBadRequest; nil
// when r is usable.
func (r *EmbedRequest) Validate() error {
	if r == nil {
		return badRequest([]string{"the embedding request is nil"})
	}
	var problems []string
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
