package mocks

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// OpenAI's Responses API (POST /v1/responses; Azure's /openai/v1/responses): the request as
// the API reads it, and what it refuses. The answer is in responses_reply.go.

// respCall is what a Responses request asks for beyond what every chat asks for.
type respCall struct {
	summary    bool   // reasoning.summary: the reasoning item carries its summary text
	encrypted  bool   // include reasoning.encrypted_content
	store      bool   // store (default true): the answer can be continued from
	previous   string // previous_response_id
	background bool   // background: answered queued, read back by GET (background.go)
	// compactAt is context_management's compact_threshold (0: no server-side compaction): a
	// prompt of that many tokens or more is answered with a compaction item first.
	compactAt int
	// conversation is the conversation the call continues (conversations.go), "" for none;
	// input is the request's own input, which the call adds to it.
	conversation string
	input        []message
}

// respInput is an input item, reduced to what the fake reads.
type respInput struct {
	Type             string          `json:"type"`
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	ID               string          `json:"id"`
	CallID           string          `json:"call_id"`
	Name             string          `json:"name"`
	Arguments        *string         `json:"arguments"`
	Output           json.RawMessage `json:"output"`
	EncryptedContent string          `json:"encrypted_content"`
}

// parseResponses reads a Responses request.
func (c *call) parseResponses(body []byte) error {
	var req struct {
		Model              string          `json:"model"`
		Input              json.RawMessage `json:"input"`
		Instructions       json.RawMessage `json:"instructions"`
		Stream             bool            `json:"stream"`
		MaxOutputTokens    *int            `json:"max_output_tokens"`
		Temperature        *float64        `json:"temperature"`
		TopP               *float64        `json:"top_p"`
		Store              *bool           `json:"store"`
		Include            []string        `json:"include"`
		PreviousResponseID string          `json:"previous_response_id"`
		Background         bool            `json:"background"`
		Conversation       json.RawMessage `json:"conversation"`
		ContextManagement  []struct {
			Type             string `json:"type"`
			CompactThreshold *int   `json:"compact_threshold"`
		} `json:"context_management"`
		Reasoning *struct {
			Effort  string `json:"effort"`
			Summary string `json:"summary"`
		} `json:"reasoning"`
		Text *struct {
			Format *struct {
				Type   string          `json:"type"`
				Name   string          `json:"name"`
				Schema json.RawMessage `json:"schema"`
			} `json:"format"`
		} `json:"text"`
		Tools []struct {
			Type       string          `json:"type"`
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"tools"`
		ToolChoice json.RawMessage `json:"tool_choice"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return fmt.Errorf("We could not parse the JSON body of your request: %v", err)
	}
	switch {
	case req.Background && req.Store != nil && !*req.Store:
		return invalidParam("background", "Background mode requires store to be true.")
	}
	var f features
	if tf := req.Text; tf != nil && tf.Format != nil && tf.Format.Type == "json_schema" {
		if tf.Format.Name == "" || len(tf.Format.Schema) == 0 {
			return invalidParam("text.format.name", "Missing required parameter: 'text.format.name'.")
		}
		f.schema = tf.Format.Schema
	}
	for i, t := range req.Tools {
		if t.Type == "function" && t.Name == "" {
			return invalidParam(fmt.Sprintf("tools[%d].name", i), fmt.Sprintf("Missing required parameter: 'tools[%d].name'.", i))
		}
	}
	if len(req.ToolChoice) > 0 {
		var mode string
		var named struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}
		if json.Unmarshal(req.ToolChoice, &mode) != nil && json.Unmarshal(req.ToolChoice, &named) != nil {
			return invalidParam("tool_choice", "Invalid value for 'tool_choice'.")
		}
		for _, t := range req.Tools {
			if mode == "required" || (named.Name != "" && t.Name == named.Name) {
				f.forceTool, f.toolSchema = t.Name, t.Parameters
				break
			}
		}
		if (mode == "required" || named.Name != "") && f.forceTool == "" {
			return invalidParam("tool_choice", "Invalid value for 'tool_choice': no such tool.")
		}
	}
	rc := respCall{store: req.Store == nil || *req.Store, encrypted: slices.Contains(req.Include, "reasoning.encrypted_content"),
		previous: req.PreviousResponseID, background: req.Background}
	for i, cm := range req.ContextManagement {
		at := fmt.Sprintf("context_management[%d]", i)
		if cm.Type != "compaction" {
			return invalidParam(at+".type", fmt.Sprintf("Invalid value: '%s'. Supported values are: 'compaction'.", cm.Type))
		}
		rc.compactAt = defaultCompactAt
		if t := cm.CompactThreshold; t != nil {
			if *t < 1 {
				return invalidParam(at+".compact_threshold", fmt.Sprintf("Invalid '%s.compact_threshold': integer below minimum value. Expected a value >= 1, but got %d instead.", at, *t))
			}
			rc.compactAt = *t
		}
	}
	conv, err := c.conversationParam(req.Conversation, req.PreviousResponseID != "")
	if err != nil {
		return err
	}
	rc.conversation = conv
	if r := req.Reasoning; r != nil {
		f.thinking, rc.summary = r.Effort != "", r.Summary != ""
	}
	msgs, err := c.responsesInput(req.Input, rc.store)
	if err != nil {
		return err
	}
	if rc.conversation != "" {
		rc.input = msgs
		msgs = append(c.s.conversations.items(rc.conversation), msgs...) // the conversation's items come first
	}
	if req.PreviousResponseID != "" && !c.s.responses.has(req.PreviousResponseID) {
		return invalidParam("previous_response_id", fmt.Sprintf("Previous response with id '%s' not found.", req.PreviousResponseID))
	}
	if req.Temperature != nil && (*req.Temperature < 0 || *req.Temperature > 2) {
		return invalidParam("temperature", fmt.Sprintf("Invalid 'temperature': expected a value between 0 and 2, but got %g instead.", *req.Temperature))
	}
	if req.TopP != nil && (*req.TopP < 0 || *req.TopP > 1) {
		return invalidParam("top_p", fmt.Sprintf("Invalid 'top_p': expected a value between 0 and 1, but got %g instead.", *req.TopP))
	}
	if m := req.MaxOutputTokens; m != nil && *m < minOutputTokens {
		return invalidParam("max_output_tokens", fmt.Sprintf("Invalid 'max_output_tokens': integer below minimum value. Expected a value >= %d, but got %d instead.", minOutputTokens, *m))
	}
	if req.Model == "" {
		return invalidParam("model", "Missing required parameter: 'model'.")
	}
	if len(msgs) == 0 && req.PreviousResponseID == "" && rc.conversation == "" {
		return invalidParam("input", "Missing required parameter: 'input'.")
	}
	f.prefix = promptKey(req.Instructions, msgs)
	c.feat, c.resp = f, rc
	c.model, c.stream = req.Model, req.Stream
	if req.MaxOutputTokens != nil {
		c.maxTokens = *req.MaxOutputTokens
	}
	c.lastUser, c.promptTokens = prompt(c.s.countPrompt, req.Instructions, msgs)
	if len(msgs) > 0 {
		c.lastRole = msgs[len(msgs)-1].Role
	}
	return nil
}

