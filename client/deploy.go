package client

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// Deployment is one way of reaching a provider — an API key, an Azure deployment or region, a
// base URL — with its own resilience pipeline: its own circuit, bulkhead, rate-limit pause
// and per-minute limits. A provider with several deployments (WithDeployments) routes each
// call to one of them; the fallback chain still moves across providers.
type Deployment struct {
	// Name names the deployment within its provider ("key-2", "eastus"); errors, events and
	// health call it "<provider>/<name>".
	Name string
	// Factory builds the deployment's provider over the *http.Client the client gives it
	// (its own pipeline), as for WithProvider.
	Factory ProviderFactory
	// Weight is the deployment's share of the calls under StrategyWeighted; 0 means 1. Allowed:
	// 0..100000000, as in the configuration.
	Weight int
	// Model, when set, is the model every call routed to this deployment asks for (the
	// deployment serves that model); "" resolves the model as for the provider.
	Model string
	// RequestsPerMinute and TokensPerMinute are the deployment's limits, when known
	// (resilience.Options.PaceRequestsPerMinute, PaceTokensPerMinute); 0 learns them from the
	// answers' rate-limit headers. Allowed: 0..100000000.
	RequestsPerMinute, TokensPerMinute int
	// Options, when set, is the deployment's own resilience policy instead of the provider's
	// (WithDeployments' opts).
	Options *resilience.Options
}

// Strategy is how a provider with several deployments picks the one for a call.
type Strategy string

// The routing strategies. Whatever the strategy, deployments that cannot take a call now — an
// open or isolated circuit, a rate-limit pause, a spent per-minute limit — come after the
// ones that can; a deployment that fails in a way another might not (FallsBack) passes the
// call to the next deployment before the chain moves to the next provider.
const (
	// StrategyPriority tries the deployments in the order given.
	StrategyPriority Strategy = "priority"
	// StrategyWeighted picks at random, in proportion to the weights.
	StrategyWeighted Strategy = "weighted"
	// StrategyRoundRobin takes the deployments in turn.
	StrategyRoundRobin Strategy = "round_robin"
	// StrategyLeastInFlight picks the deployment with the fewest exchanges in flight.
	StrategyLeastInFlight Strategy = "least_in_flight"
	// StrategyMostHeadroom picks the deployment with the largest share left of its per-minute
	// budgets (from the answers' rate-limit headers, or the configured limits; a deployment
	// that knows none counts as full).
	StrategyMostHeadroom Strategy = "most_headroom"
	// StrategyLatency prefers the deployment that has been fastest for the call's model lately,
	// by what the client measured of its route (RouteInfo.Latency): a deployment scores its
	// moving average of the time to first token (streams) or per output token (whole answers)
	// times 1/(1 − its error rate), and up to ten times more as its per-minute limits fall
	// below half; one not measured yet scores as the best. The call goes to one drawn with
	// weight (best score ÷ its score)³, after 3 % of the calls per deployment (30 % at most in
	// all) are spread evenly, so that one that was slow keeps being measured and wins its
	// share back when it recovers. A sticky key (WithStickyKey) draws nothing: it stays on its
	// deployment while that one scores at most twice the best. Weight is ignored; the draws
	// come from WithRandomSource when set.
	StrategyLatency Strategy = "latency"
)

// Strategies lists the routing strategies.
var Strategies = []Strategy{StrategyPriority, StrategyWeighted, StrategyRoundRobin, StrategyLeastInFlight, StrategyMostHeadroom, StrategyLatency}

// deployment is one deployment of a provider entry.
type deployment struct {
	name     string // "<provider>/<deployment>", or the provider's name when it has one deployment
	owner    string // the provider's name
	provider providers.Provider
	wrapped  http.RoundTripper // the pipeline over the base transport, for CloseIdleConnections
	pipeline *resilience.Pipeline
	model    string
	weight   int
	// firstContent bounds the wait for a stream's first content: the pipeline's total timeout.
	firstContent time.Duration
	// count counts tokens outside the pipeline, for a provider that counts them (count.go);
	// nil for one that does not.
	count *counting
	// outs counts the times the deployment was taken out (takeOut) since its last success;
	// outUntil is when the current take-out ends (guarded by outMu with the counting), so
	// the calls in flight when it began, refused too, do not count as more take-outs.
	outs     atomic.Int64
	outMu    sync.Mutex
	outUntil time.Time
	// hedges counts the hedges sent to the deployment that reached the wire, hedgesUnsent
	// those cancelled before, and hedgesWon those that served; failovers the calls that failed
	// on it and went on to another route. They change only on those paths, never on a call
	// that the deployment serves at its first try.
	hedges, hedgesUnsent, hedgesWon, failovers atomic.Int64
}

