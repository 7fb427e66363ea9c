package mocks_test

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/steadyllm/steady/mocks"
)

// chatFor is an OpenAI chat request for model whose prompt is 5 tokens ("one two three four"),
// with extra fields (such as `"max_tokens":8,`) before the messages.
func chatFor(model, extra string) string {
	return `{"model":"` + model + `",` + extra + `"messages":[{"role":"user","content":"one two three four"}]}`
}

func messagesFor(model string, maxTokens string) string {
	return `{"model":"` + model + `","max_tokens":` + maxTokens + `,"messages":[{"role":"user","content":"one two three four"}]}`
}

func TestContextWindows_OpenAIAnswersContextLengthExceeded(t *testing.T) {
	s := newServer(t, mocks.WithContextWindows(map[string]int{"small": 10, "tiny": 4}),
		mocks.WithScript(mocks.Reply("scripted").Always()))
	cases := []struct {
		body, msg string
	}{
		{chatFor("small", `"max_tokens":8,`), "This model's maximum context length is 10 tokens. However, you requested 13 tokens (5 in the messages, 8 in the completion). Please reduce the length of the messages or completion."},
		{chatFor("small", `"max_completion_tokens":6,`), "This model's maximum context length is 10 tokens. However, you requested 11 tokens (5 in the messages, 6 in the completion). Please reduce the length of the messages or completion."},
		{chatFor("tiny", ""), "This model's maximum context length is 4 tokens. However, your messages resulted in 5 tokens. Please reduce the length of the messages."},
	}
	for _, tc := range cases {
		res, b := mustDo(t, s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), tc.body)
		e := path(decode(t, b), "error")
		if res.StatusCode != 400 || path(e, "message") != tc.msg || path(e, "type") != "invalid_request_error" ||
			path(e, "code") != "context_length_exceeded" || path(e, "param") != "messages" {
			t.Errorf("%s: %d %s", tc.body, res.StatusCode, b)
		}
	}
	// Within the window, and for models without one, the script answers.
	for _, body := range []string{chatFor("small", `"max_tokens":5,`), chatFor("small", ""), chatFor("gpt-4o", `"max_tokens":100000,`)} {
		_, b := mustDo(t, s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), body)
		if got := path(decode(t, b), "choices", 0, "message", "content"); got != "scripted" {
			t.Errorf("%s: %s", body, b)
		}
	}
	if r := s.Journal().Requests(); r[0].Step != "400 context window" {
		t.Errorf("journal step %q", r[0].Step)
	}
}

func TestContextWindows_AzureByDeployment(t *testing.T) {
	s := newServer(t, mocks.WithContextWindows(map[string]int{"my-deployment": 10}))
	hdr := map[string]string{"Api-Key": "k", "Content-Type": "application/json"}
	res, b := mustDo(t, s, http.MethodPost, "/openai/deployments/my-deployment/chat/completions?api-version=2024-10-21", hdr,
		chatFor("ignored", `"max_tokens":8,`))
	if res.StatusCode != 400 || path(decode(t, b), "error", "code") != "context_length_exceeded" {
		t.Errorf("%d %s", res.StatusCode, b)
	}
	res, _ = mustDo(t, s, http.MethodPost, "/openai/deployments/other/chat/completions?api-version=2024-10-21", hdr,
		chatFor("my-deployment", `"max_tokens":8,`))
	if res.StatusCode != 200 {
		t.Errorf("another deployment: %d", res.StatusCode)
	}
}

func TestContextWindows_AnthropicPromptTooLongOrPromptPlusMaxTokens(t *testing.T) {
	s := newServer(t, mocks.WithContextWindows(map[string]int{"claude-small": 10, "claude-tiny": 4}))
	cases := map[string]string{
		messagesFor("claude-tiny", "1"):  "prompt is too long: 5 tokens > 4 maximum",
		messagesFor("claude-small", "8"): "input length and `max_tokens` exceed context limit: 5 + 8 > 10, decrease input length or `max_tokens` and try again",
	}
	for body, msg := range cases {
		res, b := mustDo(t, s, http.MethodPost, "/v1/messages", anthropicHeaders(), body)
		v := decode(t, b)
		if res.StatusCode != 400 || path(v, "type") != "error" || path(v, "error", "type") != "invalid_request_error" ||
			path(v, "error", "message") != msg {
			t.Errorf("%s: %d %s", body, res.StatusCode, b)
		}
	}
	if res, _ := mustDo(t, s, http.MethodPost, "/v1/messages", anthropicHeaders(), messagesFor("claude-small", "5")); res.StatusCode != 200 {
		t.Errorf("within the window: %d", res.StatusCode)
	}
}

const prefillChat = `{"model":"%s","messages":[{"role":"user","content":"Answer in JSON"},{"role":"assistant","content":"{"}]}`
const prefillMessages = `{"model":"%s","max_tokens":20,"messages":[{"role":"user","content":"Answer in JSON"},{"role":"assistant","content":"{"}]}`

func withModel(format, model string) string { return strings.Replace(format, "%s", model, 1) }

