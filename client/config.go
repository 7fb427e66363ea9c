package client

import (
	"errors"
	"fmt"
	"net/http"
	"sort"

	"github.com/steadyllm/steady/config"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
	"github.com/steadyllm/steady/providers/openai"
)

// FromConfig builds a client from a loaded configuration: every provider of
// LLM.Providers with its effective resilience policy and its API key read from the
// environment variable its APIKeyEnv names, and LLM.Fallback as the chain. Each provider's
// Model is its default, and the model it is asked for when the chain falls back to it.
//
// With more than one provider, LLM.Fallback must say which to call, in which order. A
// missing API key is an error that names the variable, never a value. opts are applied
// after the configuration (WithObserver, WithBaseTransport, WithModelMap…).
func FromConfig(cfg *config.Config, opts ...Option) (*Client, error) {
	if cfg == nil {
		return nil, errors.New("client: FromConfig: nil config")
	}
	names := make([]string, 0, len(cfg.Providers))
	for name := range cfg.Providers {
		names = append(names, name)
	}
	sort.Strings(names)
	if len(names) > 1 && len(cfg.Fallback) == 0 {
		return nil, fmt.Errorf("client: %d providers are configured (%v) but LLM.Fallback is empty: list the ones to call, in order", len(names), names)
	}
	var all []Option
	var errs []error
	for _, name := range names {
		p := cfg.Providers[name]
		key, err := p.APIKey()
		if err != nil && p.Type != config.TypeOpenAICompatible {
			errs = append(errs, fmt.Errorf("client: provider %q: %w", name, err))
			continue
		}
		factory, err := factoryFor(name, p, key)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		all = append(all, WithProvider(name, p.EffectiveResilience(), factory))
		if p.Model != "" {
			all = append(all, WithDefaultModel(name, p.Model))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(cfg.Fallback) > 0 {
		all = append(all, WithFallback(cfg.Fallback...))
	}
	return New(append(all, opts...)...)
}

// factoryFor returns the constructor of provider p of the configuration.
func factoryFor(name string, p config.Provider, key string) (ProviderFactory, error) {
	switch p.Type {
	case config.TypeOpenAI, config.TypeAzure, config.TypeOpenAICompatible:
		kind := map[string]openai.Kind{config.TypeOpenAI: openai.OpenAI, config.TypeAzure: openai.Azure,
			config.TypeOpenAICompatible: openai.Compatible}[p.Type]
		return func(hc *http.Client) (providers.Provider, error) {
			return openai.New(openai.Config{Name: name, Kind: kind, BaseURL: p.BaseURL, APIKey: key,
				APIVersion: p.APIVersion, HTTPClient: hc, Model: p.Model})
		}, nil
	case config.TypeAnthropic:
		return func(hc *http.Client) (providers.Provider, error) {
			return anthropic.New(anthropic.Config{Name: name, BaseURL: p.BaseURL, APIKey: key, HTTPClient: hc, Model: p.Model})
		}, nil
	}
	return nil, fmt.Errorf("client: provider %q: unknown type %q", name, p.Type)
}
