// Package dialect holds the rules every provider dialect lives by, in one place for the
// providers that enforce them on their Config and for package config that reports them with
// JSON paths: which dialects exist, which need a base URL, which need an API key.
package dialect

// The dialects: the wire formats a provider speaks.
const (
	OpenAI     = "openai"            // api.openai.com, or a proxy of it
	Azure      = "azure"             // Azure OpenAI: deployments, api-key header, api-version
	Compatible = "openai-compatible" // any server speaking OpenAI's chat completions protocol
	Anthropic  = "anthropic"         // the Anthropic Messages API
)

// All lists the dialects.
var All = []string{OpenAI, Azure, Compatible, Anthropic}

// Known reports whether d is a dialect.
func Known(d string) bool {
	for _, k := range All {
		if k == d {
			return true
		}
	}
	return false
}

// NeedsBaseURL reports whether a provider of dialect d must be given a base URL: Azure's
// resource endpoint and a compatible server's address have no default.
func NeedsBaseURL(d string) bool { return d == Azure || d == Compatible }

// NeedsKey reports whether a provider of dialect d must be given an API key: every dialect
// but an OpenAI-compatible server, which may need none (Ollama, a local vLLM).
func NeedsKey(d string) bool { return d != Compatible }

// The APIs an OpenAI-dialect provider speaks (openai, azure, openai-compatible): which of
// OpenAI's chat APIs carries its chats.
const (
	ChatCompletions = "chat_completions" // POST /chat/completions: the default, and every compatible server's
	Responses       = "responses"        // POST /responses: typed items, semantic stream events, stored answers
)

// APIs lists the APIs.
var APIs = []string{ChatCompletions, Responses}