func TestRejectPrefill_TheListedModelsRefuseATrailingAssistantMessage(t *testing.T) {
	s := newServer(t, mocks.WithRejectPrefill("claude-new", "gpt-strict"))
	const msg = "This model does not support assistant message prefill. The conversation must end with a user message."
	res, b := mustDo(t, s, http.MethodPost, "/v1/messages", anthropicHeaders(), withModel(prefillMessages, "claude-new"))
	v := decode(t, b)
	if res.StatusCode != 400 || path(v, "type") != "error" || path(v, "error", "type") != "invalid_request_error" || path(v, "error", "message") != msg {
		t.Errorf("anthropic: %d %s", res.StatusCode, b)
	}
	res, b = mustDo(t, s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), withModel(prefillChat, "gpt-strict"))
	e := path(decode(t, b), "error")
	if res.StatusCode != 400 || path(e, "type") != "invalid_request_error" || path(e, "message") != msg || path(e, "param") != "messages" {
		t.Errorf("openai: %d %s", res.StatusCode, b)
	}
	// Other models take the prefill; a conversation ending with the user is fine for all.
	for _, tc := range []struct{ p, hdrKind, body string }{
		{"/v1/messages", "anthropic", withModel(prefillMessages, "claude-old")},
		{"/v1/chat/completions", "openai", withModel(prefillChat, "gpt-4o")},
		{"/v1/messages", "anthropic", messagesFor("claude-new", "20")},
	} {
		hdr := openAIHeaders()
		if tc.hdrKind == "anthropic" {
			hdr = anthropicHeaders()
		}
		if res, b := mustDo(t, s, http.MethodPost, tc.p, hdr, tc.body); res.StatusCode != 200 {
			t.Errorf("%s: %d %s", tc.body, res.StatusCode, b)
		}
	}
}

func TestRejectPrefill_WithoutModelsEveryModelRefuses(t *testing.T) {
	s := newServer(t, mocks.WithRejectPrefill())
	for _, m := range []string{"claude-a", "claude-b"} {
		if res, _ := mustDo(t, s, http.MethodPost, "/v1/messages", anthropicHeaders(), withModel(prefillMessages, m)); res.StatusCode != 400 {
			t.Errorf("%s: %d", m, res.StatusCode)
		}
	}
}

func TestModelScript_OneModelFailsWhileAnotherServes(t *testing.T) {
	s := newServer(t, mocks.WithModelScript("gpt-4o", mocks.Status(503).Times(2)),
		mocks.WithModelScript("claude-sonnet-4-5", mocks.Overloaded()))
	statusOf := func(p string, hdr map[string]string, body string) int {
		res, _ := mustDo(t, s, http.MethodPost, p, hdr, body)
		return res.StatusCode
	}
	got := []int{
		statusOf("/v1/chat/completions", openAIHeaders(), chatFor("gpt-4o-mini", "")),
		statusOf("/v1/chat/completions", openAIHeaders(), chatFor("gpt-4o", "")),
		statusOf("/v1/messages", anthropicHeaders(), messagesFor("claude-haiku-4-5", "9")),
		statusOf("/v1/messages", anthropicHeaders(), messagesFor("claude-sonnet-4-5", "9")),
		statusOf("/openai/deployments/gpt-4o/chat/completions?api-version=1", map[string]string{"Api-Key": "k"}, chatFor("x", "")),
		statusOf("/v1/chat/completions", openAIHeaders(), chatFor("gpt-4o", "")), // spent
		statusOf("/v1/messages", anthropicHeaders(), messagesFor("claude-sonnet-4-5", "9")),
	}
	if want := []int{200, 503, 200, 529, 503, 200, 200}; !reflect.DeepEqual(got, want) {
		t.Errorf("statuses %v, want %v", got, want)
	}
	if r := s.Journal().Requests(); r[1].Scenario != "model gpt-4o" {
		t.Errorf("journal scenario %q", r[1].Scenario)
	}
}

func TestModelScript_PrecedenceHeaderThenModelThenRouteThenDefault(t *testing.T) {
	s := newServer(t,
		mocks.WithScript(mocks.Status(500).Always()),
		mocks.WithRouteScript(mocks.RouteChat, mocks.Status(502).Times(2)),
		mocks.WithModelScript("gpt-4o", mocks.Status(503)),
		mocks.WithScenario("teapot", mocks.Status(418)),
	)
	statusOf := func(scenario string) int {
		hdr := openAIHeaders()
		if scenario != "" {
			hdr[mocks.ScenarioHeader] = scenario
		}
		res, _ := mustDo(t, s, http.MethodPost, "/v1/chat/completions", hdr, chatFor("gpt-4o", ""))
		return res.StatusCode
	}
	// The header wins and consumes only its scenario; then the model's script, then the
	// route's, then the default script.
	got := []int{statusOf("teapot"), statusOf(""), statusOf(""), statusOf(""), statusOf("")}
	if want := []int{418, 503, 502, 502, 500}; !reflect.DeepEqual(got, want) {
		t.Errorf("statuses %v, want %v", got, want)
	}
	s.ModelScript("gpt-4o", mocks.Status(504))
	if got := statusOf(""); got != 504 {
		t.Errorf("after ModelScript: %d", got)
	}
	s.ModelScript("gpt-4o") // removed
	if got := statusOf(""); got != 500 {
		t.Errorf("after removing the model's script: %d", got)
	}
}