// available reports whether d can take a call for model now: its circuit and the model's
// route's let calls through, the route is not pausing after a rate limit and its known budgets
// have room for a request.
func (d *deployment) available(model string) bool {
	ok, _ := d.canTake(d.pipeline.Route(model), nil)
	return ok
}

// moment is one reading of a clock, taken the first time it is needed: a router weighing
// several routes reads the clock once, and not at all when no route has a budget.
type moment struct {
	c *Client
	t time.Time
}

func (m *moment) now() time.Time {
	if m.t.IsZero() {
		m.t = m.c.now()
	}
	return m.t
}

// canTake reports whether d can take a call on its route r now (at m, nil for the route's own
// clock), with the smaller share left of r's known budgets (1 when it knows none), read once.
func (d *deployment) canTake(r *resilience.Pipeline, m *moment) (ok bool, headroom float64) {
	if blocked(d.pipeline.OwnCircuitState()) || (r != d.pipeline && blocked(r.OwnCircuitState())) || r.CoolingFor() > 0 {
		return false, 0
	}
	var h resilience.Headroom
	switch {
	case m == nil || !r.Paced():
		h = r.Headroom()
	default:
		h = r.HeadroomAt(m.now())
	}
	// Room for one more request (and a token) now; an unknown budget (-1) has room.
	return (h.Requests < 0 || h.Requests*float64(h.RequestsPerMinute) >= 1) &&
		(h.Tokens < 0 || h.Tokens*float64(h.TokensPerMinute) >= 1), shareLeft(h)
}

// blocked reports whether a circuit in state s turns calls away.
func blocked(s resilience.CircuitState) bool {
	return s == resilience.CircuitOpen || s == resilience.CircuitIsolated
}

// headroomOf is the smaller share left of the known budgets of d's route for model, 1 when it
// knows none.
func headroomOf(d *deployment, model string) float64 {
	return shareLeft(d.pipeline.Route(model).Headroom())
}

// shareLeft is the smaller share left of the known budgets of h, 1 when it knows none.
func shareLeft(h resilience.Headroom) float64 {
	share := 1.0
	if h.Requests >= 0 {
		share = min(share, h.Requests)
	}
	if h.Tokens >= 0 {
		share = min(share, h.Tokens)
	}
	return share
}

// WithDeployments adds provider name with several deployments, each built with its factory
// over a pipeline of its own (opts, with the deployment's own limits), and routed by
// strategy. WithDefaultModel and WithModelMap apply to it as to any provider; Pipeline(name)
// and Provider(name) return its first deployment's, Deployments(name) all of them.
func WithDeployments(name string, opts resilience.Options, strategy Strategy, deployments ...Deployment) Option {
	return func(b *builder) error {
		if !slices.Contains(Strategies, strategy) {
			return fmt.Errorf("client: WithDeployments(%q): unknown strategy %q (want one of %v)", name, strategy, Strategies)
		}
		if len(deployments) == 0 {
			return fmt.Errorf("client: WithDeployments(%q): no deployment", name)
		}
		seen := map[string]bool{}
		for _, d := range deployments {
			if d.Name == "" || seen[d.Name] {
				return fmt.Errorf("client: WithDeployments(%q): deployment name %q is empty or used twice", name, d.Name)
			}
			for _, v := range []struct {
				field string
				n     int
			}{{"Weight", d.Weight}, {"RequestsPerMinute", d.RequestsPerMinute}, {"TokensPerMinute", d.TokensPerMinute}} {
				if v.n < 0 || v.n > maxDeploymentValue {
					return fmt.Errorf("client: WithDeployments(%q): deployment %q: %s = %d: must be between 0 and %d",
						name, d.Name, v.field, v.n, maxDeploymentValue)
				}
			}
			seen[d.Name] = true
		}
		b.specs = append(b.specs, providerSpec{name: name, opts: opts, strategy: strategy,
			deployments: append([]Deployment(nil), deployments...)})
		return nil
	}
}

// modelFor is the model a call asking for model asks of d: the deployment's own, when it has
// one.
func (d *deployment) modelFor(model string) string {
	if d.model != "" {
		return d.model
	}
	return model
}

// maxDeploymentValue bounds a deployment's Weight and limits, as the configuration does: the
// weights of any number of deployments add up without overflow.
const maxDeploymentValue = 100_000_000

