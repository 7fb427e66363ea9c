package anthropic

import (
	"strings"
	"unicode"

	"github.com/steadyllm/steady/providers"
)

// Prefills reports whether model continues a final assistant message of req
// (providers.Prefiller): the Messages API continues one from where it ends, but not with
// extended thinking (req.Reasoning: a budget or an effort, which turns thinking on) nor with a
// forced tool call (a ToolChoice "required" or "tool", or a Schema sent as one,
// Config.SchemaByTool: the API prefills the answer itself to force it), and the
// Claude models of version 4.6 and later refuse any with a 400 ("This model does not support
// assistant message prefill"). A name this rule cannot read (a proxy's alias) is taken to
// accept it, as the models before 4.6 do: a refusal is then the bad_request
// providers.CodePrefillUnsupported, never a failure of the provider. "" is the provider's
// default model.
func (p *Provider) Prefills(model string, req *providers.ChatRequest) bool {
	if model == "" {
		model = p.model
	}
	if req != nil && (req.Reasoning != nil || forcesTool(req) || req.Schema != nil && p.schemaByTool) {
		return false
	}
	major, minor, ok := claudeVersion(model)
	return !ok || major < 4 || major == 4 && minor < 6
}

// forcesTool reports whether req makes the model call a tool (tool_choice "any" or "tool"),
// which the API does by prefilling the answer itself: a prefill of the caller's cannot go
// with it.
func forcesTool(req *providers.ChatRequest) bool {
	m := req.ToolChoice.Mode
	return len(req.Tools) > 0 && (m == providers.ToolChoiceRequired || m == providers.ToolChoiceTool)
}

// checkPrefill refuses, before sending, a prefilled request (ChatRequest.Prefill) that the API
// would refuse: one whose last message is not the assistant's, one whose prefill ends in
// whitespace (the API answers 400), and one to a model that takes no prefill (Prefills).
func (p *Provider) checkPrefill(model string, req *providers.ChatRequest) error {
	last := req.Messages[len(req.Messages)-1]
	switch {
	case last.Role != providers.RoleAssistant || last.Content == "":
		return p.badRequest("Prefill: the last message must be the assistant's text to continue")
	case strings.TrimRightFunc(last.Content, unicode.IsSpace) != last.Content:
		return p.badRequest("Prefill: the assistant's text to continue ends in whitespace, which the Messages API refuses")
	case !p.Prefills(model, req):
		e := p.badRequest("Prefill: " + model + " does not continue an assistant prefill here (Claude 4.6 and later, extended thinking, or a forced tool call)")
		e.Code = providers.CodePrefillUnsupported
		return e
	}
	return nil
}
