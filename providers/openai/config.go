package openai

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/steadyllm/steady/internal/dialect"
	"github.com/steadyllm/steady/internal/redact"
	"github.com/steadyllm/steady/providers"
)

// Dialect says which dialect of the OpenAI API a Provider speaks. Its values are the
// configuration's provider types.
type Dialect string

// The dialects of the OpenAI API.
const (
	// OpenAI is api.openai.com (or a proxy of it): Bearer auth, max_completion_tokens.
	OpenAI Dialect = dialect.OpenAI
	// Azure is Azure OpenAI: api-key header, /openai/deployments/{deployment}/… paths and an
	// api-version query parameter.
	Azure Dialect = dialect.Azure
	// Compatible is any server that speaks the OpenAI chat completions protocol at its own
	// base URL: vLLM, Ollama, Groq, OpenRouter, LiteLLM… Bearer auth when a key is set.
	Compatible Dialect = dialect.Compatible

	// formerCompatible is the value Compatible had before it took the configuration's
	// spelling; a Config that spells it out still works.
	formerCompatible Dialect = "compatible"
)

// API says which of OpenAI's chat APIs a Provider speaks for Chat and ChatStream (Embed always
// calls /embeddings). Its values are the configuration's API values.
type API string

// The APIs.
const (
	// ChatCompletions is POST /chat/completions, spoken through go-openai: the default, and
	// what every OpenAI-compatible server serves.
	ChatCompletions API = dialect.ChatCompletions
	// Responses is POST /responses (Azure: /openai/v1/responses), spoken by this package's own
	// wire code: typed input and output items, semantic stream events, reasoning items sent
	// back across turns and answers stored for the next turn (providers.StoredResponse). See
	// responses.go.
	Responses API = dialect.Responses
)

// DefaultBaseURL is the base URL of the OpenAI dialect when Config.BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1"

// DefaultAzureAPIVersion is the api-version sent to Azure when Config.APIVersion is empty: the
// GA version 2024-10-21 (go-openai's own default, 2023-05-15, is long retired).
const DefaultAzureAPIVersion = "2024-10-21"

// emptyMessagesLimit replaces go-openai's default of 300 non-data lines in a row before Recv
// gives up with ErrTooManyEmptyStreamMessages: gateways send ": keep-alive" comments while
// a slow model thinks, and 300 of them is only a few minutes.
const emptyMessagesLimit = 10000

// Config describes one OpenAI-protocol endpoint. The zero value of every field but APIKey
// (and BaseURL for Azure and Compatible) has a documented default.
//
// A Config never prints its APIKey: String, GoString and Format show it as "[REDACTED]" (or
// empty when unset), so %v, %+v and %#v are safe to log.
type Config struct {
	// Capabilities is what the server serves, for fallback chains (providers.Capabilities);
	// zero means everything. Set it for an OpenAI-compatible server that lacks some of it
	// (images, structured outputs, embeddings…), so the chain skips it for such calls.
	Capabilities providers.Capabilities
	// Name is the provider's name in errors and responses. Empty means string(Dialect).
	Name string
	// Dialect is the dialect of the API the server speaks. Empty means OpenAI.
	Dialect Dialect
	// API is which chat API Chat and ChatStream call: ChatCompletions (empty means it) or
	// Responses. Any dialect may speak either, as far as its server does.
	API API
	// BaseURL is the API root. OpenAI: default DefaultBaseURL. Azure: the resource endpoint,
	// https://{resource}.openai.azure.com, without /openai (a trailing /openai is removed).
	// Compatible: the root that /chat/completions hangs off, usually ending in /v1. Required
	// for Azure and Compatible.
	BaseURL string
	// APIKey is the secret. Sent as "Authorization: Bearer" (OpenAI, Compatible) or
	// "api-key" (Azure). Required for OpenAI and Azure; optional for Compatible servers
	// that need none (Ollama), in which case no Authorization header is sent.
	APIKey string
	// APIVersion is Azure's api-version query parameter. Empty means DefaultAzureAPIVersion.
	// Ignored by the other kinds (go-openai would otherwise append it to every URL), and by
	// Azure's Responses API, whose v1 path takes none.
	APIVersion string
	// Organization is sent as OpenAI-Organization when set.
	Organization string
	// HTTPClient carries every call. The steady client gives one whose transport is the
	// provider's resilience pipeline; nil means http.DefaultClient. It is never modified: the
	// provider sends through a copy that never follows redirects, whatever CheckRedirect says.
	HTTPClient *http.Client
	// Model is the model used when a request names none.
	Model string
	// AzureDeployments maps model names to Azure deployment names. A model that is not in
	// the map is used as the deployment name unchanged.
	AzureDeployments map[string]string
	// OmitStreamUsage stops sending stream_options.include_usage on streamed chats, for
	// compatible servers that reject the field. Streams then end with zero Usage. The
	// Responses API has no such field: its streams always end with their usage.
	OmitStreamUsage bool
	// Limits bounds what is read from the server: answers, stream events, error bodies. The
	// zero value means the defaults of providers.Limits.
	Limits providers.Limits
	// Prefill is how the server continues an answer from its beginning (an assistant prefill,
	// providers.ChatRequest.Prefill), over the chat completions API: PrefillPrefix or
	// PrefillContinueFinal. Empty means it cannot (OpenAI and Azure have no prefill), and a
	// prefilled request is refused before sending.
	Prefill PrefillFlavor
}