// minOutputTokens is the least max_output_tokens the Responses API accepts.
const minOutputTokens = 16

// defaultCompactAt is the fake's compact_threshold when a compaction entry states none.
const defaultCompactAt = 1000

// responsesInput reads input — a string, or a list of items — as messages (a tool result as
// a "tool" message, a function call as an "assistant" one), refusing the items the API would
// refuse: an unknown type or role, a call or a result without its call_id, an image the API
// cannot read, a reasoning or compaction item that is neither encrypted by this server nor
// stored by it. A compaction item replaces every message before it but the instructions.
func (c *call) responsesInput(raw json.RawMessage, store bool) ([]message, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		return []message{{Role: "user", Content: raw}}, nil
	}
	var items []respInput
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, invalidParam("input", "Invalid type for 'input': expected a string or an array of input items.")
	}
	msgs := make([]message, 0, len(items))
	for i, it := range items {
		at := fmt.Sprintf("input[%d]", i)
		switch it.Type {
		case "message", "":
			switch it.Role {
			case "user", "assistant", "system", "developer":
			default:
				return nil, invalidParam(at+".role", fmt.Sprintf("Invalid value: '%s'. Supported values are: 'assistant', 'system', 'developer', and 'user'.", it.Role))
			}
			if err := checkInputImages(at, it.Content); err != nil {
				return nil, err
			}
			msgs = append(msgs, message{Role: it.Role, Content: it.Content})
		case "function_call":
			if it.CallID == "" || it.Name == "" || it.Arguments == nil {
				return nil, invalidParam(at, fmt.Sprintf("Missing required parameter: '%s.call_id', '%s.name' or '%s.arguments'.", at, at, at))
			}
			args, _ := json.Marshal(*it.Arguments)
			msgs = append(msgs, message{Role: "assistant", Content: args})
		case "function_call_output":
			if it.CallID == "" {
				return nil, invalidParam(at+".call_id", fmt.Sprintf("Missing required parameter: '%s.call_id'.", at))
			}
			msgs = append(msgs, message{Role: "tool", Content: it.Output, ToolCallID: it.CallID})
		case "reasoning":
			if err := c.checkReasoning(at, it, store); err != nil {
				return nil, err
			}
		case "compaction":
			if !strings.HasPrefix(it.EncryptedContent, encryptedPrefix) {
				return nil, invalidParam(at+".encrypted_content", "The encrypted content for item "+it.ID+" could not be verified.")
			}
			// The item stands for everything before it but the instructions.
			kept := msgs[:0]
			for _, m := range msgs {
				if m.Role == "system" || m.Role == "developer" {
					kept = append(kept, m)
				}
			}
			msgs = kept
		default:
			return nil, invalidParam(at+".type", fmt.Sprintf("Invalid value: '%s'. Supported values are: 'message', 'function_call', 'function_call_output', 'reasoning' and 'compaction'.", it.Type))
		}
	}
	return msgs, nil
}

