package mocks_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/steadyllm/steady/mocks"
)

const messagesBody = `{"model":"claude-haiku-4-5","max_tokens":256,"system":"Be brief.","messages":[{"role":"user","content":[{"type":"text","text":"Hello Claude"}]}]}`

func TestAnthropicMessages_JSON(t *testing.T) {
	s := newServer(t)
	res, b := mustDo(t, s, http.MethodPost, "/v1/messages", anthropicHeaders(), messagesBody)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", res.StatusCode, b)
	}
	v := decode(t, b)
	if path(v, "type") != "message" || path(v, "role") != "assistant" || path(v, "stop_reason") != "end_turn" {
		t.Errorf("message = %s", b)
	}
	if got := path(v, "content", 0, "text"); got != "Hello Claude" {
		t.Errorf("text = %v", got)
	}
	if got := path(v, "usage", "input_tokens"); got != float64(mocks.Tokens("Be brief.")+mocks.Tokens("Hello Claude")) {
		t.Errorf("input_tokens = %v", got)
	}
	if !strings.HasPrefix(res.Header.Get("Request-Id"), "req_") {
		t.Errorf("request-id = %q", res.Header.Get("Request-Id"))
	}
	for _, h := range []string{"Anthropic-Ratelimit-Requests-Remaining", "Anthropic-Ratelimit-Input-Tokens-Reset", "Anthropic-Ratelimit-Output-Tokens-Limit"} {
		if res.Header.Get(h) == "" {
			t.Errorf("header %s missing", h)
		}
	}
}

func TestAnthropicMessages_StreamEventSequence(t *testing.T) {
	s := newServer(t, mocks.WithReply("Hi there you"))
	body := strings.Replace(messagesBody, `"max_tokens":256`, `"max_tokens":256,"stream":true`, 1)
	_, evs, err := stream(t, s, "/v1/messages", anthropicHeaders(), body)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var text strings.Builder
	for _, e := range evs {
		names = append(names, e.name)
		if got := path(decode(t, []byte(e.data)), "type"); got != e.name {
			t.Errorf("event %s carries type %v", e.name, got)
		}
		if e.name == "content_block_delta" {
			text.WriteString(path(decode(t, []byte(e.data)), "delta", "text").(string))
		}
	}
	want := "message_start content_block_start ping content_block_delta content_block_delta content_block_delta content_block_stop message_delta message_stop"
	if strings.Join(names, " ") != want {
		t.Errorf("events:\n got %s\nwant %s", strings.Join(names, " "), want)
	}
	if text.String() != "Hi there you" {
		t.Errorf("text = %q", text.String())
	}
	delta := decode(t, []byte(evs[7].data))
	if path(delta, "delta", "stop_reason") != "end_turn" || path(delta, "usage", "output_tokens") != float64(mocks.Tokens("Hi there you")) {
		t.Errorf("message_delta = %s", evs[7].data)
	}
}

func TestAnthropicMessages_ToolUse(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.CallTool("lookup", `{"q":"go"}`)))
	_, b := mustDo(t, s, http.MethodPost, "/v1/messages", anthropicHeaders(), messagesBody)
	v := decode(t, b)
	if path(v, "stop_reason") != "tool_use" || path(v, "content", 0, "type") != "tool_use" || path(v, "content", 0, "input", "q") != "go" {
		t.Errorf("message = %s", b)
	}
}

func TestAnthropicMessages_MaxTokens(t *testing.T) {
	s := newServer(t, mocks.WithReply("abcdefghijkl"))
	body := strings.Replace(messagesBody, `"max_tokens":256`, `"max_tokens":1`, 1)
	_, b := mustDo(t, s, http.MethodPost, "/v1/messages", anthropicHeaders(), body)
	v := decode(t, b)
	if path(v, "stop_reason") != "max_tokens" || path(v, "content", 0, "text") != "abcd" {
		t.Errorf("message = %s", b)
	}
}

func TestAnthropic_AuthAndVersion(t *testing.T) {
	s := newServer(t, mocks.WithAPIKey("good"))
	cases := []struct {
		name    string
		hdr     map[string]string
		status  int
		errType string
	}{
		{"x-api-key", map[string]string{"X-Api-Key": "good", "Anthropic-Version": "2023-06-01"}, 200, ""},
		{"bearer", map[string]string{"Authorization": "Bearer good", "Anthropic-Version": "2023-06-01"}, 200, ""},
		{"no key", map[string]string{"Anthropic-Version": "2023-06-01"}, 401, "authentication_error"},
		{"wrong key", map[string]string{"X-Api-Key": "bad", "Anthropic-Version": "2023-06-01"}, 401, "authentication_error"},
		{"no version", map[string]string{"X-Api-Key": "good"}, 400, "invalid_request_error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, b := mustDo(t, s, http.MethodPost, "/v1/messages", tc.hdr, messagesBody)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d: %s", res.StatusCode, b)
			}
			if tc.errType == "" {
				return
			}
			v := decode(t, b)
			if path(v, "type") != "error" || path(v, "error", "type") != tc.errType || path(v, "request_id") != res.Header.Get("Request-Id") {
				t.Errorf("envelope = %s", b)
			}
		})
	}
}

func TestAnthropic_BodyValidation(t *testing.T) {
	s := newServer(t)
	for _, body := range []string{`{"model":"m","messages":[{"role":"user","content":"x"}]}`, `{"max_tokens":5,"messages":[]}`, `nope`} {
		res, b := mustDo(t, s, http.MethodPost, "/v1/messages", anthropicHeaders(), body)
		if res.StatusCode != 400 || path(decode(t, b), "error", "type") != "invalid_request_error" {
			t.Errorf("%s: %d %s", body, res.StatusCode, b)
		}
	}
}

func TestAnthropicModels(t *testing.T) {
	s := newServer(t, mocks.WithModels("claude-a"))
	_, b := mustDo(t, s, http.MethodGet, "/v1/models", anthropicHeaders(), "")
	v := decode(t, b)
	if path(v, "data", 0, "type") != "model" || path(v, "data", 0, "id") != "claude-a" || path(v, "has_more") != false {
		t.Errorf("models = %s", b)
	}
}
