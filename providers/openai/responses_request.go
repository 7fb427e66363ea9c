package openai

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/steadyllm/steady/providers"
)

// The Responses request: the neutral request mapped to its body (see responses.go for the
// mapping), and the one exchange that sends it.

// responsesRequest builds the body of a Responses request for req (see the mapping in
// responses.go). It refuses, with a bad_request before anything is sent, what the API cannot
// express.
func (p *Provider) responsesRequest(req *providers.ChatRequest, stream bool) ([]byte, error) {
	if err := req.Validate(); err != nil {
		return nil, p.refuse(err)
	}
	model := req.Model
	if model == "" {
		model = p.model
	}
	if model == "" {
		return nil, p.badRequest("the request names no model and Config.Model is empty")
	}
	if d, ok := p.responses.deployments[model]; ok {
		model = d
	}
	if len(req.Stop) > 0 {
		return nil, p.badRequest("Stop: the Responses API has no stop sequences; use the chat completions API (Config.API) for them")
	}
	if err := p.refuseRawTools(req); err != nil {
		return nil, err
	}
	if req.Background && req.Store != nil && !*req.Store {
		return nil, p.badRequest("Background with Store false: a background answer is stored until it is retrieved; leave Store unset or true")
	}
	w := respRequest{Model: model, Temperature: req.Temperature, TopP: req.TopP, Store: req.Store, Stream: stream,
		Background: req.Background, Input: make([]respItem, 0, len(req.Messages))}
	if pr := req.Previous; pr != nil {
		if pr.Origin != "" && pr.Origin != p.scope {
			return nil, p.badRequest("Previous: the answer " + p.errs.Field(pr.ID) + " was stored by another provider (Origin differs): " +
				"only the provider that stored it can continue from it")
		}
		w.PreviousResponseID = pr.ID
	}
	if cv := req.Conversation; cv != nil {
		if cv.Origin != "" && cv.Origin != p.scope {
			return nil, p.badRequest("Conversation: " + p.errs.Field(cv.ID) + " is kept by another provider (Origin differs): " +
				"only that provider can continue it")
		}
		w.Conversation = cv.ID
	}
	for i := range req.Messages {
		// A pruned conversation whose compaction item another provider made: only it holds the
		// messages the caller dropped.
		if c := req.Messages[i].Compaction; c != nil && c.Pruned && c.Origin != "" && c.Origin != p.scope {
			return nil, p.badRequest(fmt.Sprintf("Messages[%d].Compaction: the compaction item of a pruned conversation was made by "+
				"another provider (Origin differs): only that provider can continue the conversation, whose earlier messages "+
				"were dropped; send the whole transcript to go elsewhere", i))
		}
	}
	if req.CompactThreshold > 0 {
		w.ContextManagement = []respContext{{Type: "compaction", CompactThreshold: req.CompactThreshold}}
	}
	if req.MaxTokens > 0 {
		w.MaxOutputTokens = max(req.MaxTokens, minOutputTokens)
	}
	for i := range req.Messages {
		if err := p.addInput(&w, i, &req.Messages[i]); err != nil {
			return nil, err
		}
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if len(bytes.TrimSpace(params)) == 0 {
			params = emptySchema
		}
		w.Tools = append(w.Tools, respTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: params})
	}
	switch tc := req.ToolChoice; tc.Mode {
	case providers.ToolChoiceAuto, providers.ToolChoiceNone, providers.ToolChoiceRequired:
		w.ToolChoice = string(tc.Mode)
	case providers.ToolChoiceTool:
		w.ToolChoice = respNamedChoice{Type: "function", Name: tc.Name}
	}
	if req.ParallelToolCalls != nil && len(req.Tools) > 0 {
		w.ParallelToolCalls = req.ParallelToolCalls
	}
	switch {
	case req.Schema != nil:
		name := req.Schema.Name
		if name == "" {
			name = "response"
		}
		w.Text = &respTextConfig{Format: respFormat{Type: "json_schema", Name: name, Description: req.Schema.Description,
			Schema: req.Schema.Schema, Strict: &req.Schema.Strict}}
	case req.Format == providers.FormatJSON:
		w.Text = &respTextConfig{Format: respFormat{Type: "json_object"}}
	}
	if r := req.Reasoning; r != nil && (r.Effort != "" || r.Summary != "") {
		w.Reasoning = &respReasoning{Effort: r.Effort, Summary: r.Summary}
	}
	w.Include = req.Include
	if req.Store != nil && !*req.Store && !contains(req.Include, providers.IncludeReasoningEncrypted) {
		// Nothing stored: a reasoning item can come back only with its encrypted content (sent
		// back by its ID alone, it is "not found").
		w.Include = append(append(make([]string, 0, len(req.Include)+1), req.Include...), providers.IncludeReasoningEncrypted)
	}
	body, err := json.Marshal(&w)
	if err != nil {
		return nil, p.errs.Finish(&providers.Error{Kind: providers.KindBadRequest, Message: "encoding the request: " + err.Error(), Err: err})
	}
	return body, nil
}

