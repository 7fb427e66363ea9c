package steady_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	steady "github.com/steadyllm/steady"
	"github.com/steadyllm/steady/config"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
)

// What FromConfig makes of the chain's settings beyond LLM.Fallback: the context windows the
// providers declare and the per-kind chains of LLM.FallbackOn.

// A provider's ContextWindow reaches the client under the provider's name, for a provider made
// of deployments under the name they form: a prompt too long for the first provider (which
// declares no window) goes to the one that declares a larger window, past one that declares
// none; when every provider declares a window and the call exceeds them all, nothing is sent.
func TestFromConfig_APromptTooLongGoesToTheLargerDeclaredWindow(t *testing.T) {
	small := mocks.NewServer(mocks.WithContextWindows(map[string]int{"gpt-4o-mini": 100}))
	defer small.Close()
	middle := mocks.NewServer(mocks.WithReply("middle"))
	defer middle.Close()
	large := mocks.NewServer(mocks.WithReply("the large window answers"))
	defer large.Close()
	doc := func(smallWindow string) string {
		return `{"LLM": {
		"Resilience": {"RetryCount": 0},
		"Providers": {
			"small": {"Dialect": "openai", "BaseURL": "` + small.OpenAIBaseURL() + `", "APIKeyEnv": "K", "Model": "gpt-4o-mini"` + smallWindow + `},
			"middle": {"Dialect": "openai", "BaseURL": "` + middle.OpenAIBaseURL() + `", "APIKeyEnv": "K", "Model": "gpt-4o-mini"},
			"large-east": {"Dialect": "openai", "BaseURL": "` + large.OpenAIBaseURL() + `", "APIKeyEnv": "K", "Model": "gpt-4.1",
			               "DeploymentOf": "large", "ContextWindow": 8000, "ContextWindows": {"gpt-4.1": 200000}},
			"large-west": {"Dialect": "openai", "BaseURL": "` + large.OpenAIBaseURL() + `", "APIKeyEnv": "K", "Model": "gpt-4.1",
			               "DeploymentOf": "large", "ContextWindow": 8000, "ContextWindows": {"gpt-4.1": 200000}}
		},
		"Fallback": ["small", "middle", "large"]}}`
	}
	long := &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: strings.Repeat("word ", 400)}}}

	c := clientFromJSON(t, doc(""), []string{"K=" + sentinelKey})
	resp, err := c.Chat(context.Background(), long)
	if err != nil || resp.Provider != "large" || resp.Message.Content != "the large window answers" {
		t.Fatalf("%+v %v", resp, err)
	}
	if small.Journal().Len() != 1 || middle.Journal().Len() != 0 {
		t.Fatalf("small asked %d times, middle %d; want 1 and 0", small.Journal().Len(), middle.Journal().Len())
	}

	// Every provider but middle declares a window; without middle in the chain, a call larger
	// than them all is refused before anything is sent.
	c = clientFromJSON(t, strings.Replace(doc(`, "ContextWindow": 100`), `"Fallback": ["small", "middle", "large"]`,
		`"Fallback": ["small", "large"]`, 1), []string{"K=" + sentinelKey})
	huge := &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: strings.Repeat("word ", 200_000)}}}
	before := small.Journal().Len() + large.Journal().Len()
	_, err = c.Chat(context.Background(), huge)
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Kind != providers.KindContextTooLong || pe.Overflow == nil || pe.Overflow.Window != 200000 {
		t.Fatalf("a call no provider can hold: %v, want context_too_long past the largest window, 200000 (gpt-4.1's)", err)
	}
	if n := small.Journal().Len() + large.Journal().Len(); n != before {
		t.Fatalf("%d requests sent for a call no provider can hold", n-before)
	}
	// A prompt that only the larger window holds skips small without asking it.
	if resp, err := c.Chat(context.Background(), long); err != nil || resp.Provider != "large" || small.Journal().Len() != 1 {
		t.Fatalf("%+v %v; small asked %d times", resp, err, small.Journal().Len())
	}
}

