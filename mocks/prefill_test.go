package mocks_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/steadyllm/steady/mocks"
)

// A prefill is continued: the Messages API continues any final assistant message, the Chat
// Completions side one marked "prefix": true or sent with continue_final_message; the answer is
// what follows the prefill, never the prefill again. A final assistant message that is not
// marked is answered as a finished turn, as OpenAI does.
func TestPrefill_TheAnswerContinuesAfterIt(t *testing.T) {
	s := newServer(t, mocks.WithReply("one two three four"))
	const user = `{"role":"user","content":"Count"}`
	for _, c := range []struct{ name, path, body, want string }{
		{"anthropic", "/v1/messages",
			`{"model":"claude-haiku-4-5","max_tokens":50,"messages":[` + user + `,{"role":"assistant","content":"one two"}]}`, " three four"},
		{"anthropic blocks", "/v1/messages",
			`{"model":"claude-haiku-4-5","max_tokens":50,"messages":[` + user + `,{"role":"assistant","content":[{"type":"text","text":"one two"}]}]}`, " three four"},
		{"prefix", "/v1/chat/completions",
			`{"model":"deepseek-chat","messages":[` + user + `,{"role":"assistant","content":"one two","prefix":true}]}`, " three four"},
		{"continue_final_message", "/v1/chat/completions",
			`{"model":"qwen","continue_final_message":true,"add_generation_prompt":false,"messages":[` + user + `,{"role":"assistant","content":"one two"}]}`, " three four"},
		{"not marked", "/v1/chat/completions",
			`{"model":"gpt-4o","messages":[` + user + `,{"role":"assistant","content":"one two"}]}`, "one two three four"},
		{"another beginning", "/v1/messages",
			`{"model":"claude-haiku-4-5","max_tokens":50,"messages":[` + user + `,{"role":"assistant","content":"zero"}]}`, "one two three four"},
	} {
		hdr := openAIHeaders()
		if strings.HasPrefix(c.path, "/v1/messages") {
			hdr = anthropicHeaders()
		}
		if got := answer(t, s, c.path, hdr, c.body); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// What the APIs refuse of a prefill, the fake refuses: Anthropic's trailing whitespace and a
// prefill with extended thinking; vLLM's continue_final_message with add_generation_prompt
// left true (its default).
func TestPrefill_RefusedAsTheAPIsRefuseIt(t *testing.T) {
	s := newServer(t)
	const user = `{"role":"user","content":"Count"}`
	for _, c := range []struct{ name, path, body, msg string }{
		{"trailing whitespace", "/v1/messages",
			`{"model":"claude-haiku-4-5","max_tokens":50,"messages":[` + user + `,{"role":"assistant","content":"one two "}]}`,
			"final assistant content cannot end with trailing whitespace"},
		{"thinking", "/v1/messages",
			`{"model":"claude-haiku-4-5","max_tokens":4000,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[` + user + `,{"role":"assistant","content":"one"}]}`,
			"extended thinking"},
		{"add_generation_prompt", "/v1/chat/completions",
			`{"model":"qwen","continue_final_message":true,"messages":[` + user + `,{"role":"assistant","content":"one"}]}`,
			"cannot both be true"},
	} {
		hdr := openAIHeaders()
		if strings.HasPrefix(c.path, "/v1/messages") {
			hdr = anthropicHeaders()
		}
		res, b := mustDo(t, s, http.MethodPost, c.path, hdr, c.body)
		if res.StatusCode != 400 || !strings.Contains(string(b), c.msg) {
			t.Errorf("%s: %d %s", c.name, res.StatusCode, b)
		}
	}
}