// buildDeployments makes the deployments of spec s: its one provider (WithProvider), or each
// of its deployments (WithDeployments), over a pipeline of its own.
func (c *Client) buildDeployments(s providerSpec) ([]*deployment, error) {
	specs := s.deployments
	if len(specs) == 0 {
		specs = []Deployment{{Factory: s.factory}}
	}
	var out []*deployment
	var errs []error
	for _, ds := range specs {
		name := s.name
		opts := s.opts
		if ds.Options != nil {
			opts = *ds.Options
		}
		if ds.Name != "" {
			name = s.name + "/" + ds.Name
			if ds.RequestsPerMinute > 0 {
				opts.PaceRequestsPerMinute = ds.RequestsPerMinute
			}
			if ds.TokensPerMinute > 0 {
				opts.PaceTokensPerMinute = ds.TokensPerMinute
			}
		}
		if ds.Factory == nil {
			errs = append(errs, fmt.Errorf("client: provider %q has no factory", name))
			continue
		}
		popts := []resilience.Option{resilience.WithName(name), resilience.WithClock(c.clock)}
		if obs := c.pipelineObserver(); obs != nil {
			popts = append(popts, resilience.OnEvent(obs))
		}
		if c.shared != nil {
			popts = append(popts, resilience.WithSharedState(c.shared))
		}
		var pipe atomic.Pointer[resilience.Pipeline] // for the active probe
		if s.probe != nil {
			popts = append(popts, s.activeProbe(ds, &pipe))
		}
		p, err := resilience.New(opts, popts...)
		if err != nil {
			errs = append(errs, fmt.Errorf("client: provider %q: %w", name, err))
			continue
		}
		pipe.Store(p)
		wrapped := p.Wrap(c.base)
		xt := &extrasTransport{name: s.name, next: wrapped}
		prov, err := ds.Factory(&http.Client{Transport: xt})
		if err == nil && prov == nil {
			err = errors.New("its factory returned no provider")
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("client: provider %q: %w", name, err))
			continue
		}
		if d, ok := prov.(providers.Describer); ok {
			xt.system = d.Describe().System
		}
		p.SetSharedScope(sharingScope(prov)) // before any call: fixes the shared name, reads the fleet's view
		out = append(out, &deployment{name: name, owner: s.name, provider: prov, wrapped: wrapped, pipeline: p, model: ds.Model,
			weight: max(ds.Weight, 1), firstContent: time.Duration(opts.TimeoutSeconds * float64(time.Second)),
			count: countingOf(prov, ds.Factory, s.name, xt.system, c.base)})
	}
	return out, errors.Join(errs...)
}

// DeploymentInfo is the state of one deployment, for dashboards and health.
type DeploymentInfo struct {
	// Name is "<provider>/<deployment>" (the provider's name for a provider of one).
	Name string
	// Circuit is what the deployment can serve (resilience.Pipeline.CircuitInfo): once its
	// calls name their models, the summary of its routes with its own circuit — open when
	// nothing serves, half-open when its routes only probe, closed and Degraded when some
	// routes cannot serve now, with the longest pause and the counts ("1 of 2 serving"), and
	// Failing when its calls fail for a reason of its configuration; before that, its own
	// circuit.
	Circuit resilience.CircuitInfo
	// Own is the deployment's own circuit alone — what counts for every model: a refused key,
	// an unreachable host — with the time left of its own rate-limit pause; one component of
	// Circuit.
	Own resilience.CircuitInfo
	// Headroom is what is left of its per-minute limits.
	Headroom resilience.Headroom
	// InFlight is the number of its exchanges in flight.
	InFlight int
	// Latency is what was measured of the calls that ran on the deployment's pipeline itself
	// (resilience.Pipeline.Latency): those that named no model, or every call under RouteScope
	// "deployment". Calls for a model are measured on its route, in Routes.
	Latency resilience.LatencyInfo
	// Concurrency is its bulkhead: the limit in force (the adaptive limit with
	// resilience.Options.AdaptiveConcurrency), and the calls holding and awaiting its slots.
	Concurrency resilience.Concurrency
	// Routes is the state of each model the deployment has served or been asked for, sorted
	// by model (see resilience.Pipeline.Route): its own circuit, pause, budgets and speed.
	Routes []RouteInfo
	// Hedges is how many hedges were sent to the deployment since the client was built
	// (resilience.Options.HedgeAfterSeconds, WithHedge) and reached the wire, and HedgesWon
	// how many of them served their call. HedgesUnsent is how many more hedges for it were
	// started but cancelled (or turned away) before their request went out (see
	// Accounting.HedgesUnsent): the deployment never saw them.
	Hedges, HedgesWon, HedgesUnsent int64
	// Failovers is how many calls failed on the deployment and were then sent to another
	// route (another deployment, or a later provider of the chain) since the client was built.
	Failovers int64
}

