package mocks

import (
	"bytes"
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
	key := keyOf(r, "X-Api-Key")
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

// parseMessages reads a Messages API request, or with count the body of a count_tokens
// request, which holds only what makes the prompt.
func (c *call) parseMessages(body []byte, count bool) error {
	var req struct {
		Model       string          `json:"model"`
		MaxTokens   *int            `json:"max_tokens"`
		Messages    []message       `json:"messages"`
		System      json.RawMessage `json:"system"`
		Stream      bool            `json:"stream"`
		Temperature *float64        `json:"temperature"`
		TopP        *float64        `json:"top_p"`
		Tools       []anthropicTool `json:"tools"`
		ToolChoice  *struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"tool_choice"`
		Thinking *struct {
			Type         string `json:"type"`
			BudgetTokens int    `json:"budget_tokens"`
		} `json:"thinking"`
		OutputConfig *struct {
			Effort string `json:"effort"`
			Format *struct {
				Type   string          `json:"type"`
				Schema json.RawMessage `json:"schema"`
			} `json:"format"`
		} `json:"output_config"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return fmt.Errorf("invalid JSON body: %v", err)
	}
	if count {
		if err := countOnly(body); err != nil {
			return err
		}
	}
	if err := checkTools(req.Tools); err != nil {
		return err
	}
	var f features
	f.search = searchTool(req.Tools)
	if tc := req.ToolChoice; tc != nil && (tc.Type == "tool" || tc.Type == "any") {
		for _, t := range req.Tools {
			if tc.Type == "any" || t.Name == tc.Name {
				f.forceTool, f.toolSchema = t.Name, t.InputSchema
				break
			}
		}
		if f.forceTool == "" {
			return invalidParam("tool_choice.name", fmt.Sprintf("tool_choice: no tool named %q", tc.Name))
		}
	}
	if th := req.Thinking; th != nil && th.Type == "enabled" {
		if adaptiveOnly(req.Model) {
			return invalidParam("thinking.type", fmt.Sprintf("thinking.type.enabled is not supported for this model (%s). Use thinking.type.adaptive and output_config.effort to control thinking behavior.", req.Model))
		}
		if th.BudgetTokens < 1024 {
			return invalidParam("thinking.budget_tokens", "thinking.budget_tokens: Input should be greater than or equal to 1024")
		}
		if req.MaxTokens != nil && th.BudgetTokens >= *req.MaxTokens {
			return invalidParam("max_tokens", "max_tokens must be greater than thinking.budget_tokens")
		}
		f.thinking = true
	}
	if th := req.Thinking; th != nil && th.Type == "adaptive" {
		if th.BudgetTokens != 0 {
			return invalidParam("thinking.budget_tokens", "thinking.budget_tokens: Extra inputs are not permitted with thinking.type.adaptive")
		}
		f.thinking = true
	}
	if oc := req.OutputConfig; oc != nil {
		if oc.Effort != "" {
			f.thinking = true
		}
		if oc.Format != nil {
			if oc.Format.Type != "json_schema" || len(oc.Format.Schema) == 0 {
				return invalidParam("output_config.format", "output_config.format: type must be 'json_schema' with a schema")
			}
			f.schema = oc.Format.Schema
		}
	}
	f.cacheable = bytes.Contains(body, []byte(`"cache_control"`))
	for i, m := range req.Messages {
		var blocks []contentBlock
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue
		}
		for j, b := range blocks {
			if b.Type == "image" {
				if err := checkImage(b.Source); err != nil {
					return invalidParam(fmt.Sprintf("messages.%d.content.%d.source", i, j), err.Error())
				}
			}
		}
		if err := checkServerBlocks(i, blocks); err != nil {
			return err
		}
	}
	f.prefix = promptKey(req.System, req.Messages)
	c.feat = f
	switch {
	case req.Model == "":
		return errors.New("model: Field required")
	case !count && req.MaxTokens == nil:
		return errors.New("max_tokens: Field required")
	case !count && *req.MaxTokens < 1:
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
	c.model, c.stream = req.Model, req.Stream
	if req.MaxTokens != nil {
		c.maxTokens = *req.MaxTokens
	}
	c.lastUser, c.promptTokens = prompt(c.s.countPrompt, req.System, req.Messages)
	c.lastRole = req.Messages[len(req.Messages)-1].Role
	if !count && c.lastRole == "assistant" {
		return c.anthropicPrefill(req.Messages[len(req.Messages)-1], f.thinking)
	}
	return nil
}

// anthropicMessage sends a message, as JSON or as the full event stream.
func (c *call) anthropicMessage(st Step) {
	text, cut := limitTokens(c.continued(replyText(st, c.s.reply, c.lastUser)), c.maxTokens)
	f := c.feat
	if f.schema != nil && st.Text == "" {
		text, cut = instanceJSON(f.schema), false
	}
	pieces, text := st.beforeRefusal(chunks(text))
	stop, completion := "end_turn", Tokens(text)
	var stopDetails obj // set only for a refusal, as the API sends it
	switch {
	case st.refuses():
		stop, stopDetails = "refusal", st.anthropicStopDetails()
	case cut:
		stop = "max_tokens"
	}
	id := fmt.Sprintf("msg_fake%016d", c.seq)
	block := obj{"type": "text", "text": text}
	tc := st.ToolCall
	if tc == nil && f.forceTool != "" {
		tc = &ToolCall{Name: f.forceTool, Arguments: instanceJSON(f.toolSchema)}
	}
	if st.refuses() {
		tc = nil // the model refused instead of calling
	}
	usage := obj{"input_tokens": c.promptTokens, "output_tokens": 0}
	if f.cacheable {
		if c.s.cached(f.prefix) {
			usage["input_tokens"], usage["cache_read_input_tokens"] = 0, c.promptTokens
		} else {
			usage["input_tokens"], usage["cache_creation_input_tokens"] = 0, c.promptTokens
		}
	}
	var thinkText, signature string
	if f.thinking {
		thinkText, signature = thought(c.lastUser, c.seq)
		usage["output_tokens_details"] = obj{"thinking_tokens": Tokens(thinkText)}
	}
	if tc != nil {
		var input any
		if err := json.Unmarshal([]byte(toolArgs(tc)), &input); err != nil {
			input = obj{}
		}
		stop, completion = "tool_use", Tokens(tc.Name+toolArgs(tc))
		block = obj{"type": "tool_use", "id": toolID(tc, "toolu_fake", c.seq), "name": tc.Name, "input": input}
	}
	completion += Tokens(thinkText)
	usage["output_tokens"] = completion
	var srch *search // the web search the answer runs first, nil for none
	if f.search != "" && tc == nil && !st.refuses() {
		s := newSearch(f.search, c.lastUser)
		srch = &s
		usage["server_tool_use"] = obj{"web_search_requests": 1}
	}
	if !c.stream {
		content := []any{block}
		if st.refuses() && text == "" {
			content = []any{} // refused before a word: no block at all
		}
		if srch != nil {
			block["citations"] = []obj{srch.citation}
			content = append([]any{obj{"type": "text", "text": searchIntro}, srch.use, srch.result}, content...)
		}
		for i := len(st.Blocks) - 1; i >= 0; i-- {
			content = append([]any{st.Blocks[i]}, content...)
		}
		if f.thinking {
			content = append([]any{obj{"type": "thinking", "thinking": thinkText, "signature": signature}}, content...)
		}
		msg := obj{"id": id, "type": "message", "role": "assistant", "model": c.model,
			"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage}
		if stopDetails != nil {
			msg["stop_details"] = stopDetails
		}
		c.sendJSON(st, msg)
		return
	}
	sw := c.startStream(st)
	startUsage := obj{}
	for k, v := range usage {
		startUsage[k] = v
	}
	startUsage["output_tokens"] = 1
	start := obj{"type": "message_start", "message": obj{"id": id, "type": "message", "role": "assistant",
		"model": c.model, "content": []obj{}, "stop_reason": nil, "stop_sequence": nil, "usage": startUsage}}
	if !sw.open("message_start", start) {
		return
	}
	at := 0 // the index of the answer's block
	if f.thinking {
		at = 1
		if !sw.open("content_block_start", obj{"type": "content_block_start", "index": 0,
			"content_block": obj{"type": "thinking", "thinking": "", "signature": ""}}) {
			return
		}
		for _, part := range chunks(thinkText) {
			if !sw.delta("content_block_delta", obj{"type": "content_block_delta", "index": 0,
				"delta": obj{"type": "thinking_delta", "thinking": part}}) {
				return
			}
		}
		if !sw.delta("content_block_delta", obj{"type": "content_block_delta", "index": 0,
			"delta": obj{"type": "signature_delta", "signature": signature}}) ||
			!sw.send("content_block_stop", obj{"type": "content_block_stop", "index": 0}) {
			return
		}
	}
	if !c.streamBlocks(sw, st.Blocks, srch, &at) {
		return
	}
	opening := obj{"type": "text", "text": ""}
	if tc != nil {
		opening = obj{"type": "tool_use", "id": block["id"], "name": tc.Name, "input": obj{}}
	}
	// The answer's block opens the stream unless a block came before it.
	openBlock, ping := sw.open, sw.open
	if at > 0 {
		openBlock, ping = sw.send, sw.send
	}
	if !openBlock("content_block_start", obj{"type": "content_block_start", "index": at, "content_block": opening}) {
		return
	}
	if !ping("ping", obj{"type": "ping"}) {
		return
	}
	delta := func(d obj) obj { return obj{"type": "content_block_delta", "index": at, "delta": d} }
	if srch != nil && !sw.send("content_block_delta", delta(obj{"type": "citations_delta", "citation": srch.citation})) {
		return
	}
	if tc != nil {
		for _, part := range argChunks(toolArgs(tc)) {
			if !sw.delta("content_block_delta", delta(obj{"type": "input_json_delta", "partial_json": part})) {
				return
			}
		}
	}
	if tc == nil {
		for _, part := range pieces {
			if !sw.delta("content_block_delta", delta(obj{"type": "text_delta", "text": part})) {
				return
			}
		}
	}
	if !sw.send("content_block_stop", obj{"type": "content_block_stop", "index": at}) {
		return
	}
	final := obj{"stop_reason": stop, "stop_sequence": nil}
	if stopDetails != nil {
		final["stop_details"] = stopDetails
	}
	if !sw.send("message_delta", obj{"type": "message_delta", "delta": final, "usage": usage}) {
		return
	}
	if !st.OmitTerminal {
		sw.send("message_stop", obj{"type": "message_stop"})
	}
}

// adaptiveOnly reports whether model takes only adaptive thinking, as the Claude models of
// version 4.7 and later do: they refuse thinking.type "enabled" with a budget.
func adaptiveOnly(model string) bool {
	parts := strings.Split(strings.ToLower(model), "-")
	if len(parts) < 2 || parts[0] != "claude" {
		return false
	}
	for i := 1; i < len(parts); i++ {
		major, err := strconv.Atoi(parts[i])
		if err != nil || len(parts[i]) > 2 {
			continue
		}
		minor := 0
		if i+1 < len(parts) && len(parts[i+1]) <= 2 {
			minor, _ = strconv.Atoi(parts[i+1])
		}
		return major > 4 || major == 4 && minor >= 7
	}
	return false
}