// PrefillFlavor is how an OpenAI-compatible server takes an assistant prefill: the last
// message is the assistant's beginning of the answer, and the server answers with what
// follows it.
type PrefillFlavor string

// The prefill flavours.
const (
	// PrefillPrefix marks the last assistant message "prefix": true: DeepSeek's chat prefix
	// completion (its beta base URL) and Mistral.
	PrefillPrefix PrefillFlavor = "prefix"
	// PrefillContinueFinal sends "continue_final_message": true and
	// "add_generation_prompt": false: vLLM's chat completions.
	PrefillContinueFinal PrefillFlavor = "continue_final_message"
)

// withDefaults returns c with its defaults applied, or an error naming what is missing.
func (c Config) withDefaults() (Config, error) {
	switch c.Dialect {
	case "":
		c.Dialect = OpenAI
	case formerCompatible:
		c.Dialect = Compatible
	}
	if c.API == "" {
		c.API = ChatCompletions
	}
	switch c.Prefill {
	case "", PrefillPrefix, PrefillContinueFinal:
	default:
		return c, fmt.Errorf("openai: Prefill %q: must be %q, %q or empty", c.Prefill, PrefillPrefix, PrefillContinueFinal)
	}
	if c.Name == "" {
		c.Name = string(c.Dialect)
	}
	if c.HTTPClient == nil {
		c.HTTPClient = http.DefaultClient
	}
	c.BaseURL = strings.TrimRight(strings.TrimSpace(c.BaseURL), "/")
	var errs []error
	switch c.Dialect {
	case OpenAI:
		if c.BaseURL == "" {
			c.BaseURL = DefaultBaseURL
		}
		c.APIVersion = ""
	case Azure:
		c.BaseURL = strings.TrimSuffix(c.BaseURL, "/openai")
		if c.APIVersion == "" {
			c.APIVersion = DefaultAzureAPIVersion
		}
	case Compatible:
		c.APIVersion = ""
	default:
		errs = append(errs, fmt.Errorf("openai: unknown Dialect %q (want %q, %q or %q)", c.Dialect, OpenAI, Azure, Compatible))
	}
	if c.BaseURL == "" {
		errs = append(errs, fmt.Errorf("openai: provider %q: BaseURL is required for dialect %q", c.Name, c.Dialect))
	} else if problem := redact.CheckBaseURL(c.BaseURL); problem != "" {
		errs = append(errs, fmt.Errorf("openai: provider %q: BaseURL %s", c.Name, problem))
	}
	if c.API != ChatCompletions && c.API != Responses {
		errs = append(errs, fmt.Errorf("openai: provider %q: unknown API %q (want %q or %q)", c.Name, c.API, ChatCompletions, Responses))
	}
	if c.APIKey == "" && dialect.NeedsKey(string(c.Dialect)) {
		errs = append(errs, fmt.Errorf("openai: provider %q: APIKey is required for dialect %q", c.Name, c.Dialect))
	}
	if err := c.Limits.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("openai: provider %q: %w", c.Name, err))
	}
	c.Limits = c.Limits.WithDefaults()
	return c, errors.Join(errs...)
}

// String describes c with the API key redacted.
func (c Config) String() string {
	return fmt.Sprintf("{Name:%s Dialect:%s API:%s BaseURL:%s APIKey:%s APIVersion:%s Organization:%s HTTPClient:%p Model:%s AzureDeployments:%s OmitStreamUsage:%t Limits:%+v}",
		c.Name, c.Dialect, c.API, c.BaseURL, hideKey(c.APIKey), c.APIVersion, c.Organization, c.HTTPClient, c.Model,
		deployments(c.AzureDeployments), c.OmitStreamUsage, c.Limits)
}

// GoString describes c as Go syntax, with the API key redacted.
func (c Config) GoString() string {
	return fmt.Sprintf("openai.Config{Name:%q, Dialect:%q, API:%q, BaseURL:%q, APIKey:%q, APIVersion:%q, Organization:%q, HTTPClient:%p, Model:%q, AzureDeployments:%#v, OmitStreamUsage:%t, Limits:%#v}",
		c.Name, c.Dialect, c.API, c.BaseURL, hideKey(c.APIKey), c.APIVersion, c.Organization, c.HTTPClient, c.Model,
		c.AzureDeployments, c.OmitStreamUsage, c.Limits)
}

// Format implements fmt.Formatter so that every verb (%v, %+v, %s, %q, %x…) goes through
// String, and %#v through GoString: no verb can reach the API key by reflection.
func (c Config) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = fmt.Fprint(f, c.GoString())
		return
	}
	_, _ = fmt.Fprint(f, c.String())
}

// hideKey hides a secret but says whether one is set.
func hideKey(secret string) string {
	if secret == "" {
		return ""
	}
	return "[REDACTED]"
}

// deployments prints a deployment map in a stable order.
func deployments(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ":" + m[k]
	}
	return "map[" + strings.Join(parts, " ") + "]"
}
