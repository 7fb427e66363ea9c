package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/internal/wire"
)

// maxCount bounds the count an answer may state: far above any context window, so that a
// hostile number cannot decide anything.
const maxCount = 1 << 31

// countRequest is the body of POST /v1/messages/count_tokens: the parts of a Messages request
// that make its prompt, as anthropic-sdk-go's MessageCountTokensParams names them. What only
// shapes the answer (max_tokens, stream, temperature, top_p, stop_sequences) is left out: the
// endpoint refuses it.
type countRequest struct {
	Model        string        `json:"model"`
	System       []wireBlock   `json:"system,omitempty"`
	Messages     []wireMessage `json:"messages"`
	Tools        []wireTool    `json:"tools,omitempty"`
	ToolChoice   *wireChoice   `json:"tool_choice,omitempty"`
	Thinking     *wireThinking `json:"thinking,omitempty"`
	OutputConfig *wireOutput   `json:"output_config,omitempty"`
}

// rawCountRequest is a countRequest with raw tools or blocks (see rawRequest).
type rawCountRequest struct {
	countRequest
	Messages []rawMessage `json:"messages"`
	Tools    []any        `json:"tools,omitempty"`
}

// CountTokens counts the input tokens of req with the API's counting endpoint (POST
// /v1/messages/count_tokens; providers.TokenCounter): its system prompt, messages and tools,
// for req's model (or Config.Model), as the API counts them when req is sent. The request is
// built as Chat builds it and refused as Chat refuses it (KindBadRequest, before sending); a
// failure of the count is a *providers.Error like any call's. The answer is read within
// Limits.MaxErrorBodyBytes (a count is a few bytes, as an error envelope is), and an answer
// without a count, or with one below 0 or past 2^31, is KindUnavailable.
//
// It is one HTTP exchange over Config.HTTPClient. The steady client never sends it through the
// provider's resilience pipeline: see client.Client.CountTokens.
func (p *Provider) CountTokens(ctx context.Context, req *providers.ChatRequest) (int, error) {
	if ctx == nil {
		return 0, p.badRequest(providers.NilContext)
	}
	w, err := p.toWire(req, false)
	if err != nil {
		return 0, err
	}
	body, err := p.encodeCount(w)
	if err != nil {
		return 0, err
	}
	resp, err := p.send(ctx, p.countURL, body, false)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := wire.ReadAll(resp.Body, p.limits.MaxErrorBodyBytes, "MaxErrorBodyBytes")
	if err != nil {
		return 0, p.errs.ReadFailure(ctx, resp, "reading the count", err)
	}
	var v struct {
		InputTokens *int64 `json:"input_tokens"`
	}
	if err := json.Unmarshal(data, &v); err != nil || !isObject(data) {
		return 0, p.errs.ReadFailure(ctx, resp, "decoding the count", fmt.Errorf("not a JSON object: %w", err))
	}
	if n := v.InputTokens; n == nil || *n < 0 || *n > maxCount {
		e := p.notAnAnswer(resp, data)
		if e.Kind == providers.KindUnavailable {
			e.Message = p.errs.Text("the count answer states no input_tokens from 0 to 2^31: " + wire.Describe(data))
		}
		return 0, e
	}
	return int(*v.InputTokens), nil
}

// PreflightCount reports Config.CountTokens and Config.CountTimeout: whether the client counts
// every chat call before sending it, and how long a count may take (providers.TokenCounter).
func (p *Provider) PreflightCount() (on bool, timeout time.Duration) {
	return p.countOn, p.countTimeout
}

// encodeCount marshals the count request of w.
func (p *Provider) encodeCount(w *wireRequest) ([]byte, error) {
	c := countRequest{Model: w.Model, System: w.System, Messages: w.Messages, Tools: w.Tools, ToolChoice: w.ToolChoice,
		Thinking: w.Thinking, OutputConfig: w.OutputConfig}
	var v any = &c
	if w.raw {
		msgs, tools, err := rawLists(w)
		if err != nil {
			return nil, p.badRequest("encoding the count request: " + err.Error())
		}
		v = &rawCountRequest{countRequest: c, Messages: msgs, Tools: tools}
	}
	body, err := json.Marshal(v)
	if err != nil {
		return nil, &providers.Error{Provider: p.name, Kind: providers.KindBadRequest, Message: "encoding the count request: " + err.Error(), Err: err}
	}
	return body, nil
}
