package providers

import "strings"

// ModelFamily returns the GenAI system whose models are named like model — SystemOpenAI for
// gpt-…, chatgpt-…, o1, o3, o4 and their variants, text-embedding-…; SystemAnthropic for
// claude-… — or "" when the name says nothing (a deployment's own name, a model of another
// vendor). The client warns at construction when a provider is configured with a model of
// another system's family, whose every call would fail with not_found.
func ModelFamily(model string) string {
	m := strings.ToLower(model)
	switch {
	case strings.HasPrefix(m, "claude-"):
		return SystemAnthropic
	case strings.HasPrefix(m, "gpt-"), strings.HasPrefix(m, "chatgpt-"), strings.HasPrefix(m, "text-embedding-"):
		return SystemOpenAI
	}
	for _, o := range []string{"o1", "o3", "o4"} {
		if m == o || strings.HasPrefix(m, o+"-") {
			return SystemOpenAI
		}
	}
	return ""
}