// addInput appends the input items of message i, m, to w.
func (p *Provider) addInput(w *respRequest, i int, m *providers.Message) error {
	switch m.Role {
	case providers.RoleSystem, providers.RoleUser:
		item := respItem{Type: "message", Role: string(m.Role), Content: respContent{set: true, text: m.Content}}
		if len(m.Parts) > 0 {
			item.Content.parts = make([]respPart, len(m.Parts))
			for j, part := range m.Parts {
				item.Content.parts[j] = inputPart(part)
			}
		}
		w.Input = append(w.Input, item)
	case providers.RoleAssistant:
		// Only this provider's own state goes back: another endpoint's cannot be read here (a
		// pruned conversation's compaction item of another origin was refused before this).
		if c := m.Compaction; c != nil && (c.Origin == "" || c.Origin == p.scope) {
			w.Input = append(w.Input, respItem{Type: "compaction", ID: c.ID, EncryptedContent: c.Encrypted})
		}
		for _, b := range m.Thinking {
			// Only this provider's own reasoning items go back: another endpoint's cannot be
			// read here, and Anthropic's signed blocks are no items at all.
			if b.ID == "" || (b.Origin != "" && b.Origin != p.scope) {
				continue
			}
			item := respItem{Type: "reasoning", ID: b.ID, EncryptedContent: b.Encrypted, Summary: []respSummary{}}
			if b.Text != "" {
				item.Summary = []respSummary{{Type: "summary_text", Text: b.Text}}
			}
			w.Input = append(w.Input, item)
		}
		if m.Content != "" || (len(m.ToolCalls) == 0 && m.Compaction == nil) {
			w.Input = append(w.Input, respItem{Type: "message", Role: "assistant", Content: respContent{set: true, text: m.Content}})
		}
		for _, tc := range m.ToolCalls {
			if tc.ID == "" || tc.Name == "" {
				return p.badRequest(fmt.Sprintf("message %d: a tool call needs an ID and a Name", i))
			}
			args := tc.Arguments
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			w.Input = append(w.Input, respItem{Type: "function_call", CallID: tc.ID, Name: tc.Name, Arguments: args})
		}
	case providers.RoleTool:
		w.Input = append(w.Input, respItem{Type: "function_call_output", CallID: m.ToolCallID, Output: &m.Content})
	}
	return nil
}

// inputPart maps a part of a user message: text, or an image by URL or as a data: URL.
func inputPart(part providers.Part) respPart {
	img := part.Image
	if img == nil {
		return respPart{Type: "input_text", Text: part.Text}
	}
	u := img.URL
	if u == "" {
		u = "data:" + img.MediaType + ";base64," + base64.StdEncoding.EncodeToString(img.Data)
	}
	detail := img.Detail
	if detail == "" {
		detail = "auto"
	}
	return respPart{Type: "input_image", ImageURL: u, Detail: detail}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// responsesSend POSTs body to the Responses endpoint. It returns the response only for a 2xx
// status, with its body open for the caller to close; every other outcome is a
// *providers.Error, and the body of an error response is read (within
// Limits.MaxErrorBodyBytes) and closed here. The body is a *bytes.Reader, so the pipeline can
// replay the request on retry.
func (p *Provider) responsesSend(ctx context.Context, body []byte, stream bool) (*http.Response, error) {
	return p.responsesDo(ctx, http.MethodPost, p.responses.url, body, stream)
}

// responsesDo is one exchange with the Responses API: method on url, with body (nil: none),
// under the contract of responsesSend.
func (p *Provider) responsesDo(ctx context.Context, method, url string, body []byte, stream bool) (*http.Response, error) {
	w := &p.responses
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	r, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, p.errs.Finish(&providers.Error{Kind: providers.KindBadRequest, Message: "building the request: " + err.Error(), Err: err})
	}
	switch {
	case w.azure:
		r.Header.Set("Api-Key", w.apiKey)
	case w.apiKey != "":
		r.Header.Set("Authorization", "Bearer "+w.apiKey)
	}
	if w.org != "" {
		r.Header.Set("Openai-Organization", w.org)
	}
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	if stream {
		r.Header.Set("Accept", "text/event-stream")
	} else {
		r.Header.Set("Accept", "application/json")
	}
	resp, err := w.sender.Do(r)
	if err != nil {
		return nil, p.errs.Transport(ctx, err)
	}
	if e := p.errs.Redirect(resp); e != nil {
		_ = resp.Body.Close()
		return nil, e
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, p.responsesHTTPError(resp)
	}
	return resp, nil
}
