package mocks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// What one model does differently from the others on the same server: its own script of
// faults, its context window, whether it accepts an assistant prefill. A request's model is
// the body's "model" for OpenAI and Anthropic, the deployment for an Azure path; names match
// exactly ("gpt-4o" is not "gpt-4o-2024-08-06").

// WithModelScript gives the model a sequence of steps of its own, taken by the calls for that
// model before the route's script and the default one (see [Server.ModelScript] for the
// order), so that one server can fail model A while serving model B. Once spent, the model's
// calls fall through to the route's script, then the default script. No steps removes the
// model's script. NewServer panics for an empty model name or beyond [MaxModels] models.
func WithModelScript(model string, steps ...Step) Option {
	return func(o *options) {
		if o.modelScripts == nil {
			o.modelScripts = map[string][]Step{}
		}
		o.modelScripts[model] = steps
	}
}

// ModelScript replaces (and rewinds) the sequence of steps of one model (see
// [WithModelScript]); no steps removes it. A call takes its step from, in order: the scenario
// its X-Fake-Scenario header names; an outage in force for it ([WithOutage]), which consumes
// no step; its model's script while it lasts; its route's script while it lasts
// ([WithRouteScript]); the default script or scenario ([WithScript], [WithDefaultScenario]);
// chaos ([WithChaos]); else a normal reply. It panics for an empty model name or beyond
// [MaxModels] models.
func (s *Server) ModelScript(model string, steps ...Step) {
	if model == "" {
		panic("mocks: a model script needs a model name")
	}
	if err := s.script.setModel(model, steps); err != nil {
		panic(err.Error())
	}
}

// WithContextWindows gives models a context window, in the fake's tokens ([Tokens]: about 4
// bytes each, of the system prompt and the messages' text). A chat or messages request to such
// a model whose prompt tokens, plus its max_tokens (or max_completion_tokens) when it sets
// one, exceed the window is answered 400 with the API's own context-length error, before any
// step is chosen or any script consumed:
//
//   - OpenAI and Azure: invalid_request_error, code context_length_exceeded, param messages,
//     "This model's maximum context length is N tokens. However, you requested M tokens (P in
//     the messages, C in the completion). Please reduce the length of the messages or
//     completion." (without max_tokens: "…However, your messages resulted in P tokens. Please
//     reduce the length of the messages.").
//   - Anthropic: invalid_request_error, "prompt is too long: P tokens > N maximum" when the
//     prompt alone is too long, else "input length and `max_tokens` exceed context limit:
//     P + C > N, decrease input length or `max_tokens` and try again".
//
// Options add up, a later one replacing a model's window; a window of 0 or less removes it.
// Embeddings are not checked. NewServer panics beyond [MaxModels] models.
func WithContextWindows(windows map[string]int) Option {
	return func(o *options) {
		if o.windows == nil {
			o.windows = map[string]int{}
		}
		for model, n := range windows {
			if n <= 0 {
				delete(o.windows, model)
				continue
			}
			o.windows[model] = n
		}
	}
}

// WithRejectPrefill makes models refuse a conversation that ends with an assistant message (a
// prefill), as newer Anthropic models and some OpenAI-compatible servers do, with a 400 before
// any step is chosen: invalid_request_error, "This model does not support assistant message
// prefill. The conversation must end with a user message." (in the OpenAI shape on OpenAI and
// Azure paths, with code invalid_request_body and param messages). No model names means every
// model; options add up. NewServer panics beyond [MaxModels] models.
func WithRejectPrefill(models ...string) Option {
	return func(o *options) {
		if len(models) == 0 {
			o.prefill.All = true
			return
		}
		o.prefill.Models = append(o.prefill.Models, models...)
	}
}

// ModelSet names models: every one (All), or those in Models; All with Models is every model.
// The zero ModelSet names none. In a scenario file it is true (every model), false (none) or a
// list of model names.
type ModelSet struct {
	All    bool
	Models []string
}

// has reports whether the set holds model.
func (m ModelSet) has(model string) bool {
	if m.All {
		return true
	}
	for _, name := range m.Models {
		if name == model {
			return true
		}
	}
	return false
}

