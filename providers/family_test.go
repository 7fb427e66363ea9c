package providers

import "testing"

func TestModelFamily(t *testing.T) {
	for model, want := range map[string]string{
		"gpt-4o-mini": SystemOpenAI, "GPT-4.1": SystemOpenAI, "o3": SystemOpenAI, "o4-mini": SystemOpenAI,
		"chatgpt-4o-latest": SystemOpenAI, "text-embedding-3-small": SystemOpenAI,
		"claude-haiku-4-5": SystemAnthropic, "claude-3-5-sonnet-20241022": SystemAnthropic,
		"my-gpt4-deployment": "", "llama-3.1-70b": "", "o30-custom": "", "": "", "deepseek-chat": "",
	} {
		if got := ModelFamily(model); got != want {
			t.Errorf("ModelFamily(%q) = %q, want %q", model, got, want)
		}
	}
}