// checkInputImages refuses an input_image part the API would refuse.
func checkInputImages(at string, content json.RawMessage) error {
	var parts []struct {
		Type     string `json:"type"`
		ImageURL string `json:"image_url"`
	}
	if json.Unmarshal(content, &parts) != nil {
		return nil
	}
	for j, p := range parts {
		if p.Type != "input_image" {
			continue
		}
		if err := checkImageURL(p.ImageURL); err != nil {
			return invalidParam(fmt.Sprintf("%s.content[%d].image_url", at, j), err.Error())
		}
	}
	return nil
}

// encryptedPrefix starts the encrypted content of this server's reasoning items; other
// content cannot be decrypted here, as another provider's cannot at OpenAI.
const encryptedPrefix = "enc_fake_"

// checkReasoning refuses a reasoning item the API could not read back: encrypted content that
// is not this server's, or, without any, an ID it did not store.
func (c *call) checkReasoning(at string, it respInput, store bool) error {
	switch {
	case it.EncryptedContent != "":
		if !strings.HasPrefix(it.EncryptedContent, encryptedPrefix) {
			return invalidParam(at+".encrypted_content", "The encrypted content for item "+it.ID+" could not be verified.")
		}
	case !c.s.responses.has(it.ID):
		msg := fmt.Sprintf("Item with id '%s' not found.", it.ID)
		if !store {
			msg += " Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input."
		}
		return &notFoundError{param: at, msg: msg}
	}
	return nil
}

// notFoundError is a request the API answers with a 404: an item it does not hold.
type notFoundError struct{ param, msg string }

func (e *notFoundError) Error() string { return e.msg }

// isNotFound reports whether err is a *notFoundError, and returns it.
func isNotFound(err error) (*notFoundError, bool) {
	var nf *notFoundError
	return nf, errors.As(err, &nf)
}

// storedResponses remembers the answers and reasoning items the server stored (store on),
// which a later request may name (previous_response_id, a reasoning item by its ID); past
// storedCapacity the oldest is forgotten, so a long run holds bounded memory.
type storedResponses struct {
	mu    sync.Mutex
	ids   map[string]bool
	order []string
	next  int
}

const storedCapacity = 4096

func (s *storedResponses) add(ids ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids == nil {
		s.ids = map[string]bool{}
	}
	for _, id := range ids {
		if s.ids[id] {
			continue
		}
		if len(s.order) == storedCapacity {
			delete(s.ids, s.order[s.next])
			s.order[s.next] = id
			s.next = (s.next + 1) % storedCapacity
		} else {
			s.order = append(s.order, id)
		}
		s.ids[id] = true
	}
}

// forget drops id, reporting whether it was held; its place in order is reused in turn.
func (s *storedResponses) forget(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ids[id] {
		return false
	}
	delete(s.ids, id)
	return true
}

func (s *storedResponses) has(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids[id]
}

// respIDs are the IDs of the answer to call seq and of its items.
func respIDs(seq int) (resp, reasoning, msg, call string) {
	return fmt.Sprintf("resp_fake%016d", seq), fmt.Sprintf("rs_fake%016d", seq), fmt.Sprintf("msg_fake%016d", seq),
		fmt.Sprintf("fc_fake%016d", seq)
}

// writeNotFound answers a 404 in OpenAI's envelope, naming the param.
func (c *call) writeNotFound(nf *notFoundError) {
	c.headers(Step{Status: http.StatusNotFound})
	c.writeErrorParam(Step{Status: http.StatusNotFound, Message: nf.msg}, nf.param)
}