// A Config built by hand is not checked by config.Load: deployments of one provider that
// declare different context windows are an error of FromConfig, which names them.
func TestFromConfig_DeploymentsWithDifferentWindowsAreRefused(t *testing.T) {
	t.Setenv("STEADY_TEST_WINDOW_KEY", sentinelKey)
	entry := func(name string, window int, byModel map[string]int) config.Provider {
		return config.Provider{Name: name, Dialect: config.DialectOpenAI, APIKeyEnv: "STEADY_TEST_WINDOW_KEY",
			DeploymentOf: "pool", ContextWindow: window, ContextWindows: byModel}
	}
	for _, tt := range []struct {
		a, b config.Provider
		ok   bool
	}{
		{entry("a", 128000, nil), entry("b", 128000, nil), true},
		{entry("a", 0, map[string]int{"gpt-4o": 0}), entry("b", 0, nil), true}, // none either way
		{entry("a", 128000, nil), entry("b", 200000, nil), false},
		{entry("a", 128000, map[string]int{"o3": 200000}), entry("b", 128000, nil), false},
	} {
		c, err := steady.FromConfig(&config.Config{Providers: map[string]config.Provider{"a": tt.a, "b": tt.b}})
		if tt.ok {
			if err != nil {
				t.Errorf("%+v / %+v: %v", tt.a, tt.b, err)
				continue
			}
			c.CloseIdleConnections()
			continue
		}
		if err == nil || !strings.Contains(err.Error(), `provider "pool": its deployments "a" and "b" declare different context windows`) {
			t.Errorf("%+v / %+v: got %v", tt.a, tt.b, err)
		}
	}
}

// LLM.FallbackOn reaches the client: a call that fails with a kind it names goes to the
// providers listed for that kind (here a provider made of deployments, named in another case),
// past the rest of LLM.Fallback; an empty list, set from the environment, stops the chain on a
// kind that would fall back; a kind it does not name follows LLM.Fallback.
func TestFromConfig_FallbackOnFollowsTheKindsChain(t *testing.T) {
	primary := mocks.NewServer(mocks.WithScript(mocks.Refusal("I can't help with that."), mocks.Status(500), mocks.QuotaExceeded()))
	defer primary.Close()
	second := mocks.NewServer(mocks.WithReply("second"))
	defer second.Close()
	third := mocks.NewServer(mocks.WithReply("third"))
	defer third.Close()
	c := clientFromJSON(t, `{"LLM": {
		"Resilience": {"RetryCount": 0},
		"Providers": {
			"primary": {"Dialect": "openai", "BaseURL": "`+primary.OpenAIBaseURL()+`", "APIKeyEnv": "K", "Model": "gpt-4o-mini"},
			"second": {"Dialect": "openai", "BaseURL": "`+second.OpenAIBaseURL()+`", "APIKeyEnv": "K", "Model": "gpt-4o-mini"},
			"third-a": {"Dialect": "openai", "BaseURL": "`+third.OpenAIBaseURL()+`", "APIKeyEnv": "K", "Model": "gpt-4o-mini",
			            "DeploymentOf": "third"}
		},
		"Fallback": ["primary", "second", "third"],
		"FallbackOn": {"Refused": ["THIRD"]}}}`, []string{"K=" + sentinelKey, `LLM__FallbackOn={"unavailable": []}`})
	ctx := context.Background()

	resp, err := c.Chat(ctx, hello())
	if err != nil || resp.Provider != "third" || second.Journal().Len() != 0 {
		t.Fatalf("refused: %+v %v; second asked %d times, want third to answer and second never asked", resp, err, second.Journal().Len())
	}
	_, err = c.Chat(ctx, hello())
	if providers.KindOf(err) != providers.KindUnavailable || second.Journal().Len() != 0 || third.Journal().Len() != 1 {
		t.Fatalf("unavailable: %v; second asked %d times, third %d; want the chain stopped", err, second.Journal().Len(), third.Journal().Len())
	}
	if resp, err := c.Chat(ctx, hello()); err != nil || resp.Provider != "second" {
		t.Fatalf("quota_exhausted: %+v %v, want LLM.Fallback followed to second", resp, err)
	}
}
