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

// defaultModels are listed by GET /v1/models unless WithModels says otherwise.
var defaultModels = []string{"gpt-4o-mini", "gpt-4o", "text-embedding-3-small", "claude-sonnet-4-5", "claude-haiku-4-5"}

// openAIAuth checks the bearer token (Azure: also the api-key header) against want ("" = any).
func openAIAuth(r *http.Request, isAzure bool, want string) string {
	key := keyOf(r)
	if isAzure {
		key = keyOf(r, "Api-Key")
	}
	switch {
	case strings.TrimSpace(key) == "" && isAzure:
		return "Access denied due to missing subscription key. Make sure to include the api-key header."
	case strings.TrimSpace(key) == "":
		return "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
	case want != "" && key != want:
		return "Incorrect API key provided."
	}
	return ""
}

// openAIHeaders sets the request id and the x-ratelimit-* headers.
func openAIHeaders(h http.Header, id string, tokens int, limited bool, reset time.Duration) {
	const reqLimit, tokLimit = 10000, 2000000
	reqLeft, tokLeft := reqLimit-1, tokLimit-tokens
	if limited {
		reqLeft, tokLeft = 0, 0
	}
	h.Set("X-Request-Id", id)
	h.Set("Openai-Processing-Ms", "1")
	h.Set("X-Ratelimit-Limit-Requests", strconv.Itoa(reqLimit))
	h.Set("X-Ratelimit-Limit-Tokens", strconv.Itoa(tokLimit))
	h.Set("X-Ratelimit-Remaining-Requests", strconv.Itoa(reqLeft))
	h.Set("X-Ratelimit-Remaining-Tokens", strconv.Itoa(tokLeft))
	h.Set("X-Ratelimit-Reset-Requests", reset.String())
	h.Set("X-Ratelimit-Reset-Tokens", reset.String())
}

// openAIError builds {"error":{"message","type","param","code"}} for st.
func openAIError(st Step) obj {
	errType, code, msg := "invalid_request_error", any(nil), st.Message
	switch {
	case st.Status == http.StatusUnauthorized:
		code = "invalid_api_key"
	case st.Status == http.StatusTooManyRequests && st.Quota:
		errType, code = "insufficient_quota", "insufficient_quota"
		if msg == "" {
			msg = "You exceeded your current quota, please check your plan and billing details."
		}
	case st.Status == http.StatusTooManyRequests:
		errType, code = "requests", "rate_limit_exceeded"
		if msg == "" {
			msg = fmt.Sprintf("Rate limit reached for requests. Please try again in %s.", max(st.RetryAfter, time.Millisecond))
		}
	case st.Status >= 500:
		errType = "server_error"
	}
	if st.ErrorType != "" {
		errType = st.ErrorType
	}
	if st.Code != "" {
		code = st.Code
	}
	if msg == "" {
		msg = defaultMessage(st.Status)
	}
	return obj{"error": obj{"message": msg, "type": errType, "param": nil, "code": code}}
}

// defaultMessage returns a provider-like message for status.
func defaultMessage(status int) string {
	switch status {
	case 503:
		return "The server is overloaded or not ready yet."
	case 529:
		return "Overloaded"
	}
	if t := http.StatusText(status); t != "" {
		return t
	}
	return "Error " + strconv.Itoa(status)
}

