package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/steadyllm/steady/providers"
)

// Prefills reports whether the server continues a final assistant message of req
// (providers.Prefiller): only over the chat completions API, in the flavour Config.Prefill
// declares, for every model. OpenAI and Azure have no prefill: a final assistant message is
// answered as a finished turn, so nothing says their answer continues it.
func (p *Provider) Prefills(string, *providers.ChatRequest) bool {
	return p.prefill != "" && p.api == ChatCompletions
}

// checkPrefill refuses, before sending, a prefilled request (ChatRequest.Prefill) the server
// cannot take: no flavour declared (KindBadRequest, CodePrefillUnsupported: another route may
// continue it), or a last message that is not the assistant's text.
func (p *Provider) checkPrefill(req *providers.ChatRequest) error {
	if req == nil || !req.Prefill {
		return nil
	}
	if !p.Prefills(req.Model, req) {
		e := p.badRequest("Prefill: this provider declares no way to continue an assistant prefill (Config.Prefill)")
		e.Code = providers.CodePrefillUnsupported
		return e
	}
	if n := len(req.Messages); n == 0 || req.Messages[n-1].Role != providers.RoleAssistant || req.Messages[n-1].Content == "" {
		return p.badRequest("Prefill: the last message must be the assistant's text to continue")
	}
	return nil
}

// prefillOf is the flavour in which req's body is marked for the server to continue it, "" for
// a request that is not prefilled.
func (p *Provider) prefillOf(req *providers.ChatRequest) PrefillFlavor {
	if req == nil || !req.Prefill {
		return ""
	}
	return p.prefill
}

// markPrefill returns a copy of req, a chat completion, whose body is marked in flavour f for
// the server to continue its last message: "prefix": true on that message (PrefillPrefix), or
// "continue_final_message": true and "add_generation_prompt": false (PrefillContinueFinal).
// Every other byte of the body is kept as go-openai wrote it.
func markPrefill(req *http.Request, f PrefillFlavor) (*http.Request, error) {
	if req.GetBody == nil {
		return nil, errors.New("the request has no body to mark")
	}
	rc, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(rc)
	_ = rc.Close()
	if err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, err
	}
	switch f {
	case PrefillPrefix:
		var msgs []map[string]json.RawMessage
		if err := json.Unmarshal(top["messages"], &msgs); err != nil || len(msgs) == 0 {
			return nil, errors.New("the request has no messages to mark")
		}
		msgs[len(msgs)-1]["prefix"] = json.RawMessage("true")
		if top["messages"], err = json.Marshal(msgs); err != nil {
			return nil, err
		}
	case PrefillContinueFinal:
		top["continue_final_message"] = json.RawMessage("true")
		top["add_generation_prompt"] = json.RawMessage("false")
	}
	if body, err = json.Marshal(top); err != nil {
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	r.ContentLength = int64(len(body))
	return r, nil
}
