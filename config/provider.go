package config

import (
	"fmt"
	"os"
	"reflect"

	"github.com/steadyllm/steady/internal/dialect"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// The dialects accepted in LLM.Providers.<name>.Dialect: the wire format the provider speaks.
const (
	DialectOpenAI           = dialect.OpenAI     // api.openai.com, or BaseURL
	DialectAzure            = dialect.Azure      // Azure OpenAI: BaseURL required, APIVersion optional
	DialectOpenAICompatible = dialect.Compatible // any server speaking OpenAI's API: BaseURL required, key optional
	DialectAnthropic        = dialect.Anthropic  // api.anthropic.com, or BaseURL
)

var providerDialects = dialect.All

// The values of LLM.Providers.<name>.ThinkingModes: how an Anthropic model takes extended
// thinking.
const (
	ThinkingBudget   = "budget"   // thinking with budget_tokens
	ThinkingAdaptive = "adaptive" // adaptive thinking, guided by the effort
)

// The values of LLM.Providers.<name>.Prefill: how an openai-compatible server takes an
// assistant prefill.
const (
	PrefillPrefix        = "prefix"                 // "prefix": true on the last message
	PrefillContinueFinal = "continue_final_message" // vLLM's continue_final_message
)

// The values of LLM.Providers.<name>.Continuation and Continuations: how a provider's routes
// continue an answer another route began.
const (
	ContinuePrefill = "prefill" // an assistant prefill
	ContinuePrompt  = "prompt"  // the answer so far, then a user message asking to continue
	ContinueNone    = "none"    // never
)

// The values of LLM.Providers.<name>.API: which of OpenAI's chat APIs an OpenAI-dialect
// provider calls.
const (
	APIChatCompletions = dialect.ChatCompletions // POST /chat/completions, the default
	APIResponses       = dialect.Responses       // POST /responses
)

// Provider is one entry of LLM.Providers. It holds the name of the variable that holds the API
// key, never the key: printing a Provider (%v, %+v, %#v) cannot reveal a secret.
type Provider struct {
	// Name is the provider's key in LLM.Providers, as first declared.
	Name string
	// Dialect is DialectOpenAI, DialectAzure, DialectOpenAICompatible or DialectAnthropic
	// (matched case-insensitively, stored in lower case). The key was called Type, which a
	// file or a variable may still use.
	Dialect string
	// BaseURL is the API's base URL; "" means the provider's public endpoint. Required for
	// azure and openai-compatible.
	BaseURL string
	// APIKeyEnv is the name of the environment variable that holds the API key. Required
	// except for openai-compatible servers, which may need no key.
	APIKeyEnv string
	// Model is the model to call (for azure: the deployment name); "" leaves it to the caller.
	Model string
	// APIVersion is the Azure OpenAI api-version; only allowed for azure.
	APIVersion string
	// Policy is the name of the policy in LLM.Policies this provider uses, spelled as the
	// policy was declared; "" means LLM.Resilience.
	Policy string
	// Resilience is the provider's effective policy, resolved by Load: DefaultOptions ←
	// LLM.Resilience ← LLM.Policies[Policy] ← LLM.Providers.<name>.Resilience, each layer
	// overriding only the keys it sets. (In JSON, the provider's Resilience object holds only
	// its overrides.)
	Resilience resilience.Options
	// Organization is sent as the OpenAI-Organization header (openai, openai-compatible).
	Organization string
	// Deployments maps model names to Azure deployment names (azure); a model that is not in
	// the map is used as the deployment name.
	Deployments map[string]string
	// OmitStreamUsage stops asking for a usage chunk at the end of streams (openai,
	// azure, openai-compatible), for servers that reject stream_options.
	OmitStreamUsage bool
	// Version is the anthropic-version header (anthropic); "" means the provider's default.
	Version string
	// DefaultMaxTokens is the max_tokens sent when a request sets none (anthropic, which
	// requires the field); 0 means the provider's default.
	DefaultMaxTokens int
	// Beta lists anthropic-beta feature names (anthropic).
	Beta []string
	// ThinkingModes says, by model name or prefix of names, how a model takes extended
	// thinking (anthropic): ThinkingBudget or ThinkingAdaptive (any case, stored in lower case),
	// over the provider's default (adaptive for the Claude models of version 4.7 and later,
	// which refuse a budget; see anthropic.Config.ThinkingModes).
	ThinkingModes map[string]string
	// CountTokens counts the prompt of every chat call with the provider's counting endpoint
	// before sending it, so that pacing debits, and budgets price, the exact prompt instead of
	// an estimate (anthropic; see anthropic.Config.CountTokens). Off by default; a count that fails never
	// fails the call.
	CountTokens bool
	// CountTimeoutSeconds bounds each count (anthropic.Config.CountTimeout): 0 means the
	// provider's default (2 s). Allowed: 0 to 30.
	CountTimeoutSeconds float64
	// Capabilities lists what the server serves ("chat", "streaming", "tools", "images",
	// "structured output"…: providers.CapabilityNames), for a compatible server that lacks
	// some of it; empty means everything its dialect serves.
	Capabilities []string
	// Limits bounds what is read from the server; a zero field means its default.
	Limits providers.Limits
	// ModelMap maps the models requested of the fallback chain's first provider to this
	// provider's own model names, for fallback ({"gpt-4o": "claude-sonnet-4-5"}).
	ModelMap map[string]string
	// DeploymentOf, when set, makes this entry a deployment of the provider it names (a name
	// that is not itself a key of LLM.Providers): several entries with the same DeploymentOf
	// form one provider whose calls are routed among them (LLM.Routing) and which
	// LLM.Fallback lists by that name. Each deployment has its own key, base URL, model,
	// policy and limits, and its own circuit.
	DeploymentOf string
	// Weight is the deployment's share of the calls under "weighted" routing; 0 means 1.
	Weight int
	// RequestsPerMinute and TokensPerMinute are the deployment's limits when known, for
	// pacing (resilience.Options.PaceRequestsPerMinute); 0 learns them from the answers.
	RequestsPerMinute, TokensPerMinute int
	// ContextWindow is the context window, in tokens, of the provider's models
	// (client.WithContextWindow): a call whose estimate (its prompt and the most it may answer)
	// exceeds it skips the provider, and after a prompt too long the chain moves only to
	// providers that declare a larger window. 0 (the default) declares none: the provider is
	// tried whatever the call's size, and skipped after a prompt too long. Allowed:
	// 0..100000000.
	ContextWindow int
	// ContextWindows is the context window of the models that differ from ContextWindow, by the
	// model name the provider is asked for (a deployment's Model, or the model a call or the
	// ModelMap names); a model listed with 0 declares none, even when ContextWindow is set.
	// Allowed: 0..100000000 each. The deployments of one provider (DeploymentOf) share its
	// windows: each must declare the same ContextWindow and ContextWindows, or none.
	ContextWindows map[string]int
	// TokenEncoding names the encoding that counts the prompts of the provider's models
	// exactly (client.WithTokenEncoding): tokens.O200kBase or tokens.Cl100kBase (linked by
	// importing github.com/steadyllm/steady/tokens/tiktoken), another encoding the program
	// registered, or "none" to estimate them and learn from their usage even where the model's
	// name says its encoding. "" (the default) follows the model table
	// (tokens.EncodingForModel). TokenEncodings does the same for the models named, by the
	// model name the provider is asked for.
	TokenEncoding  string
	TokenEncodings map[string]string
	// API is which of OpenAI's chat APIs the provider calls (openai, azure, openai-compatible):
	// APIChatCompletions (POST /chat/completions; "" means it) or APIResponses (POST
	// /responses: typed items, reasoning items kept across turns, stored answers; see
	// openai.Config.API). Matched case-insensitively, stored in lower case.
	API string
	// ActiveProbe is how an open circuit of the provider is tested when its break ends
	// (client.WithActiveProbe): "chat" asks the model whose circuit is open for one token
	// (client.ChatProbe) instead of letting the next caller's call test it; "" (the default)
	// or "none" leaves the test to that call. Allowed: "", "none", "chat" (any case). The
	// deployments of one provider (DeploymentOf) share it: each must set the same.
	ActiveProbe string
	// Prefill is how an openai-compatible server continues an answer from its beginning (an
	// assistant prefill, openai.Config.Prefill): PrefillPrefix ("prefix": true on the last
	// message: DeepSeek, Mistral) or PrefillContinueFinal (continue_final_message: vLLM);
	// "" (the default) declares none. It lets a stream cut after content continue there
	// (StreamRescue "continue"). Matched case-insensitively, stored in lower case.
	Prefill string
	// Continuation is how the provider's routes continue an answer another route began
	// (client.WithContinuation): ContinuePrefill, ContinuePrompt (the answer so far, then a
	// user message asking to continue: client.ContinuationPrompt), ContinueNone (never sent a
	// partial answer), or "" (the default): what the provider declares — Anthropic's models
	// before 4.6 without thinking, and an openai-compatible server with Prefill, take a
	// prefill; OpenAI and Azure none. Matched case-insensitively, stored in lower case.
	Continuation string
	// Continuations is Continuation for the models that differ, by the model name the provider
	// is asked for. The deployments of one provider (DeploymentOf) share them: each must declare
	// the same Continuation and Continuations, or none.
	Continuations map[string]string

	// lookup reads the environment the configuration was loaded with (nil: the process's).
	lookup func(name string) (string, bool)
}

// windowOf returns the context window p declares for model, 0 for none, as the client reads
// it.
func (p Provider) windowOf(model string) int {
	if n, ok := p.ContextWindows[model]; ok {
		return n
	}
	return p.ContextWindow
}

// EffectiveResilience returns the options the provider's pipeline should use: a copy of
// Resilience that shares no memory with the Provider. For a Provider built by hand whose
// Resilience is the zero value, it returns resilience.DefaultOptions().
func (p Provider) EffectiveResilience() resilience.Options {
	if reflect.ValueOf(p.Resilience).IsZero() {
		return resilience.DefaultOptions()
	}
	return cloneOptions(p.Resilience)
}

// APIKey reads the API key from the environment variable named by APIKeyEnv, in the
// environment the configuration was loaded with: the one given to LoadWithEnv or
// ParseWithEnv; the process's as it stood at the load for Load and Parse; the process's now
// for a Provider built by hand. It returns "" and
// nil when APIKeyEnv is empty (a server that needs no key), and an error matching
// [ErrNoAPIKey] when the variable is unset or empty — which Load already reports as a problem.
// The error names the variable, never a value.
func (p Provider) APIKey() (string, error) {
	if p.lookup != nil {
		return p.APIKeyFrom(p.lookup)
	}
	return p.APIKeyFrom(os.LookupEnv)
}

// APIKeyFrom is [Provider.APIKey] with the environment lookup given (os.LookupEnv in
// production, a map in tests).
func (p Provider) APIKeyFrom(lookup func(name string) (string, bool)) (string, error) {
	if p.APIKeyEnv == "" {
		return "", nil
	}
	if v, ok := lookup(p.APIKeyEnv); ok && v != "" {
		return v, nil
	}
	return "", &MissingKeyError{Provider: p.Name, Var: p.APIKeyEnv}
}

// MissingKeyError says that the variable a provider's APIKeyEnv names is unset or empty. It
// matches ErrNoAPIKey.
type MissingKeyError struct {
	Provider string // the provider's name
	Var      string // the variable APIKeyEnv names
}

func (e *MissingKeyError) Error() string {
	return fmt.Sprintf("provider %q: environment variable %s (its APIKeyEnv) is not set", e.Provider, e.Var)
}

// Is reports whether target is ErrNoAPIKey.
func (e *MissingKeyError) Is(target error) bool { return target == ErrNoAPIKey }