// RouteInfo is the state of one model of a deployment.
type RouteInfo struct {
	// Model is the model; "*" for the models beyond resilience.MaxRoutes, which share one.
	Model string
	// Circuit is the route's own circuit and pause, and, when its calls fail for a reason of
	// its configuration (a model the server does not have), Failing: why.
	Circuit  resilience.CircuitInfo
	Headroom resilience.Headroom
	// Latency is what the client measured of the route's calls — time to first token, time
	// per output token, their p50 and p95, error rate and samples — which StrategyLatency routes
	// by.
	Latency resilience.LatencyInfo
	// Tokens is how the route estimates prompts (see Client.EstimateTokens).
	Tokens TokenInfo
}

// TokenInfo is how a route estimates its prompts' tokens.
type TokenInfo struct {
	// Method is EstimateTokenizer for a route whose encoding is linked (Encoding names it),
	// else EstimateLearnt once it has learnt from an answer's usage, EstimateHeuristic before.
	Method   EstimateMethod
	Encoding string
	// Learnt is what the route learnt from its answers' usage (and provider counts) of the
	// weights of tokens.Heuristic's count of a prompt's text and frame
	// (resilience.Pipeline.TokenModel); 1, 1 and 0 before any. A route with a tokenizer does
	// not learn.
	Learnt resilience.TokenModel
}

// tokenInfo is how route r estimates its prompts.
func (c *Client) tokenInfo(r route) TokenInfo {
	if enc := c.encodingOf(r); enc != nil {
		return TokenInfo{Method: EstimateTokenizer, Encoding: enc.Name(), Learnt: resilience.TokenModel{Text: 1, Frame: 1}}
	}
	e := learnt(r.d.pipeline.Route(r.key), 0, 0)
	return TokenInfo{Method: e.method, Encoding: e.enc, Learnt: e.learnt()}
}

// Deployments returns the state of the deployments of provider name, in their configured
// order; nil for an unknown provider.
func (c *Client) Deployments(name string) []DeploymentInfo {
	e := c.entries[name]
	if e == nil {
		return nil
	}
	out := make([]DeploymentInfo, len(e.deps))
	for i, d := range e.deps {
		out[i] = DeploymentInfo{Name: d.name, Circuit: d.pipeline.CircuitInfo(), Own: d.pipeline.OwnCircuit(), Headroom: d.pipeline.Headroom(),
			InFlight: d.pipeline.InFlight(), Latency: d.pipeline.Latency(),
			Concurrency: d.pipeline.Concurrency(), Hedges: d.hedges.Load(), HedgesWon: d.hedgesWon.Load(), HedgesUnsent: d.hedgesUnsent.Load(),
			Failovers: d.failovers.Load()}
		for model, r := range d.pipeline.Routes() {
			out[i].Routes = append(out[i].Routes, RouteInfo{Model: model, Circuit: r.CircuitInfo(), Headroom: r.Headroom(),
				Latency: r.Latency(), Tokens: c.tokenInfo(route{e: e, d: d, model: model, key: model})})
		}
		slices.SortFunc(out[i].Routes, func(a, b RouteInfo) int { return cmp.Compare(a.Model, b.Model) })
	}
	return out
}

// takeOut takes deployment d of a provider with others out after a failure that will not pass
// by itself — its key is refused, its quota is spent — so that calls go to the others: its
// circuit opens for a break that doubles each time it is taken out again without a success in
// between (the client's take-out breaks, WithTakeOutBreaks), so a fixed key or a topped-up
// account comes back without a restart. Reset through Circuits brings it back at once.
func (c *Client) takeOut(e *entry, d *deployment, perr *providers.Error) {
	if len(e.deps) < 2 || (perr.Kind != providers.KindAuth && perr.Kind != providers.KindQuotaExhausted) {
		return
	}
	d.outMu.Lock()
	defer d.outMu.Unlock()
	now := c.now()
	if now.Before(d.outUntil) {
		return // a call that was in flight when the deployment was taken out: the same episode
	}
	n := d.outs.Add(1)
	brk := c.outFirst
	for i := int64(1); i < n && brk < c.outMax; i++ {
		brk *= 2
	}
	brk = min(brk, c.outMax)
	d.outUntil = now.Add(brk)
	d.pipeline.OpenFor(brk)
}

// now reads the client's clock (WithClock), the wall clock by default.
func (c *Client) now() time.Time {
	if c.clock != nil {
		return c.clock.Now()
	}
	return time.Now()
}

// CloseIdleConnections closes the idle keep-alive connections of every provider's transport
// (each pipeline sends through its own clone of an *http.Transport base), as
// http.Client.CloseIdleConnections does. Calls in flight are not affected.
func (c *Client) CloseIdleConnections() {
	for _, e := range c.entries {
		for _, d := range e.deps {
			if ci, ok := d.wrapped.(interface{ CloseIdleConnections() }); ok {
				ci.CloseIdleConnections()
			}
		}
	}
}
