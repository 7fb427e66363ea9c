package anthropic

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/steadyllm/steady/internal/redact"
	"github.com/steadyllm/steady/providers"
)

// DefaultBaseURL is the API root used when Config.BaseURL is empty.
const DefaultBaseURL = "https://api.anthropic.com"

// DefaultVersion is the anthropic-version header sent when Config.Version is empty: the one
// stable version of the Messages API.
const DefaultVersion = "2023-06-01"

// DefaultCountTimeout is how long a pre-flight token count may take (Config.CountTimeout)
// before the client's estimate stands in for it: a count is one small request, answered in
// well under a second.
const DefaultCountTimeout = 2 * time.Second

// MaxCountTimeout is the longest Config.CountTimeout allowed: a count every call waits for
// must never cost more than a fraction of the call.
const MaxCountTimeout = 30 * time.Second

// DefaultMaxTokens is the max_tokens sent when neither the request nor Config.DefaultMaxTokens
// sets one. Anthropic, unlike OpenAI, requires the field on every request.
const DefaultMaxTokens = 4096

// Config describes one Anthropic endpoint. Only APIKey is required; every other zero value has
// a documented default.
//
// A Config never prints its APIKey: String, GoString and Format show it as "[REDACTED]" (or
// empty when unset), so %v, %+v and %#v are safe to log.
type Config struct {
	// Name is the provider's name in errors and responses. Empty means "anthropic".
	Name string
	// BaseURL is the API root that /v1/messages hangs off. Empty means DefaultBaseURL. A
	// trailing "/" or "/v1" is removed, so "https://api.anthropic.com/v1" works too.
	BaseURL string
	// APIKey is the secret, sent as the x-api-key header. Required.
	APIKey string
	// Version is the anthropic-version header. Empty means DefaultVersion.
	Version string
	// HTTPClient carries every call. The steady client gives one whose transport is the
	// provider's resilience pipeline; nil means http.DefaultClient. It is never modified.
	HTTPClient *http.Client
	// Model is the model used when a request names none.
	Model string
	// DefaultMaxTokens is the max_tokens sent when a request sets none (MaxTokens 0). Zero
	// means DefaultMaxTokens; a negative value is an error.
	DefaultMaxTokens int
	// Beta lists beta feature names, sent comma-separated in one anthropic-beta header. Empty
	// sends no header.
	Beta []string
	// Limits bounds what is read from the server: answers, stream events, error bodies. The
	// zero value means the defaults of providers.Limits.
	Limits providers.Limits
	// SchemaByTool sends a structured-output request (ChatRequest.Schema) as forced tool use —
	// a tool whose input schema is the Schema, which the model must call, and whose input
	// becomes the answer — instead of output_config.format, for models and Anthropic-compatible
	// servers without native structured outputs.
	SchemaByTool bool
	// Capabilities is what the server serves (providers.Capabilities); zero means everything
	// the Messages API does (all but embeddings). Set it for an Anthropic-compatible server
	// that lacks some of it.
	Capabilities providers.Capabilities
	// ThinkingModes says, by model name, how a model takes extended thinking, over
	// DefaultThinkingMode: a key names the model, or every model whose name it starts followed
	// by "-" (the longest key wins). Set it for a model the default misreads — a new model,
	// a proxy's alias — or to move a 4.6 model off its deprecated budget. Every value must be
	// ThinkingBudget or ThinkingAdaptive.
	ThinkingModes map[string]ThinkingMode
	// CountTokens has the steady client count the prompt of every chat call with the API's
	// counting endpoint (POST /v1/messages/count_tokens) before sending it, so that pacing
	// debits the exact prompt from the route's tokens-per-minute limit instead of an estimate
	// of four bytes a token (providers.TokenCounter; see client.EstimateTokens), and so that a
	// client's budgets (client.WithBudgets) price it. A route with no tokens-per-minute limit, configured
	// or learnt, is not counted for pacing, and a call no budget holds is not counted at all:
	// nothing would use the count. It costs
	// a request before each call (its own rate limit at Anthropic, not the Messages API's); one
	// that fails or takes longer than CountTimeout leaves the estimate, and never fails the
	// call. Off by default.
	CountTokens bool
	// CountTimeout bounds a pre-flight count (CountTokens) and a count through the client
	// (client.Client.CountTokens). 0 means DefaultCountTimeout; allowed 0 to MaxCountTimeout.
	CountTimeout time.Duration
}

