package steady_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/steadyllm/steady"
	"github.com/steadyllm/steady/config"
	"github.com/steadyllm/steady/mocks"
)

// captureLog sends slog.Default to a buffer for the test.
func captureLog(t *testing.T) *bytes.Buffer {
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	return &buf
}

// LLM.VerifyAtStart checks every route with one request of one token before FromConfig
// returns: a fallback whose model its server does not have fails the start, naming the
// provider, the model and the server's reason, never the key; set from the environment too.
// A route it cannot reach is logged and the client returned; without the key nothing is sent.
func TestFromConfig_VerifyAtStartNamesAMisconfiguredRoute(t *testing.T) {
	gpt := mocks.NewServer()
	defer gpt.Close()
	claude := mocks.NewServer(mocks.WithModelScript("gpt-4o",
		mocks.Error(404, "not_found_error", "model: gpt-4o").Always()))
	defer claude.Close()
	doc := func(claudeModel string) []byte {
		return []byte(`{"LLM": {"Providers": {
			"openai": {"Dialect": "openai", "BaseURL": "` + gpt.OpenAIBaseURL() + `", "APIKeyEnv": "KEY", "Model": "gpt-4o-mini"},
			"claude": {"Dialect": "anthropic", "BaseURL": "` + claude.AnthropicBaseURL() + `", "APIKeyEnv": "KEY", "Model": "` + claudeModel + `"}},
			"Fallback": ["openai", "claude"]}}`)
	}
	env := []string{"KEY=" + sentinelKey}
	cfg, err := config.ParseWithEnv(doc("gpt-4o"), append(env, "LLM__VerifyAtStart=true"))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.VerifyAtStart {
		t.Fatal("LLM__VerifyAtStart=true did not set VerifyAtStart")
	}
	c, err := steady.FromConfig(cfg)
	if err == nil {
		_ = c.Close()
		t.Fatal("a fallback with a model its server does not have started")
	}
	msg := err.Error()
	for _, want := range []string{"LLM.VerifyAtStart", "claude for model gpt-4o", "not_found", "model: gpt-4o"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, sentinelKey) || strings.Contains(msg, "openai for") {
		t.Errorf("error %q shows the key or names the route that serves", msg)
	}
	sent := gpt.Journal().Len() + claude.Journal().Len()
	if sent != 2 {
		t.Errorf("%d requests for two routes, want one each", sent)
	}
	if last, _ := gpt.Journal().Last(); !strings.Contains(string(last.Body), `"max_completion_tokens":1`) {
		t.Errorf("the check sent %s, want a request of one token", last.Body)
	}

	// Right, it starts; a route it cannot reach is logged, not fatal.
	log := captureLog(t)
	cfg, err = config.ParseWithEnv(bytes.Replace(doc("claude-haiku-4-5"), []byte(claude.AnthropicBaseURL()),
		[]byte("http://127.0.0.1:1"), 1), append(env, "LLM__VerifyAtStart=true"))
	if err != nil {
		t.Fatal(err)
	}
	c, err = steady.FromConfig(cfg)
	if err != nil {
		t.Fatalf("a route it could not reach failed the start: %v", err)
	}
	_ = c.Close()
	if !strings.Contains(log.String(), "could not verify claude for model claude-haiku-4-5") {
		t.Errorf("the log %q does not name the route it could not check", log)
	}

	// Off (the default), nothing is sent at start.
	before := gpt.Journal().Len()
	cfg, err = config.ParseWithEnv(doc("gpt-4o"), env)
	if err != nil {
		t.Fatal(err)
	}
	if c, err = steady.FromConfig(cfg); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	if gpt.Journal().Len() != before {
		t.Error("a request was sent at start without LLM.VerifyAtStart")
	}
}

// A provider on its vendor's own host configured with another vendor's model is logged at
// start, naming both; nothing is sent.
func TestFromConfig_LogsAModelOfAnotherVendor(t *testing.T) {
	log := captureLog(t)
	cfg, err := config.ParseWithEnv([]byte(`{"LLM": {"Providers": {
		"claude": {"Dialect": "anthropic", "APIKeyEnv": "KEY", "Model": "gpt-4o"}}}}`), []string{"KEY=" + sentinelKey})
	if err != nil {
		t.Fatal(err)
	}
	c, err := steady.FromConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	if out := log.String(); !strings.Contains(out, `level=WARN`) || !strings.Contains(out, `\"claude\"`) ||
		!strings.Contains(out, `\"gpt-4o\"`) || strings.Contains(out, sentinelKey) {
		t.Fatalf("the log %q, want a warning naming the provider and the model", out)
	}
}
