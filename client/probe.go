package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// Probe is an application's active probe of a provider (WithActiveProbe): one cheap request
// that tells whether model serves again. p sends straight to the deployment under test, past
// every resilience layer (no retries, no pause, no bulkhead slot: a probe is one request), with
// the deployment's credentials, and refuses redirects as calls do. model is the model whose
// circuit is open (per-model circuits, resilience.RouteScopeModel), or, for the deployment's
// own circuit — which opens when the host is unreachable or refuses the key — the deployment's
// model, else the default model (WithDefaultModel, else the provider's own), else a model the
// deployment has served (the first of its routes by name), "" for none. Return nil when the answer
// shows the provider serving; any error keeps the circuit open for its next, longer break —
// except, for the deployment's own circuit of per-model circuits, an error status other than
// 401 or 403, which shows the host reachable and the key accepted, as its circuit judges calls.
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

// activeProbe adapts s's probe to deployment ds's pipeline (pipe, set once it is built): each
// run builds the deployment's provider over the transport the pipeline sends through (rt), so
// that the request carries the deployment's credentials and nothing of the pipeline's layers.
func (s *providerSpec) activeProbe(ds Deployment, pipe *atomic.Pointer[resilience.Pipeline]) resilience.Option {
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
		if route != "" {
			m = route
		} else if d, ok := prov.(providers.Describer); ok && m == "" {
			m = d.Describe().DefaultModel
		}
		if m == "" {
			// Callers name every call's model: the deployment's circuit (an unreachable host, a
			// refused key) is tested with one it has served.
			m = servedModel(pipe.Load())
		}
		err = probe(ctx, prov, m)
		if route == "" && err != nil && perModel(pipe.Load()) && hostAnswered(err) {
			// With a circuit per model, the deployment's own counts only what concerns every
			// model — the host unreachable, the key refused — and so does its probe: the
			// model's own trouble stays with the model's circuit.
			return nil
		}
		return err
	}, s.probeTimeout)
}

// perModel reports whether p keeps its circuits per model (resilience.RouteScopeModel).
func perModel(p *resilience.Pipeline) bool {
	return p != nil && p.Options().RouteScope == resilience.RouteScopeModel
}

// hostAnswered reports whether err is the server's answer that shows its host reachable and
// the key accepted: an error status other than a refusal of the credentials (401, 403), as
// the deployment's circuit judges the calls of its models.
func hostAnswered(err error) bool {
	var perr *providers.Error
	return errors.As(err, &perr) && perr.StatusCode >= 400 &&
		perr.StatusCode != http.StatusUnauthorized && perr.StatusCode != http.StatusForbidden
}

// servedModel returns the first by name of the models p keeps routes for (the models beyond
// resilience.MaxRoutes share one that names none), "" for none.
func servedModel(p *resilience.Pipeline) string {
	if p == nil {
		return ""
	}
	var models []string
	for key := range p.Routes() {
		if key != "*" {
			models = append(models, key)
		}
	}
	if len(models) == 0 {
		return ""
	}
	return slices.Min(models)
}

// noRedirects has an http.Client return a redirect as it is: the provider turns it into a
// redirected error, and the credentials go nowhere else.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
