package mocks_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/steadyllm/steady/mocks"
)

func postJSON(t *testing.T, url string, header map[string]string, body string) (*http.Response, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	_ = json.Unmarshal(buf.Bytes(), &out)
	return resp, out
}

var (
	chatHeaders = map[string]string{"Authorization": "Bearer k", "Content-Type": "application/json"}
	msgHeaders  = map[string]string{"X-Api-Key": "k", "Anthropic-Version": "2023-06-01", "Content-Type": "application/json"}
)

const (
	openaiChat    = `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`
	anthropicChat = `{"model":"claude","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
)

// One server can take the Anthropic side down while the OpenAI side serves.
func TestRoutes_OneRouteFailsTheOthersServe(t *testing.T) {
	s := mocks.NewServer(mocks.WithRouteScript(mocks.RouteMessages, mocks.Overloaded().Always()))
	defer s.Close()
	for i := 0; i < 3; i++ {
		if resp, _ := postJSON(t, s.AnthropicBaseURL()+"/v1/messages", msgHeaders, anthropicChat); resp.StatusCode != 529 {
			t.Fatalf("messages: %d, want 529", resp.StatusCode)
		}
		if resp, _ := postJSON(t, s.OpenAIBaseURL()+"/chat/completions", chatHeaders, openaiChat); resp.StatusCode != 200 {
			t.Fatalf("chat: %d, want 200", resp.StatusCode)
		}
	}
	s.RouteScript(mocks.RouteChat, mocks.Status(503))
	if resp, _ := postJSON(t, s.OpenAIBaseURL()+"/chat/completions", chatHeaders, openaiChat); resp.StatusCode != 503 {
		t.Fatalf("chat after RouteScript: %d", resp.StatusCode)
	}
	if resp, _ := postJSON(t, s.OpenAIBaseURL()+"/chat/completions", chatHeaders, openaiChat); resp.StatusCode != 200 {
		t.Fatalf("chat once the route's script is spent: %d", resp.StatusCode)
	}
	cfg, err := mocks.ParseConfig([]byte(`{"routes":{"/v1/embeddings":[{"status":502}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mocks.ParseConfig([]byte(`{"routes":{"/v2/nope":[]}}`)); err == nil {
		t.Fatal("an unknown route was accepted")
	}
	f := mocks.NewServer(mocks.WithConfig(cfg))
	defer f.Close()
	if resp, _ := postJSON(t, f.OpenAIBaseURL()+"/embeddings", chatHeaders, `{"model":"e","input":"a"}`); resp.StatusCode != 502 {
		t.Fatalf("embeddings from the file's route: %d", resp.StatusCode)
	}
}

// The fake refuses what the real APIs refuse, with a 400 in each API's own shape.
func TestValidation_RefusesLikeTheRealAPIs(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	for body, param := range map[string]string{
		`{"model":"m","messages":[{"role":"wizard","content":"hi"}]}`:                          "messages[0].role",
		`{"model":"m","messages":[{"role":"tool","content":"42"}]}`:                            "messages[0].tool_call_id",
		`{"model":"m","temperature":3,"messages":[{"role":"user","content":"hi"}]}`:            "temperature",
		`{"model":"m","top_p":1.5,"messages":[{"role":"user","content":"hi"}]}`:                "top_p",
		`{"model":"m","max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`:             "max_tokens",
		`{"model":"m","max_completion_tokens":-1,"messages":[{"role":"user","content":"hi"}]}`: "max_completion_tokens",
	} {
		resp, out := postJSON(t, s.OpenAIBaseURL()+"/chat/completions", chatHeaders, body)
		e, _ := out["error"].(map[string]any)
		if resp.StatusCode != 400 || e == nil || e["param"] != param || e["type"] != "invalid_request_error" {
			t.Fatalf("%s: %d %v, want a 400 envelope naming %s", body, resp.StatusCode, out, param)
		}
	}
	for body, want := range map[string]string{
		`{"model":"c","max_tokens":10,"messages":[{"role":"system","content":"hi"}]}`:                 "messages.0.role",
		`{"model":"c","max_tokens":10,"temperature":1.5,"messages":[{"role":"user","content":"hi"}]}`: "temperature",
		`{"model":"c","messages":[{"role":"user","content":"hi"}]}`:                                   "max_tokens",
	} {
		resp, out := postJSON(t, s.AnthropicBaseURL()+"/v1/messages", msgHeaders, body)
		e, _ := out["error"].(map[string]any)
		if resp.StatusCode != 400 || out["type"] != "error" || e == nil || e["type"] != "invalid_request_error" ||
			!strings.Contains(e["message"].(string), want) {
			t.Fatalf("%s: %d %v, want an Anthropic 400 about %s", body, resp.StatusCode, out, want)
		}
	}
}