// parseChat reads a chat completions request.
func (c *call) parseChat(body []byte) error {
	var req struct {
		Model         string    `json:"model"`
		Messages      []message `json:"messages"`
		Stream        bool      `json:"stream"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
		MaxTokens           *int     `json:"max_tokens"`
		MaxCompletionTokens *int     `json:"max_completion_tokens"`
		Temperature         *float64 `json:"temperature"`
		TopP                *float64 `json:"top_p"`
		ReasoningEffort     string   `json:"reasoning_effort"`
		ResponseFormat      *struct {
			Type       string `json:"type"`
			JSONSchema *struct {
				Name   string          `json:"name"`
				Schema json.RawMessage `json:"schema"`
			} `json:"json_schema"`
		} `json:"response_format"`
		Tools []struct {
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
		ToolChoice json.RawMessage `json:"tool_choice"`
		// vLLM's continuation of the final assistant message.
		ContinueFinal       bool  `json:"continue_final_message"`
		AddGenerationPrompt *bool `json:"add_generation_prompt"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return fmt.Errorf("We could not parse the JSON body of your request: %v", err)
	}
	if err := c.openAIPrefill(req.Messages, req.ContinueFinal, req.AddGenerationPrompt); err != nil {
		return err
	}
	var f features
	if rf := req.ResponseFormat; rf != nil && rf.Type == "json_schema" {
		if rf.JSONSchema == nil || rf.JSONSchema.Name == "" || len(rf.JSONSchema.Schema) == 0 {
			return invalidParam("response_format.json_schema", "Missing required parameter: 'response_format.json_schema.name'.")
		}
		f.schema = rf.JSONSchema.Schema
	}
	if len(req.ToolChoice) > 0 {
		var mode string
		var named struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if json.Unmarshal(req.ToolChoice, &mode) != nil && json.Unmarshal(req.ToolChoice, &named) != nil {
			return invalidParam("tool_choice", "Invalid value for 'tool_choice'.")
		}
		for _, t := range req.Tools {
			if mode == "required" || (named.Function.Name != "" && t.Function.Name == named.Function.Name) {
				f.forceTool, f.toolSchema = t.Function.Name, t.Function.Parameters
				break
			}
		}
		if (mode == "required" || named.Function.Name != "") && f.forceTool == "" {
			return invalidParam("tool_choice", "Invalid value for 'tool_choice': no such tool.")
		}
	}
	f.thinking = req.ReasoningEffort != ""
	for i, m := range req.Messages {
		var parts []struct {
			Type     string `json:"type"`
			ImageURL *struct {
				URL string `json:"url"`
			} `json:"image_url"`
		}
		if json.Unmarshal(m.Content, &parts) != nil {
			continue
		}
		for j, p := range parts {
			if p.Type != "image_url" {
				continue
			}
			if p.ImageURL == nil {
				return invalidParam(fmt.Sprintf("messages[%d].content[%d].image_url", i, j), "Missing required parameter: 'image_url'.")
			}
			if err := checkImageURL(p.ImageURL.URL); err != nil {
				return invalidParam(fmt.Sprintf("messages[%d].content[%d].image_url.url", i, j), err.Error())
			}
		}
	}
	f.prefix = promptKey(nil, req.Messages)
	c.feat = f
	if err := checkOpenAIChat(req.Messages, req.Temperature, req.TopP, req.MaxTokens, req.MaxCompletionTokens); err != nil {
		return err
	}
	if c.deployment != "" {
		req.Model = c.deployment
	}
	if req.Model == "" {
		return errors.New("you must provide a model parameter")
	}
	if len(req.Messages) == 0 {
		return errors.New("'messages' must contain at least one message")
	}
	c.model, c.stream, c.includeUsage = req.Model, req.Stream, req.StreamOptions.IncludeUsage
	switch {
	case req.MaxCompletionTokens != nil:
		c.maxTokens = *req.MaxCompletionTokens
	case req.MaxTokens != nil:
		c.maxTokens = *req.MaxTokens
	}
	c.lastUser, c.promptTokens = prompt(c.s.countPrompt, nil, req.Messages)
	c.lastRole = req.Messages[len(req.Messages)-1].Role
	return nil
}

// checkOpenAIChat refuses what the Chat Completions API refuses: unknown roles, a tool message
// without tool_call_id, parameters out of range, each with the API's param and wording.
func checkOpenAIChat(msgs []message, temperature, topP *float64, maxTokens, maxCompletion *int) error {
	for i, m := range msgs {
		switch m.Role {
		case "system", "developer", "user", "assistant", "function":
		case "tool":
			if m.ToolCallID == "" {
				return invalidParam(fmt.Sprintf("messages[%d].tool_call_id", i), "Missing required parameter: 'tool_call_id'.")
			}
		default:
			return invalidParam(fmt.Sprintf("messages[%d].role", i),
				fmt.Sprintf("Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", m.Role))
		}
	}
	if temperature != nil && (*temperature < 0 || *temperature > 2) {
		return invalidParam("temperature", fmt.Sprintf("Invalid 'temperature': expected a value between 0 and 2, but got %g instead.", *temperature))
	}
	if topP != nil && (*topP < 0 || *topP > 1) {
		return invalidParam("top_p", fmt.Sprintf("Invalid 'top_p': expected a value between 0 and 1, but got %g instead.", *topP))
	}
	for name, v := range map[string]*int{"max_tokens": maxTokens, "max_completion_tokens": maxCompletion} {
		if v != nil && *v < 1 {
			return invalidParam(name, fmt.Sprintf("Invalid '%s': integer below minimum value. Expected a value >= 1, but got %d instead.", name, *v))
		}
	}
	return nil
}

