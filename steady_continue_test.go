package steady_test

import (
	"context"
	"strings"
	"testing"

	"github.com/steadyllm/steady/config"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
)

// What FromConfig makes of the keys that say how a provider continues a cut answer: an
// openai-compatible server's Prefill flavour reaches its provider, and a provider's
// Continuation reaches the client. With the default rescue ("continue"), a stream cut after
// content goes past the server that declares no prefill and the Claude model declared
// "none", and the server that declares "prefix" answers the rest.
func TestFromConfig_PrefillAndContinuationDecideWhoContinues(t *testing.T) {
	answer := "one two three four five six seven eight"
	cut := mocks.Reply(answer)
	cut.Cut, cut.CutAfter, cut.CountContent = mocks.CutAbort, 4, true
	primary := mocks.NewServer(mocks.WithScript(cut.Always()))
	defer primary.Close()
	plain := mocks.NewServer(mocks.WithReply(answer))
	defer plain.Close()
	claude := mocks.NewServer(mocks.WithReply(answer))
	defer claude.Close()
	deep := mocks.NewServer(mocks.WithReply(answer))
	defer deep.Close()
	doc := `{"LLM": {
		"Providers": {
			"primary": {"Dialect": "openai", "BaseURL": "` + primary.OpenAIBaseURL() + `", "APIKeyEnv": "K", "Model": "gpt-4o-mini"},
			"plain": {"Dialect": "openai-compatible", "BaseURL": "` + plain.OpenAIBaseURL() + `", "APIKeyEnv": "K", "Model": "llama"},
			"claude": {"Dialect": "anthropic", "BaseURL": "` + claude.AnthropicBaseURL() + `", "APIKeyEnv": "K",
			           "Model": "claude-haiku-4-5", "Continuation": "None"},
			"deep": {"Dialect": "openai-compatible", "BaseURL": "` + deep.OpenAIBaseURL() + `", "APIKeyEnv": "K", "Model": "deepseek-chat",
			         "Prefill": "prefix"}
		},
		"Fallback": ["primary", "plain", "claude", "deep"]}}`
	c := clientFromJSON(t, doc, []string{"K=" + sentinelKey})
	st, err := c.ChatStream(context.Background(), &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: "count"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var text strings.Builder
	for d, err := range st.Deltas() {
		if err != nil {
			t.Fatal(err)
		}
		text.WriteString(d.Text)
	}
	if text.String() != answer || st.Provider() != "deep" {
		t.Fatalf("%q from %s", text.String(), st.Provider())
	}
	if plain.Journal().Len() != 0 || claude.Journal().Len() != 0 || deep.Journal().Len() != 1 {
		t.Fatalf("plain %d, claude %d, deep %d requests", plain.Journal().Len(), claude.Journal().Len(), deep.Journal().Len())
	}
}

// The keys' values are checked, each error with its path and what is allowed.
func TestConfig_PrefillAndContinuationAreChecked(t *testing.T) {
	_, err := config.ParseWithEnv([]byte(`{"LLM": {"Providers": {
		"a": {"Dialect": "openai-compatible", "BaseURL": "http://127.0.0.1:1/v1", "Prefill": "assistant",
		      "Continuation": "splice", "Continuations": {"m": "maybe"}},
		"b": {"Dialect": "openai", "APIKeyEnv": "K", "Prefill": "prefix"}}}}`), []string{"K=k"})
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"LLM.Providers.a.Prefill", "LLM.Providers.a.Continuation", "LLM.Providers.a.Continuations.m",
		"LLM.Providers.b.Prefill"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("no error for %s in:\n%v", want, err)
		}
	}
}
