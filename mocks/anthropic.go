package mocks

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// anthropicAuth checks x-api-key, or a bearer token, against want ("" = any).
func anthropicAuth(r *http.Request, want string) string {
	key := r.Header.Get("X-Api-Key")
	if key == "" {
		key, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	switch {
	case strings.TrimSpace(key) == "":
		return "x-api-key header is required"
	case want != "" && key != want:
		return "invalid x-api-key"
	}
	return ""
}

// anthropicHeaders sets request-id and the anthropic-ratelimit-* headers.
func anthropicHeaders(h http.Header, id string, tokens int, limited bool, reset time.Duration) {
	at := time.Now().Add(reset).UTC().Format(time.RFC3339)
	h.Set("Request-Id", id)
	h.Set("Anthropic-Organization-Id", "00000000-0000-4000-8000-000000000000")
	set := func(kind string, limit, left int) {
		if limited {
			left = 0
		}
		h.Set("Anthropic-Ratelimit-"+kind+"-Limit", strconv.Itoa(limit))
		h.Set("Anthropic-Ratelimit-"+kind+"-Remaining", strconv.Itoa(left))
		h.Set("Anthropic-Ratelimit-"+kind+"-Reset", at)
	}
	set("Requests", 4000, 3999)
	set("Tokens", 2000000, 2000000-tokens)
	set("Input-Tokens", 1600000, 1600000-tokens)
	set("Output-Tokens", 400000, 400000)
}

// anthropicError builds {"type":"error","error":{"type","message"},"request_id"} for st.
func anthropicError(st Step, requestID string) obj {
	errType := anthropicErrorType(st.Status)
	if st.ErrorType != "" {
		errType = st.ErrorType
	}
	msg := st.Message
	inner := obj{"type": errType}
	if st.Quota {
		inner["details"] = obj{"error_code": "enforced_spend_limit_reached"}
		if msg == "" {
			msg = "You have reached your specified API usage limits. You will regain access on the first day of next month."
		}
	}
	if msg == "" && st.Status == http.StatusTooManyRequests {
		msg = "This request would exceed the rate limit for your organization. Please retry after the time in the retry-after header."
	}
	if msg == "" {
		msg = defaultMessage(st.Status)
	}
	inner["message"] = msg
	return obj{"type": "error", "error": inner, "request_id": requestID}
}

// anthropicErrorType returns Anthropic's error type for status.
func anthropicErrorType(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusMethodNotAllowed:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusPaymentRequired:
		return "billing_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

// parseMessages reads a Messages API request.
func (c *call) parseMessages(body []byte) error {
	var req struct {
		Model       string          `json:"model"`
		MaxTokens   *int            `json:"max_tokens"`
		Messages    []message       `json:"messages"`
		System      json.RawMessage `json:"system"`
		Stream      bool            `json:"stream"`
		Temperature *float64        `json:"temperature"`
		TopP        *float64        `json:"top_p"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return fmt.Errorf("invalid JSON body: %v", err)
	}
	switch {
	case req.Model == "":
		return errors.New("model: Field required")
	case req.MaxTokens == nil:
		return errors.New("max_tokens: Field required")
	case *req.MaxTokens < 1:
		return errors.New("max_tokens: must be greater than or equal to 1")
	case len(req.Messages) == 0:
		return errors.New("messages: at least one message is required")
	case req.Temperature != nil && (*req.Temperature < 0 || *req.Temperature > 1):
		return invalidParam("temperature", "temperature: Input should be less than or equal to 1")
	case req.TopP != nil && (*req.TopP < 0 || *req.TopP > 1):
		return invalidParam("top_p", "top_p: Input should be less than or equal to 1")
	}
	for i, m := range req.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return invalidParam(fmt.Sprintf("messages.%d.role", i), fmt.Sprintf("messages.%d.role: Input should be 'user' or 'assistant'", i))
		}
	}
	c.model, c.stream, c.maxTokens = req.Model, req.Stream, *req.MaxTokens
	c.lastUser, c.promptTokens = prompt(req.System, req.Messages)
	return nil
}

// anthropicMessage sends a message, as JSON or as the full event stream.
func (c *call) anthropicMessage(st Step) {
	text, cut := limitTokens(replyText(st, c.s.reply, c.lastUser), c.maxTokens)
	stop, completion := "end_turn", Tokens(text)
	if cut {
		stop = "max_tokens"
	}
	id := fmt.Sprintf("msg_fake%016d", c.seq)
	block := obj{"type": "text", "text": text}
	tc := st.ToolCall
	if tc != nil {
		var input any
		if err := json.Unmarshal([]byte(toolArgs(tc)), &input); err != nil {
			input = obj{}
		}
		stop, completion = "tool_use", Tokens(tc.Name+toolArgs(tc))
		block = obj{"type": "tool_use", "id": toolID(tc, "toolu_fake", c.seq), "name": tc.Name, "input": input}
	}
	if !c.stream {
		c.sendJSON(st, obj{"id": id, "type": "message", "role": "assistant", "model": c.model,
			"content": []obj{block}, "stop_reason": stop, "stop_sequence": nil,
			"usage": obj{"input_tokens": c.promptTokens, "output_tokens": completion}})
		return
	}
	sw := c.startStream(st)
	start := obj{"type": "message_start", "message": obj{"id": id, "type": "message", "role": "assistant",
		"model": c.model, "content": []obj{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": obj{"input_tokens": c.promptTokens, "output_tokens": 1}}}
	if !sw.send("message_start", start) {
		return
	}
	opening := obj{"type": "text", "text": ""}
	if tc != nil {
		opening = obj{"type": "tool_use", "id": block["id"], "name": tc.Name, "input": obj{}}
	}
	if !sw.send("content_block_start", obj{"type": "content_block_start", "index": 0, "content_block": opening}) {
		return
	}
	if !sw.send("ping", obj{"type": "ping"}) {
		return
	}
	delta := func(d obj) obj { return obj{"type": "content_block_delta", "index": 0, "delta": d} }
	if tc != nil {
		for _, part := range argChunks(toolArgs(tc)) {
			if !sw.send("content_block_delta", delta(obj{"type": "input_json_delta", "partial_json": part})) {
				return
			}
		}
	}
	if tc == nil {
		for _, part := range chunks(text) {
			if !sw.send("content_block_delta", delta(obj{"type": "text_delta", "text": part})) {
				return
			}
		}
	}
	if !sw.send("content_block_stop", obj{"type": "content_block_stop", "index": 0}) {
		return
	}
	if !sw.send("message_delta", obj{"type": "message_delta",
		"delta": obj{"stop_reason": stop, "stop_sequence": nil},
		"usage": obj{"input_tokens": c.promptTokens, "output_tokens": completion}}) {
		return
	}
	sw.send("message_stop", obj{"type": "message_stop"})
}