// openAIChat sends a chat completion, as JSON or as a stream of chunks.
func (c *call) openAIChat(st Step) {
	text, cut := limitTokens(c.continued(replyText(st, c.s.reply, c.lastUser)), c.maxTokens)
	f := c.feat
	if f.schema != nil && st.Text == "" {
		text, cut = instanceJSON(f.schema), false
	}
	pieces, text := st.beforeRefusal(chunks(text))
	finish, completion := "stop", Tokens(text)+Tokens(st.Refuse)
	switch {
	case st.ContentFilter:
		finish = "content_filter"
	case cut && !st.refuses():
		finish = "length"
	}
	if st.ToolCall == nil && f.forceTool != "" {
		st.ToolCall = &ToolCall{Name: f.forceTool, Arguments: instanceJSON(f.toolSchema)}
	}
	if st.refuses() {
		st.ToolCall = nil // the model refused instead of calling
	}
	var calls []obj
	if tc := st.ToolCall; tc != nil {
		text, pieces, finish, completion = "", nil, "tool_calls", Tokens(tc.Name+toolArgs(tc))
		calls = []obj{{"id": toolID(tc, "call_", c.seq), "type": "function",
			"function": obj{"name": tc.Name, "arguments": toolArgs(tc)}}}
	}
	reasoning, cachedTokens := 0, 0
	if f.thinking {
		think, _ := thought(c.lastUser, c.seq)
		reasoning = Tokens(think)
		completion += reasoning
	}
	// OpenAI caches prompts of 1 024 tokens and more by itself, in steps of 128 tokens.
	if c.promptTokens >= 1024 && c.s.cached(f.prefix) {
		cachedTokens = c.promptTokens / 128 * 128
	}
	usage := obj{"prompt_tokens": c.promptTokens, "completion_tokens": completion,
		"total_tokens":              c.promptTokens + completion,
		"prompt_tokens_details":     obj{"cached_tokens": cachedTokens, "audio_tokens": 0},
		"completion_tokens_details": obj{"reasoning_tokens": reasoning, "audio_tokens": 0}}
	id, created := fmt.Sprintf("chatcmpl-fake%08d", c.seq), time.Now().Unix()
	if !c.stream {
		msg := obj{"role": "assistant", "content": text, "refusal": nil}
		if calls != nil {
			msg["content"], msg["tool_calls"] = nil, calls
		}
		if st.Refuse != "" {
			msg["refusal"] = st.Refuse
			if text == "" {
				msg["content"] = nil // a refusal has no content, as the API sends it
			}
		}
		choice := obj{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}
		c.sendJSON(st, obj{"id": id, "object": "chat.completion", "created": created, "model": c.model,
			"choices": []obj{choice}, "usage": usage, "system_fingerprint": "fp_fake", "service_tier": "default"})
		return
	}
	sw := c.startStream(st)
	chunk := func(delta obj, finish any) obj {
		ch := obj{"id": id, "object": "chat.completion.chunk", "created": created, "model": c.model,
			"system_fingerprint": "fp_fake",
			"choices":            []obj{{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}}
		if c.includeUsage {
			ch["usage"] = nil
		}
		return ch
	}
	first := obj{"role": "assistant", "content": "", "refusal": nil}
	if calls != nil {
		tc := st.ToolCall
		first = obj{"role": "assistant", "content": nil, "tool_calls": []obj{{"index": 0,
			"id": toolID(tc, "call_", c.seq), "type": "function", "function": obj{"name": tc.Name, "arguments": ""}}}}
	}
	if !sw.open("", chunk(first, nil)) {
		return
	}
	if calls != nil {
		for _, part := range argChunks(toolArgs(st.ToolCall)) {
			if !sw.delta("", chunk(obj{"tool_calls": []obj{{"index": 0, "function": obj{"arguments": part}}}}, nil)) {
				return
			}
		}
	}
	for _, part := range pieces {
		if !sw.delta("", chunk(obj{"content": part}, nil)) {
			return
		}
	}
	if st.Refuse != "" {
		for _, part := range chunks(st.Refuse) {
			if !sw.delta("", chunk(obj{"refusal": part}, nil)) {
				return
			}
		}
	}
	if !sw.send("", chunk(obj{}, finish)) {
		return
	}
	if c.includeUsage {
		last := obj{"id": id, "object": "chat.completion.chunk", "created": created, "model": c.model,
			"system_fingerprint": "fp_fake", "choices": []obj{}, "usage": usage}
		if !sw.send("", last) {
			return
		}
	}
	if !st.OmitTerminal {
		sw.send("", "[DONE]")
	}
}