// withDefaults returns c with its defaults applied, or an error naming what is wrong. The
// error never contains the API key.
func (c Config) withDefaults() (Config, error) {
	if c.Name == "" {
		c.Name = "anthropic"
	}
	c.BaseURL = strings.TrimRight(strings.TrimSpace(c.BaseURL), "/")
	c.BaseURL = strings.TrimRight(strings.TrimSuffix(c.BaseURL, "/v1"), "/")
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	if c.Version == "" {
		c.Version = DefaultVersion
	}
	if c.HTTPClient == nil {
		c.HTTPClient = http.DefaultClient
	}
	if c.DefaultMaxTokens == 0 {
		c.DefaultMaxTokens = DefaultMaxTokens
	}
	c.Beta = append([]string(nil), c.Beta...)
	var errs []error
	modes := make(map[string]ThinkingMode, len(c.ThinkingModes))
	for model, mode := range c.ThinkingModes {
		if mode != ThinkingBudget && mode != ThinkingAdaptive {
			errs = append(errs, fmt.Errorf("anthropic: provider %q: ThinkingModes[%q] = %q: must be %q or %q",
				c.Name, model, mode, ThinkingBudget, ThinkingAdaptive))
		}
		modes[model] = mode
	}
	c.ThinkingModes = modes
	if c.APIKey == "" {
		errs = append(errs, fmt.Errorf("anthropic: provider %q: APIKey is required", c.Name))
	}
	switch {
	case c.CountTimeout == 0:
		c.CountTimeout = DefaultCountTimeout
	case c.CountTimeout < 0 || c.CountTimeout > MaxCountTimeout:
		errs = append(errs, fmt.Errorf("anthropic: provider %q: CountTimeout = %v: must be 0 (the default, %v) up to %v",
			c.Name, c.CountTimeout, DefaultCountTimeout, MaxCountTimeout))
	}
	if c.DefaultMaxTokens < 0 {
		errs = append(errs, fmt.Errorf("anthropic: provider %q: DefaultMaxTokens = %d: must not be negative", c.Name, c.DefaultMaxTokens))
	}
	if problem := redact.CheckBaseURL(c.BaseURL); problem != "" {
		errs = append(errs, fmt.Errorf("anthropic: provider %q: BaseURL %s", c.Name, problem))
	}
	if err := c.Limits.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("anthropic: provider %q: %w", c.Name, err))
	}
	c.Limits = c.Limits.WithDefaults()
	return c, errors.Join(errs...)
}

// String describes c with the API key redacted.
func (c Config) String() string {
	return fmt.Sprintf("{Name:%s BaseURL:%s APIKey:%s Version:%s HTTPClient:%p Model:%s DefaultMaxTokens:%d Beta:%v Limits:%+v CountTokens:%t CountTimeout:%v}",
		c.Name, c.BaseURL, hideKey(c.APIKey), c.Version, c.HTTPClient, c.Model, c.DefaultMaxTokens, c.Beta, c.Limits, c.CountTokens, c.CountTimeout)
}

// GoString describes c as Go syntax, with the API key redacted.
func (c Config) GoString() string {
	return fmt.Sprintf("anthropic.Config{Name:%q, BaseURL:%q, APIKey:%q, Version:%q, HTTPClient:%p, Model:%q, DefaultMaxTokens:%d, Beta:%#v, Limits:%#v, CountTokens:%t, CountTimeout:%d}",
		c.Name, c.BaseURL, hideKey(c.APIKey), c.Version, c.HTTPClient, c.Model, c.DefaultMaxTokens, c.Beta, c.Limits, c.CountTokens, c.CountTimeout)
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
