package mocks_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/steadyllm/steady/mocks"
)

const chatBody = `{"model":"gpt-4o-mini","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Say hello to the fake server"}]}`

func TestOpenAIChat_EchoesLastUserMessageWithUsage(t *testing.T) {
	s := newServer(t)
	res, b := mustDo(t, s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), chatBody)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", res.StatusCode, b)
	}
	v := decode(t, b)
	if got := path(v, "choices", 0, "message", "content"); got != "Say hello to the fake server" {
		t.Errorf("content = %v", got)
	}
	if got := path(v, "choices", 0, "finish_reason"); got != "stop" {
		t.Errorf("finish_reason = %v", got)
	}
	wantPrompt := mocks.Tokens("Be brief.") + mocks.Tokens("Say hello to the fake server")
	wantCompletion := mocks.Tokens("Say hello to the fake server")
	if got := path(v, "usage", "prompt_tokens"); got != float64(wantPrompt) {
		t.Errorf("prompt_tokens = %v, want %d", got, wantPrompt)
	}
	if got := path(v, "usage", "total_tokens"); got != float64(wantPrompt+wantCompletion) {
		t.Errorf("total_tokens = %v", got)
	}
	if path(v, "object") != "chat.completion" || path(v, "model") != "gpt-4o-mini" {
		t.Errorf("object/model = %v/%v", path(v, "object"), path(v, "model"))
	}
	for _, h := range []string{"X-Request-Id", "X-Ratelimit-Limit-Requests", "X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Requests"} {
		if res.Header.Get(h) == "" {
			t.Errorf("header %s missing", h)
		}
	}
}

func TestOpenAIChat_ScriptedTextAndMaxTokens(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.Reply("one two three four five six")))
	body := `{"model":"m","max_completion_tokens":2,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`
	_, b := mustDo(t, s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), body)
	v := decode(t, b)
	if got := path(v, "choices", 0, "message", "content"); got != "one two " {
		t.Errorf("content = %q", got)
	}
	if got := path(v, "choices", 0, "finish_reason"); got != "length" {
		t.Errorf("finish_reason = %v", got)
	}
}

func TestOpenAIChat_StreamWithUsageChunk(t *testing.T) {
	s := newServer(t, mocks.WithReply("Hello streaming world"))
	body := `{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`
	res, evs, err := stream(t, s, "/v1/chat/completions", openAIHeaders(), body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content type %q", ct)
	}
	// role, 3 words, finish, usage, [DONE]
	if len(evs) != 7 {
		t.Fatalf("got %d events: %v", len(evs), evs)
	}
	var text strings.Builder
	for _, e := range evs[1:4] {
		text.WriteString(path(decode(t, []byte(e.data)), "choices", 0, "delta", "content").(string))
	}
	if text.String() != "Hello streaming world" {
		t.Errorf("text = %q", text.String())
	}
	if got := path(decode(t, []byte(evs[0].data)), "choices", 0, "delta", "role"); got != "assistant" {
		t.Errorf("first delta role = %v", got)
	}
	if got := path(decode(t, []byte(evs[4].data)), "choices", 0, "finish_reason"); got != "stop" {
		t.Errorf("finish_reason = %v", got)
	}
	usage := decode(t, []byte(evs[5].data))
	if n := len(path(usage, "choices").([]any)); n != 0 {
		t.Errorf("usage chunk has %d choices", n)
	}
	if got := path(usage, "usage", "completion_tokens"); got != float64(mocks.Tokens("Hello streaming world")) {
		t.Errorf("completion_tokens = %v", got)
	}
	if evs[6].data != "[DONE]" {
		t.Errorf("last event %q", evs[6].data)
	}
}

