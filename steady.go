// Package steady builds a steady client from configuration in one line:
//
//	cfg, err := config.Load("appsettings.json") // LLM.Resilience, Policies, Providers, Fallback
//	if err != nil { … }
//	c, err := steady.FromConfig(cfg)            // *client.Client: a pipeline per provider, the chain
//
// It is the one package that knows every provider dialect (OpenAI, Azure OpenAI, OpenAI-
// compatible servers, Anthropic) and the configuration together; package client itself knows
// neither, so a program that builds its client in code (client.New) links only the providers
// it names.
package steady

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/config"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

// FromConfig builds a client from a loaded configuration: every provider of
// LLM.Providers with its effective resilience policy, every setting of its entry (limits,
// organization, Azure deployments, Anthropic version, beta features and default max tokens,
// model map), and its API key read from the variable its APIKeyEnv names in the environment
// the configuration was loaded with; LLM.Fallback is the chain, and LLM.FallbackOn the chains
// of the error kinds it names (client.WithFallbackOn). Each provider's Model is its default,
// and the model it is asked for when the chain falls back to it.
//
// A provider's ContextWindow and ContextWindows become client.WithContextWindow under its name;
// for a provider made of deployments, under the name of the provider they form (DeploymentOf),
// whose deployments must declare the same windows (config.Load refuses others; a Config built
// by hand that mixes them is an error here).
//
// What the client found suspicious in the configuration (client.Client.Warnings: a model of
// another vendor on a vendor's own host) is logged at Warn to slog.Default. With
// LLM.VerifyAtStart, every route is checked with one cheap request (client.Client.Verify,
// each bounded by its policy's timeout) before the client is returned: a route whose
// configuration fails is an error naming it (the client closed), and routes that could not be
// checked are logged.
//
// With more than one provider, LLM.Fallback must say which to call, in which order. A
// missing API key is an error that names the variable, never a value. opts are applied
// after the configuration (WithObserver, WithBaseTransport, WithModelMap…).
func FromConfig(cfg *config.Config, opts ...client.Option) (*client.Client, error) {
	if cfg == nil {
		return nil, errors.New("steady: FromConfig: nil config")
	}
	groups := cfg.Groups()
	names := make([]string, 0, len(cfg.Providers))
	for name, p := range cfg.Providers {
		if p.DeploymentOf == "" {
			names = append(names, name)
		}
	}
	for g := range groups {
		names = append(names, g)
	}
	sort.Strings(names)
	if len(names) > 1 && len(cfg.Fallback) == 0 {
		return nil, fmt.Errorf("steady: %d providers are configured (%v) but LLM.Fallback is empty: list the ones to call, in order", len(names), names)
	}
	var all []client.Option
	var errs []error
	for _, name := range names {
		if members, ok := groups[name]; ok {
			opt, err := deploymentsOf(cfg, name, members)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			all = append(all, opt)
			for _, m := range members {
				all = appendEncodings(all, name, cfg.Providers[m])
			}
			if p, err := groupWindows(cfg, name, members); err != nil {
				errs = append(errs, err)
			} else {
				all = appendWindow(all, name, p)
			}
			if p, err := groupContinuations(cfg, name, members); err != nil {
				errs = append(errs, err)
			} else {
				all = appendContinuation(all, name, p)
			}
			p, err := groupProbe(cfg, name, members)
			if err == nil {
				all, err = appendProbe(all, name, p)
			}
			if err != nil {
				errs = append(errs, err)
			}
			continue
		}
		p := cfg.Providers[name]
		key, err := p.APIKey()
		if err != nil {
			errs = append(errs, fmt.Errorf("steady: %w", err)) // the error names the provider
			continue
		}
		factory, err := factoryFor(name, p, key)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		o := p.EffectiveResilience()
		// The provider's own limits, when stated, are its pacing budget, as for a deployment
		// (client.Deployment.RequestsPerMinute).
		if p.RequestsPerMinute > 0 {
			o.PaceRequestsPerMinute = p.RequestsPerMinute
		}
		if p.TokensPerMinute > 0 {
			o.PaceTokensPerMinute = p.TokensPerMinute
		}
		all = append(all, client.WithProvider(name, o, factory))
		all = appendWindow(all, name, p)
		all = appendEncodings(all, name, p)
		all = appendContinuation(all, name, p)
		if all, err = appendProbe(all, name, p); err != nil {
			errs = append(errs, err)
		}
		if p.Model != "" {
			all = append(all, client.WithDefaultModel(name, p.Model))
		}
		if len(p.ModelMap) > 0 {
			all = append(all, client.WithModelMap(name, p.ModelMap))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(cfg.Fallback) > 0 {
		all = append(all, client.WithFallback(cfg.Fallback...))
	}
	kinds := make([]string, 0, len(cfg.FallbackOn))
	for kind := range cfg.FallbackOn {
		kinds = append(kinds, kind)
	}
	sort.Strings(kinds)
	for _, kind := range kinds {
		all = append(all, client.WithFallbackOn(providers.ErrorKind(kind), cfg.FallbackOn[kind]...))
	}
	if f := cfg.FailoverAfterSeconds; f != nil {
		all = append(all, client.WithFailoverAfter(time.Duration(*f*float64(time.Second))))
	}
	if len(cfg.Policies) > 0 {
		all = append(all, client.WithPolicies(cfg.Policies)) // for client.WithPolicy(name)
	}
	costs, err := costOptions(cfg.Cost)
	if err != nil {
		return nil, err
	}
	all = append(all, costs...)
	if ss := cfg.SharedState; ss != nil {
		store, closer, err := openSharedState(*ss)
		if err != nil {
			return nil, err
		}
		all = append(all, client.WithSharedState(store), client.WithCloser(closer))
		c, err := client.New(append(all, opts...)...)
		if err != nil {
			_ = closer.Close()
			return nil, err
		}
		return started(cfg, c)
	}
	c, err := client.New(append(all, opts...)...)
	if err != nil {
		return nil, err
	}
	return started(cfg, c)
}

// started logs what the new client c found suspicious in its configuration
// (client.Client.Warnings) and, with LLM.VerifyAtStart, verifies its routes
// (client.Client.Verify): a route whose configuration fails closes c and fails the start; one
// that could not be checked is logged.
func started(cfg *config.Config, c *client.Client) (*client.Client, error) {
	log := slog.Default()
	for _, w := range c.Warnings() {
		log.Warn(w)
	}
	if !cfg.VerifyAtStart {
		return c, nil
	}
	err := c.Verify(context.Background()) // each request bounded by its route's policy
	switch {
	case err == nil:
		return c, nil
	case errors.Is(err, client.ErrUnverified):
		log.Warn("steady: LLM.VerifyAtStart: " + err.Error())
		return c, nil
	}
	_ = c.Close()
	return nil, fmt.Errorf("steady: LLM.VerifyAtStart: %w", err)
}

// SharedStateDriver opens the store LLM.SharedState describes; the closer stops it.
type SharedStateDriver func(cfg config.SharedState) (resilience.SharedState, io.Closer, error)

var (
	driversMu sync.RWMutex
	drivers   = map[string]SharedStateDriver{}
)

// RegisterSharedState makes a shared-state driver available to FromConfig under name, the
// value of LLM.SharedState.Driver. A driver package calls it from its init function, so that
// a program enables it with one import (import _ "github.com/steadyllm/steady/state/redis").
// Registering a name twice replaces the driver.
func RegisterSharedState(name string, d SharedStateDriver) {
	driversMu.Lock()
	drivers[name] = d
	driversMu.Unlock()
}

func openSharedState(ss config.SharedState) (resilience.SharedState, io.Closer, error) {
	driversMu.RLock()
	d := drivers[ss.Driver]
	driversMu.RUnlock()
	if d == nil {
		return nil, nil, fmt.Errorf("steady: LLM.SharedState.Driver is %q but no such driver is linked into the program: "+
			"add import _ \"github.com/steadyllm/steady/state/redis\"", ss.Driver)
	}
	store, closer, err := d(ss)
	if err != nil {
		return nil, nil, fmt.Errorf("steady: LLM.SharedState: %w", err)
	}
	return store, closer, nil
}

// dialects builds the provider of each dialect of the configuration: the provider kinds this
// package registers.
var dialects = map[string]func(name string, p config.Provider, key string) client.ProviderFactory{
	config.DialectOpenAI:           openAIFactory(openai.OpenAI),
	config.DialectAzure:            openAIFactory(openai.Azure),
	config.DialectOpenAICompatible: openAIFactory(openai.Compatible),
	config.DialectAnthropic: func(name string, p config.Provider, key string) client.ProviderFactory {
		return func(hc *http.Client) (providers.Provider, error) {
			caps, err := providers.ParseCapabilities(p.Capabilities)
			if err != nil {
				return nil, fmt.Errorf("Capabilities: %w", err)
			}
			modes := make(map[string]anthropic.ThinkingMode, len(p.ThinkingModes))
			for model, mode := range p.ThinkingModes {
				modes[model] = anthropic.ThinkingMode(mode)
			}
			return anthropic.New(anthropic.Config{Name: name, BaseURL: p.BaseURL, APIKey: key, Version: p.Version,
				HTTPClient: hc, Model: p.Model, DefaultMaxTokens: p.DefaultMaxTokens, Beta: p.Beta, Limits: p.Limits,
				Capabilities: caps, ThinkingModes: modes, CountTokens: p.CountTokens,
				CountTimeout: time.Duration(p.CountTimeoutSeconds * float64(time.Second))})
		}
	},
}

func openAIFactory(d openai.Dialect) func(name string, p config.Provider, key string) client.ProviderFactory {
	return func(name string, p config.Provider, key string) client.ProviderFactory {
		return func(hc *http.Client) (providers.Provider, error) {
			caps, err := providers.ParseCapabilities(p.Capabilities)
			if err != nil {
				return nil, fmt.Errorf("Capabilities: %w", err)
			}
			return openai.New(openai.Config{Name: name, Dialect: d, API: openai.API(p.API), BaseURL: p.BaseURL, APIKey: key,
				APIVersion: p.APIVersion, Organization: p.Organization, HTTPClient: hc, Model: p.Model,
				AzureDeployments: p.Deployments, OmitStreamUsage: p.OmitStreamUsage, Limits: p.Limits,
				Capabilities: caps, Prefill: openai.PrefillFlavor(p.Prefill)})
		}
	}
}

// factoryFor returns the constructor of provider p of the configuration.
func factoryFor(name string, p config.Provider, key string) (client.ProviderFactory, error) {
	d := p.Dialect
	build, ok := dialects[d]
	if !ok {
		return nil, fmt.Errorf("steady: provider %q: unknown dialect %q", name, d)
	}
	return build(name, p, key), nil
}

// deploymentsOf builds provider name of the configuration from the entries members, whose
// DeploymentOf names it: one deployment each, with its own key, settings and policy, routed
// by LLM.Routing.
func deploymentsOf(cfg *config.Config, name string, members []string) (client.Option, error) {
	var deps []client.Deployment
	var errs []error
	for _, m := range members {
		p := cfg.Providers[m]
		key, err := p.APIKey()
		if err != nil {
			errs = append(errs, fmt.Errorf("steady: %w", err))
			continue
		}
		factory, err := factoryFor(name, p, key)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		o := p.EffectiveResilience()
		deps = append(deps, client.Deployment{Name: m, Factory: factory, Weight: p.Weight, Model: p.Model,
			RequestsPerMinute: p.RequestsPerMinute, TokensPerMinute: p.TokensPerMinute, Options: &o})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	strategy := client.StrategyPriority
	if s := cfg.Routing[name]; s != "" {
		strategy = client.Strategy(s)
	}
	return client.WithDeployments(name, resilience.DefaultOptions(), strategy, deps...), nil
}

// appendEncodings appends client.WithTokenEncoding for provider name as p chooses encodings.
func appendEncodings(opts []client.Option, name string, p config.Provider) []client.Option {
	if p.TokenEncoding != "" {
		opts = append(opts, client.WithTokenEncoding(name, p.TokenEncoding))
	}
	for _, m := range slices.Sorted(maps.Keys(p.TokenEncodings)) {
		opts = append(opts, client.WithTokenEncoding(name, p.TokenEncodings[m], m))
	}
	return opts
}

// appendWindow appends client.WithContextWindow for provider name when p declares a context
// window.
func appendWindow(opts []client.Option, name string, p config.Provider) []client.Option {
	if p.ContextWindow == 0 && len(p.ContextWindows) == 0 {
		return opts
	}
	return append(opts, client.WithContextWindow(name, p.ContextWindow, p.ContextWindows))
}

// appendContinuation appends client.WithContinuation for provider name when p declares how
// its routes continue an answer.
func appendContinuation(opts []client.Option, name string, p config.Provider) []client.Option {
	if p.Continuation == "" && len(p.Continuations) == 0 {
		return opts
	}
	byModel := make(map[string]client.Continuation, len(p.Continuations))
	for m, w := range p.Continuations {
		byModel[m] = client.Continuation(w)
	}
	return append(opts, client.WithContinuation(name, client.Continuation(p.Continuation), byModel))
}

// groupContinuations returns the deployment whose continuations provider name, made of the
// entries members, is given: the first, once every other is found to declare the same
// (client.WithContinuation keeps one set per provider).
func groupContinuations(cfg *config.Config, name string, members []string) (config.Provider, error) {
	first := cfg.Providers[members[0]]
	for _, m := range members[1:] {
		p := cfg.Providers[m]
		if p.Continuation != first.Continuation || !maps.Equal(p.Continuations, first.Continuations) {
			return config.Provider{}, fmt.Errorf("steady: provider %q: its deployments %q and %q declare different "+
				"continuations, and a provider has one set (declare the same Continuation and Continuations on each)", name, members[0], m)
		}
	}
	return first, nil
}

// groupWindows returns the deployment whose context windows provider name, made of the
// entries members, is given: the first, once every other is found to declare the same window
// for every model (client.WithContextWindow keeps one set per provider).
func groupWindows(cfg *config.Config, name string, members []string) (config.Provider, error) {
	first := cfg.Providers[members[0]]
	windowOf := func(p config.Provider, model string) int {
		if n, ok := p.ContextWindows[model]; ok {
			return n
		}
		return p.ContextWindow
	}
	for _, m := range members[1:] {
		p := cfg.Providers[m]
		same := p.ContextWindow == first.ContextWindow
		for _, ws := range []map[string]int{p.ContextWindows, first.ContextWindows} {
			for model := range ws {
				same = same && windowOf(p, model) == windowOf(first, model)
			}
		}
		if !same {
			return config.Provider{}, fmt.Errorf("steady: provider %q: its deployments %q and %q declare different context "+
				"windows, and a provider has one set (declare the same ContextWindow and ContextWindows on each)", name, members[0], m)
		}
	}
	return first, nil
}

// appendProbe appends client.WithActiveProbe for provider name when p sets ActiveProbe.
func appendProbe(opts []client.Option, name string, p config.Provider) ([]client.Option, error) {
	switch probeOf(p) {
	case "":
		return opts, nil
	case config.ProbeChat:
		return append(opts, client.WithActiveProbe(name, client.ChatProbe, 0)), nil
	}
	return opts, fmt.Errorf("steady: provider %q: ActiveProbe %q: must be %q, %q or empty", name, p.ActiveProbe,
		config.ProbeChat, config.ProbeNone)
}

// groupProbe returns the deployment whose ActiveProbe provider name, made of the entries
// members, is given: the first, once every other is found to set the same.
func groupProbe(cfg *config.Config, name string, members []string) (config.Provider, error) {
	first := cfg.Providers[members[0]]
	for _, m := range members[1:] {
		if p := cfg.Providers[m]; probeOf(p) != probeOf(first) {
			return config.Provider{}, fmt.Errorf("steady: provider %q: its deployments %q and %q set different ActiveProbe "+
				"values, and a provider's circuits are probed one way", name, members[0], m)
		}
	}
	return first, nil
}

// probeOf returns p's ActiveProbe as Load keeps it (lower case, "none" as ""), for a Provider
// built by hand too.
func probeOf(p config.Provider) string {
	v := strings.ToLower(strings.TrimSpace(p.ActiveProbe))
	if v == config.ProbeNone {
		return ""
	}
	return v
}
