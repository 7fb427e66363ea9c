package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/config"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/resilience"
)

func TestFromConfig_BuildsProvidersAndFallsBackAcrossWireFormats(t *testing.T) {
	openaiDown := mocks.NewServer(mocks.WithScript(mocks.Status(503).Always()))
	defer openaiDown.Close()
	claude := mocks.NewServer(mocks.WithReply("Claude here."))
	defer claude.Close()
	t.Setenv("STEADY_TEST_OPENAI_KEY", sentinelKey)
	t.Setenv("STEADY_TEST_ANTHROPIC_KEY", sentinelKey)
	cfg, err := config.Parse([]byte(`{"LLM": {
		"Resilience": {"RetryCount": 1, "RetryBaseDelaySeconds": 0.001, "RetryUseJitter": false},
		"Providers": {
			"openai": {"Type": "openai", "BaseURL": "` + openaiDown.OpenAIBaseURL() + `", "APIKeyEnv": "STEADY_TEST_OPENAI_KEY", "Model": "gpt-4o-mini"},
			"claude": {"Type": "anthropic", "BaseURL": "` + claude.AnthropicBaseURL() + `", "APIKeyEnv": "STEADY_TEST_ANTHROPIC_KEY", "Model": "claude-haiku-4-5",
			           "Resilience": {"CircuitBreakerThreshold": 2}}
		},
		"Fallback": ["openai", "claude"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.FromConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Chat(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Provider != "claude" || resp.Message.Content != "Claude here." {
		t.Fatalf("response %+v", resp)
	}
	if openaiDown.Journal().Len() != 2 {
		t.Fatalf("openai saw %d attempts, want 2 (RetryCount 1)", openaiDown.Journal().Len())
	}
	last, _ := claude.Journal().Last()
	if !strings.Contains(string(last.Body), `"model":"claude-haiku-4-5"`) || last.Path != "/v1/messages" {
		t.Fatalf("anthropic got %s %s", last.Path, last.Body)
	}
	if got := c.Pipeline("claude").Options().CircuitBreakerThreshold; got != 2 {
		t.Fatalf("claude's threshold %d, want its own override 2", got)
	}
	if c.Pipeline("openai").CircuitState() != resilience.CircuitClosed {
		t.Fatal("unexpected circuit state")
	}
}

func TestFromConfig_Errors(t *testing.T) {
	cfg, err := config.Parse([]byte(`{"LLM": {"Providers": {
		"a": {"Type": "openai", "APIKeyEnv": "STEADY_TEST_UNSET_KEY_A"},
		"b": {"Type": "anthropic", "APIKeyEnv": "STEADY_TEST_UNSET_KEY_B"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.FromConfig(cfg); err == nil || !strings.Contains(err.Error(), "LLM.Fallback") {
		t.Fatalf("got %v, want a request for LLM.Fallback", err)
	}
	cfg.Fallback = []string{"a", "b"}
	_, err = client.FromConfig(cfg)
	if !errors.Is(err, config.ErrNoAPIKey) || !strings.Contains(err.Error(), "STEADY_TEST_UNSET_KEY_A") || !strings.Contains(err.Error(), "STEADY_TEST_UNSET_KEY_B") {
		t.Fatalf("got %v, want both missing variables named", err)
	}
}