func TestOpenAIChat_StreamWithoutUsageOption(t *testing.T) {
	s := newServer(t, mocks.WithReply("a b"))
	_, evs, err := stream(t, s, "/v1/chat/completions", openAIHeaders(),
		`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 5 || evs[4].data != "[DONE]" { // role, a, " b", finish, [DONE]
		t.Fatalf("events: %v", evs)
	}
	if strings.Contains(evs[3].data, `"usage"`) {
		t.Errorf("usage sent without include_usage: %s", evs[3].data)
	}
}

func TestOpenAIChat_ToolCall(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.CallTool("get_weather", `{"city":"Paris"}`).Times(2)))
	_, b := mustDo(t, s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), chatBody)
	v := decode(t, b)
	if got := path(v, "choices", 0, "finish_reason"); got != "tool_calls" {
		t.Errorf("finish_reason = %v", got)
	}
	if got := path(v, "choices", 0, "message", "tool_calls", 0, "function", "arguments"); got != `{"city":"Paris"}` {
		t.Errorf("arguments = %v", got)
	}
	_, evs, err := stream(t, s, "/v1/chat/completions", openAIHeaders(),
		`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	var args strings.Builder
	for _, e := range evs[:len(evs)-1] {
		if a, ok := path(decode(t, []byte(e.data)), "choices", 0, "delta", "tool_calls", 0, "function", "arguments").(string); ok {
			args.WriteString(a)
		}
	}
	if args.String() != `{"city":"Paris"}` {
		t.Errorf("streamed arguments = %q", args.String())
	}
}

func TestOpenAIEmbeddings_FloatAndBase64(t *testing.T) {
	s := newServer(t)
	_, b := mustDo(t, s, http.MethodPost, "/v1/embeddings", openAIHeaders(),
		`{"model":"text-embedding-3-small","input":["a","b"],"dimensions":4}`)
	v := decode(t, b)
	if n := len(path(v, "data").([]any)); n != 2 {
		t.Fatalf("data has %d items", n)
	}
	vec := path(v, "data", 1, "embedding").([]any)
	if len(vec) != 4 {
		t.Fatalf("dims = %d", len(vec))
	}
	_, b2 := mustDo(t, s, http.MethodPost, "/v1/embeddings", openAIHeaders(),
		`{"model":"text-embedding-3-small","input":"b","dimensions":4,"encoding_format":"base64"}`)
	raw, err := base64.StdEncoding.DecodeString(path(decode(t, b2), "data", 0, "embedding").(string))
	if err != nil || len(raw) != 16 {
		t.Fatalf("base64 embedding: %d bytes, %v", len(raw), err)
	}
	_, b3 := mustDo(t, s, http.MethodPost, "/v1/embeddings", openAIHeaders(),
		`{"model":"text-embedding-3-small","input":"b","dimensions":4}`)
	if a, c := path(decode(t, b3), "data", 0, "embedding"), vec; !equalJSON(a, c) {
		t.Errorf("embedding of the same input differs: %v vs %v", a, c)
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func TestOpenAIModels(t *testing.T) {
	s := newServer(t, mocks.WithModels("m1", "m2"))
	_, b := mustDo(t, s, http.MethodGet, "/v1/models", openAIHeaders(), "")
	v := decode(t, b)
	if path(v, "object") != "list" || path(v, "data", 1, "id") != "m2" || path(v, "data", 0, "object") != "model" {
		t.Errorf("models = %s", b)
	}
}

func TestAzure_DeploymentPathWithAPIKey(t *testing.T) {
	s := newServer(t, mocks.WithAPIKey("azure-key"))
	hdr := map[string]string{"Api-Key": "azure-key", "Content-Type": "application/json"}
	res, b := mustDo(t, s, http.MethodPost, "/openai/deployments/my-gpt/chat/completions?api-version=2024-10-21", hdr, chatBody)
	if res.StatusCode != http.StatusOK || path(decode(t, b), "model") != "my-gpt" {
		t.Fatalf("status %d: %s", res.StatusCode, b)
	}
	res, b = mustDo(t, s, http.MethodPost, "/openai/deployments/emb/embeddings?api-version=2024-10-21", hdr, `{"input":"x"}`)
	if res.StatusCode != http.StatusOK || path(decode(t, b), "model") != "emb" {
		t.Fatalf("embeddings status %d: %s", res.StatusCode, b)
	}
	res, b = mustDo(t, s, http.MethodPost, "/openai/deployments/my-gpt/chat/completions", hdr, chatBody)
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "api-version") {
		t.Errorf("without api-version: %d %s", res.StatusCode, b)
	}
	res, _ = mustDo(t, s, http.MethodPost, "/openai/deployments/my-gpt/chat/completions?api-version=1",
		map[string]string{"Api-Key": "wrong"}, chatBody)
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong key: %d", res.StatusCode)
	}
}

func TestOpenAI_RejectsBeforeChoosingAStep(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.Status(503)))
	cases := []struct {
		name, method, path string
		hdr                map[string]string
		body               string
		status             int
		errType, code      any
	}{
		{"no key", "POST", "/v1/chat/completions", map[string]string{}, chatBody, 401, "invalid_request_error", "invalid_api_key"},
		{"bad json", "POST", "/v1/chat/completions", openAIHeaders(), `{"model":`, 400, "invalid_request_error", nil},
		{"no messages", "POST", "/v1/chat/completions", openAIHeaders(), `{"model":"m","messages":[]}`, 400, "invalid_request_error", nil},
		{"unknown path", "POST", "/v1/completions/nope", openAIHeaders(), chatBody, 404, "invalid_request_error", nil},
		{"wrong method", "GET", "/v1/chat/completions", openAIHeaders(), "", 405, "invalid_request_error", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, b := mustDo(t, s, tc.method, tc.path, tc.hdr, tc.body)
			v := decode(t, b)
			if res.StatusCode != tc.status || path(v, "error", "type") != tc.errType || path(v, "error", "code") != tc.code {
				t.Errorf("got %d %s", res.StatusCode, b)
			}
			if _, ok := path(v, "error").(map[string]any)["param"]; !ok {
				t.Errorf("envelope lacks param: %s", b)
			}
		})
	}
	// The scripted 503 is still there for the first valid call.
	if res, _ := mustDo(t, s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), chatBody); res.StatusCode != 503 {
		t.Errorf("first valid call: %d, want the scripted 503", res.StatusCode)
	}
}
