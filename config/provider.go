package config

import (
	"fmt"
	"os"
	"reflect"

	"github.com/steadyllm/steady/resilience"
)

// Provider types accepted in LLM.Providers.<name>.Type.
const (
	TypeOpenAI           = "openai"            // api.openai.com, or BaseURL
	TypeAzure            = "azure"             // Azure OpenAI: BaseURL required, APIVersion optional
	TypeOpenAICompatible = "openai-compatible" // any server speaking OpenAI's API: BaseURL required, key optional
	TypeAnthropic        = "anthropic"         // api.anthropic.com, or BaseURL
)

var providerTypes = []string{TypeOpenAI, TypeAzure, TypeOpenAICompatible, TypeAnthropic}

// Provider is one entry of LLM.Providers. It holds the name of the variable that holds the API
// key, never the key: printing a Provider (%v, %+v, %#v) cannot reveal a secret.
type Provider struct {
	// Name is the provider's key in LLM.Providers, as first declared.
	Name string
	// Type is TypeOpenAI, TypeAzure, TypeOpenAICompatible or TypeAnthropic (matched
	// case-insensitively, stored in lower case).
	Type string
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

// APIKey reads the API key from the environment variable named by APIKeyEnv. It returns ""
// and nil when APIKeyEnv is empty (a server that needs no key), and an error matching
// [ErrNoAPIKey] when the variable is unset or empty. The error names the variable, never a
// value. Load does not read keys: a missing key shows when the provider is used.
func (p Provider) APIKey() (string, error) {
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
	return "", fmt.Errorf("config: provider %q: environment variable %s (its APIKeyEnv) is not set: %w",
		p.Name, p.APIKeyEnv, ErrNoAPIKey)
}