// MarshalJSON writes m as true, false or a list of names.
func (m ModelSet) MarshalJSON() ([]byte, error) {
	if m.All || len(m.Models) == 0 {
		return json.Marshal(m.All)
	}
	return json.Marshal(m.Models)
}

// UnmarshalJSON reads true, false or a list of model names.
func (m *ModelSet) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '[' {
		*m = ModelSet{}
		return json.Unmarshal(data, &m.Models)
	}
	var all bool
	if err := json.Unmarshal(data, &all); err != nil {
		return errors.New("want true, false or a list of model names")
	}
	*m = ModelSet{All: all}
	return nil
}

// prefillMessage is the 400's message for a prefill the model refuses.
const prefillMessage = "This model does not support assistant message prefill. The conversation must end with a user message."

// checkModel refuses a chat or messages request its model cannot take: a prefill it rejects,
// a prompt too long for its context window. It answers the 400 and reports whether it did, with
// a note for the journal.
func (c *call) checkModel() (string, bool) {
	if c.endpoint != chatEndpoint && c.endpoint != messagesEndpoint && c.endpoint != responsesEndpoint {
		return "", false
	}
	if c.lastRole == "assistant" && c.s.prefill.has(c.model) {
		c.refuse(Step{Message: prefillMessage, Code: "invalid_request_body"}, "messages")
		return "400 prefill", true
	}
	window, ok := c.s.windows[c.model]
	if !ok {
		return "", false
	}
	p, m := c.promptTokens, c.maxTokens
	var msg string
	switch {
	case c.api == anthropic && p > window:
		msg = fmt.Sprintf("prompt is too long: %d tokens > %d maximum", p, window)
	case c.api == anthropic && p+m > window:
		msg = fmt.Sprintf("input length and `max_tokens` exceed context limit: %d + %d > %d, decrease input length or `max_tokens` and try again", p, m, window)
	case c.api != anthropic && m > 0 && p+m > window:
		msg = fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.", window, p+m, p, m)
	case c.api != anthropic && m <= 0 && p > window:
		msg = fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", window, p)
	default:
		return "", false
	}
	c.refuse(Step{Message: msg, Code: "context_length_exceeded"}, "messages")
	return "400 context window", true
}

// refuse answers a 400 invalid_request_error in the call's dialect, with st's message and (for
// OpenAI) its code and the param at fault.
func (c *call) refuse(st Step, param string) {
	st.Status, st.ErrorType = http.StatusBadRequest, "invalid_request_error"
	c.headers(Step{Status: st.Status})
	if c.api == anthropic {
		c.writeError(st)
		return
	}
	c.writeErrorParam(st, param)
}

// validateModels reports what is wrong with cfg's per-model settings and outages; check
// validates a list of steps.
func (cfg *Config) validateModels(check func(where string, steps []Step)) []error {
	var errs []error
	for what, n := range map[string]int{"models": len(cfg.Models), "contextWindows": len(cfg.ContextWindows),
		"rejectPrefill": len(cfg.RejectPrefill.Models)} {
		if n > MaxModels {
			errs = append(errs, fmt.Errorf("%s names %d models, more than %d", what, n, MaxModels))
		}
	}
	for model, steps := range cfg.Models {
		if model == "" {
			errs = append(errs, errors.New("models: a script for an empty model name"))
		}
		check("models."+model, steps)
	}
	for model, n := range cfg.ContextWindows {
		if n <= 0 {
			errs = append(errs, fmt.Errorf("contextWindows.%s: %d is not a positive number of tokens", model, n))
		}
	}
	if len(cfg.Outages) > MaxOutages {
		errs = append(errs, fmt.Errorf("%d outages, more than %d", len(cfg.Outages), MaxOutages))
	}
	for i, o := range cfg.Outages {
		if err := o.validate(); err != nil {
			errs = append(errs, fmt.Errorf("outages[%d]: %w", i, err))
		}
		check(fmt.Sprintf("outages[%d].step", i), []Step{o.Step})
	}
	return errs
}
