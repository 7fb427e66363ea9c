package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// Probe is an application's active probe of a provider (WithActiveProbe): one cheap request
// that tells whether model serves again. p sends straight to the deployment under test, past
// every resilience layer (no retries, no pause, no bulkhead slot: a probe is one request), with
// the deployment's credentials, and refuses redirects as calls do. model is the model whose
// circuit is open (per-model circuits, resilience.RouteScopeModel), or, for the deployment's
// own circuit — which opens when the host is unreachable or refuses the key — and for the route
// that the models beyond resilience.MaxRoutes share, the deployment's
// model, else the default model (WithDefaultModel, else the provider's own), "" for none. Return nil when the answer
// shows the provider serving; any error keeps the circuit open for its next, longer break.
type Probe func(ctx context.Context, p providers.Provider, model string) error

// ChatProbe is a Probe that asks model for one token ("ping", MaxTokens 1). It judges the
// answer as the circuit judges a call: the provider serves again when it answers — with the
// token, or with a rate limit, a spent quota, a refusal or a rejection of the request, none of
// which counts against a circuit — and is still down when it fails as a provider fails
// (overloaded, unavailable, timed out, a broken stream), refuses the key, redirects, or cannot be
// read. It costs one short prompt per probe — once per break of an open circuit, not per call.
// With model "" (no default model), it fails without sending.
func ChatProbe(ctx context.Context, p providers.Provider, model string) error {
	switch {
	case p == nil:
		return errors.New("client: ChatProbe: no provider")
	case model == "":
		return fmt.Errorf("client: ChatProbe of %s: no model to probe (set a default model)", p.Name())
	}
	_, err := p.Chat(ctx, &providers.ChatRequest{Model: model, MaxTokens: 1,
		Messages: []providers.Message{{Role: providers.RoleUser, Content: "ping"}}})
	if err == nil {
		return nil
	}
	switch k := providers.KindOf(err); {
	case k.Unwell(), k == providers.KindAuth, k == providers.KindRedirected, k == providers.KindUnknown, k == providers.KindCanceled:
		return err
	}
	return nil // an answer, if not the one asked for: the provider serves
}

// maxProbeTimeout bounds WithActiveProbe's timeout, as the configuration bounds time limits.
const maxProbeTimeout = time.Hour

// WithActiveProbe has every circuit of provider name (each deployment's, each model's) tested
// by probe when its break ends, instead of by the next caller's call
// (resilience.WithActiveProbe): a provider that comes back is noticed at the end of the break
// whoever calls, and no caller's call is spent — or made to wait — on a provider still down.
// timeout bounds each probe (0: the provider's TimeoutSeconds, or 30 s); allowed 0..1h. While a
// probe runs, calls to that circuit fail over as during any half-open probe. Client.Close stops
// the probes; a client dropped without Close keeps probing a provider that is down until its
// circuits close.
func WithActiveProbe(name string, probe Probe, timeout time.Duration) Option {
	return func(b *builder) error {
		s := b.spec(name)
		if s == nil {
			return fmt.Errorf("client: WithActiveProbe: unknown provider %q", name)
		}
		if probe == nil {
			return fmt.Errorf("client: WithActiveProbe(%q): nil probe", name)
		}
		if timeout < 0 || timeout > maxProbeTimeout {
			return fmt.Errorf("client: WithActiveProbe(%q): timeout %v must be between 0 and %v", name, timeout, maxProbeTimeout)
		}
		s.probe, s.probeTimeout = probe, timeout
		return nil
	}
}

// activeProbe adapts s's probe to deployment ds's pipeline: each run builds the deployment's
// provider over the transport the pipeline sends through (rt), so that the request carries the
// deployment's credentials and nothing of the pipeline's layers.
func (s *providerSpec) activeProbe(ds Deployment) resilience.Option {
	probe, factory := s.probe, ds.Factory
	model := ds.Model
	if model == "" {
		model = s.model
	}
	return resilience.WithActiveProbe(func(ctx context.Context, rt http.RoundTripper, route string) error {
		prov, err := factory(&http.Client{Transport: rt, CheckRedirect: noRedirects})
		if err != nil {
			return err
		}
		if prov == nil {
			return fmt.Errorf("client: provider %q: its factory returned no provider", s.name)
		}
		m := model
		if route != "" && route != overflowRoute {
			m = route
		} else if d, ok := prov.(providers.Describer); ok && m == "" {
			m = d.Describe().DefaultModel
		}
		return probe(ctx, prov, m)
	}, s.probeTimeout)
}

// overflowRoute is the route key the models beyond resilience.MaxRoutes share (see
// Pipeline.Routes): no model of its own, so its probe asks the deployment's, as the
// deployment's own circuit's does.
const overflowRoute = "*"

// noRedirects has an http.Client return a redirect as it is: the provider turns it into a
// redirected error, and the credentials go nowhere else.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
