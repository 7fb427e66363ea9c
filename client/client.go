package client

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// Client calls LLM providers through one resilience pipeline per provider, and falls back
// along an ordered chain when a provider is down. It is safe for concurrent use.
type Client struct {
	entries   map[string]*entry
	order     []string // providers in the order they were added
	chain     []string // the fallback chain; the first provider alone when none is set
	base      http.RoundTripper
	observer  resilience.Observer
	clock     resilience.Clock              // nil: the wall clock
	shared    resilience.SharedState        // nil: each instance alone
	closers   []io.Closer                   // closed by Close
	telemetry Telemetry                     // nil: no telemetry, at no cost
	policies  map[string]*resilience.Policy // the named policies of WithPolicy
	// failoverAfter is the longest a call waits on a provider when another can serve it at
	// once (WithFailoverAfter); 0 or less: it does not wait.
	failoverAfter time.Duration
	// outFirst and outMax are the first and the longest break of a deployment taken out for a
	// refused key or a spent quota (WithTakeOutBreaks).
	outFirst, outMax time.Duration
	closeOnce        sync.Once // Close
	// windows are the context windows providers declare (WithContextWindow); fallbackOn the
	// chains of the kinds that have one (WithFallbackOn).
	windows    map[string]contextWindow
	fallbackOn map[providers.ErrorKind][]string
	// continuations are how providers' routes continue an answer (WithContinuation).
	continuations map[string]continuations
	// encodings are the encodings WithTokenEncoding chose, by provider; estimating is set for
	// a client whose every try estimates its prompt (budgets or context windows need
	// estimates the routes have learnt: see estimate.go).
	encodings  map[string]encodingChoice
	estimating bool
	// dice is where the routing strategies draw at random (WithRandomSource); nil: the
	// runtime's generator.
	dice *dice
	// cost is the cost accounting (WithPrices, WithBudgets); nil: calls are not priced.
	cost *costing
	// races are the hedge races of calls that sent no hedge, for the next hedged call (see
	// race).
	races sync.Pool
	// warnings are what New found suspicious in the configuration, without refusing it
	// (Warnings).
	warnings []string
}

// The default take-out breaks (WithTakeOutBreaks).
const (
	DefaultTakeOutBreak    = 30 * time.Second
	DefaultMaxTakeOutBreak = time.Hour
)

// WithTakeOutBreaks sets how long a deployment of a provider with several is taken out after
// its key is refused (auth) or its quota is spent: first for first, then twice as long each
// time it fails so again before a success, up to longest. Meanwhile its circuit is open (the
// calls go to the other deployments, health shows the provider degraded); after the break one
// call probes it. The calls that were in flight when it was taken out, refused too, count as
// the same take-out. Defaults DefaultTakeOutBreak and DefaultMaxTakeOutBreak. Both must be
// above 0, with longest not below first and at most a day.
func WithTakeOutBreaks(first, longest time.Duration) Option {
	return func(b *builder) error {
		if first <= 0 || longest < first || longest > 24*time.Hour {
			return fmt.Errorf("client: WithTakeOutBreaks(%s, %s): both must be above 0, the longest not below the first "+
				"and at most 24h", first, longest)
		}
		b.c.outFirst, b.c.outMax = first, longest
		return nil
	}
}

// DefaultFailoverAfter is the default of WithFailoverAfter.
const DefaultFailoverAfter = 2 * time.Second

// WithFailoverAfter sets how long a call waits on a provider — a rate-limit pause, a server's
// "retry after", a backoff — when another provider of the chain can serve it at once: a
// longer wait fails over at once instead (the failure's GaveUp says "wait_too_long", or the
// call is refused by the cooldown without being sent). When no other provider can serve, the
// call waits as its policy and deadline allow. 0 never waits while another can serve.
// The default is DefaultFailoverAfter.
func WithFailoverAfter(d time.Duration) Option {
	return func(b *builder) error {
		if d < 0 {
			return fmt.Errorf("client: WithFailoverAfter(%s): must be 0 or more", d)
		}
		b.c.failoverAfter = d
		return nil
	}
}

type entry struct {
	name     string
	provider providers.Provider
	pipeline *resilience.Pipeline
	model    string            // the provider's default model
	models   map[string]string // model names of the first provider mapped to this one's
	// deps are the provider's deployments (one for WithProvider); provider and pipeline are
	// the first one's. strategy routes among them, next is StrategyRoundRobin's turn.
	deps     []*deployment
	strategy Strategy
	next     atomic.Uint64
	dice     *dice // the client's
	// system and providerModel are the provider's own Description, for telemetry.
	system, providerModel string
	// caps is what the provider can do (providers.CapabilitiesOf).
	caps providers.Capabilities
	// shape is the body fields its deployments set to decide the kind of call, which a call's
	// extra fields may not replace (providers.Shaper).
	shape []string
}

// ProviderFactory builds a provider over the *http.Client the client gives it, whose transport
// is the provider's own resilience pipeline. The provider must make all its calls with it.
type ProviderFactory func(httpClient *http.Client) (providers.Provider, error)

// Option configures a Client.
type Option func(*builder) error

type builder struct {
	c     *Client
	specs []providerSpec
}

type providerSpec struct {
	name         string
	opts         resilience.Options
	factory      ProviderFactory
	model        string
	models       map[string]string
	strategy     Strategy      // WithDeployments
	deployments  []Deployment  // WithDeployments
	probe        Probe         // WithActiveProbe
	probeTimeout time.Duration // WithActiveProbe
}

// WithProvider adds a provider named name with its own resilience options (its pipeline's:
// start from resilience.DefaultOptions, or a named policy of the configuration). The factory
// is called once, by New, with the provider's resilient *http.Client.
func WithProvider(name string, opts resilience.Options, factory ProviderFactory) Option {
	return func(b *builder) error {
		b.specs = append(b.specs, providerSpec{name: name, opts: opts, factory: factory})
		return nil
	}
}

// WithDefaultModel sets the model used with provider name when a request names none, and
// when the chain falls back to it from another provider without a mapping (WithModelMap).
func WithDefaultModel(name, model string) Option {
	return func(b *builder) error {
		s := b.spec(name)
		if s == nil {
			return fmt.Errorf("client: WithDefaultModel: unknown provider %q", name)
		}
		s.model = model
		return nil
	}
}

// WithModelMap maps the models requested of the chain's first provider to provider name's
// own model names, for fallback: {"gpt-4o": "claude-sonnet-4-5"}.
func WithModelMap(name string, models map[string]string) Option {
	return func(b *builder) error {
		s := b.spec(name)
		if s == nil {
			return fmt.Errorf("client: WithModelMap: unknown provider %q", name)
		}
		s.models = models
		return nil
	}
}

// WithFallback sets the ordered chain of providers to try. Without it, calls go to the first
// provider added, with no fallback.
func WithFallback(names ...string) Option {
	return func(b *builder) error {
		b.c.chain = append([]string(nil), names...)
		return nil
	}
}

// WithBaseTransport sets the transport under every pipeline (default http.DefaultTransport).
func WithBaseTransport(rt http.RoundTripper) Option {
	return func(b *builder) error {
		b.c.base = rt
		return nil
	}
}

// WithClock runs every provider's pipeline on clock instead of the wall clock (see
// resilience.WithClock): backoffs, pauses, time limits and per-minute limits. For tests.
func WithClock(clock resilience.Clock) Option {
	return func(b *builder) error {
		b.c.clock = clock
		return nil
	}
}

// WithSharedState shares every provider's (and deployment's) circuit state, rate-limit pauses
// and per-minute limits with the application's other instances through s (see
// resilience.WithSharedState; github.com/steadyllm/steady/state/redis is a store on Redis).
// The client does not close s.
func WithSharedState(s resilience.SharedState) Option {
	return func(b *builder) error {
		if s == nil {
			return errors.New("client: WithSharedState with a nil store")
		}
		b.c.shared = s
		return nil
	}
}

// WithCloser hands c to the client, which closes it in Close: a store the client's builder
// opened for it (steady.FromConfig opens the LLM.SharedState store this way).
func WithCloser(c io.Closer) Option {
	return func(b *builder) error {
		if c == nil {
			return errors.New("client: WithCloser with nil")
		}
		b.c.closers = append(b.c.closers, c)
		return nil
	}
}

// Close releases what the client holds: its idle connections, its pipelines' place in the
// shared state (resilience.Pipeline.StopSharing: the store stops refreshing them) and what was
// handed to it with WithCloser. Calls made after Close may fail; those that go through share
// nothing. Close is idempotent: later calls do nothing and return nil.
func (c *Client) Close() error {
	var err error
	c.closeOnce.Do(func() {
		c.CloseIdleConnections()
		if l := c.Ledger(); l != nil {
			_ = l.Close() // the refills of the fleet's leases under way
		}
		for _, e := range c.entries {
			for _, d := range e.deps {
				d.pipeline.StopSharing()
				_ = d.pipeline.Close() // an active probe's timer, if any
			}
		}
		var errs []error
		for _, cl := range c.closers {
			errs = append(errs, cl.Close())
		}
		err = errors.Join(errs...)
	})
	return err
}

// sharingScope returns what provider p calls, for its pipeline's shared state
// (providers.Scoper), "" when it does not say.
func sharingScope(p providers.Provider) string {
	if s, ok := p.(providers.Scoper); ok {
		return s.SharingScope()
	}
	return ""
}

// SharedState returns the store the client shares its state through (WithSharedState), nil
// when none. health.Checker.AddSet reads it to report the store's trouble.
func (c *Client) SharedState() resilience.SharedState { return c.shared }

// WithObserver sends the resilience events of every provider's pipeline to fn; Event.Pipeline
// is the provider's name.
func WithObserver(fn resilience.Observer) Option {
	return func(b *builder) error {
		b.c.observer = fn
		return nil
	}
}

func (b *builder) spec(name string) *providerSpec {
	for i := range b.specs {
		if b.specs[i].name == name {
			return &b.specs[i]
		}
	}
	return nil
}

// New builds a client: one resilience pipeline per provider (named after it, so events and
// errors say which provider), then each provider over its pipeline.
func New(opts ...Option) (*Client, error) {
	b := &builder{c: &Client{entries: map[string]*entry{}, base: http.DefaultTransport, failoverAfter: DefaultFailoverAfter,
		outFirst: DefaultTakeOutBreak, outMax: DefaultMaxTakeOutBreak}}
	for _, o := range opts {
		if o == nil {
			continue // a nil option is no option
		}
		if err := o(b); err != nil {
			return nil, err
		}
	}
	c := b.c
	var errs []error
	c.startCosting()
	for _, s := range b.specs {
		if _, dup := c.entries[s.name]; dup || s.name == "" {
			errs = append(errs, fmt.Errorf("client: provider name %q is empty or used twice", s.name))
			continue
		}
		deps, err := c.buildDeployments(s)
		if err != nil {
			errs = append(errs, err)
			for _, d := range deps {
				d.pipeline.StopSharing() // built, and joined the store, before another failed
				_ = d.pipeline.Close()   // its active probe, if any
			}
			continue
		}
		d0 := deps[0]
		e := &entry{name: s.name, provider: d0.provider, pipeline: d0.pipeline, model: s.model, models: s.models,
			deps: deps, strategy: s.strategy, dice: c.dice}
		if d, ok := d0.provider.(providers.Describer); ok {
			desc := d.Describe()
			e.system, e.providerModel = desc.System, desc.DefaultModel
		}
		e.caps = providers.CapabilitiesOf(d0.provider)
		for _, d := range deps[1:] {
			e.caps &= providers.CapabilitiesOf(d.provider) // what every deployment can do
		}
		for _, d := range deps {
			if ds, ok := d.provider.(providers.Shaper); ok {
				for _, f := range ds.ShapeFields() {
					if !slices.Contains(e.shape, f) {
						e.shape = append(e.shape, f)
					}
				}
			}
		}
		c.entries[s.name] = e
		c.order = append(c.order, s.name)
	}
	if len(b.specs) == 0 {
		errs = append(errs, errors.New("client: no provider configured"))
	}
	if len(c.chain) == 0 && len(c.order) > 0 {
		c.chain = c.order[:1]
	}
	for _, name := range c.chain {
		if b.spec(name) == nil {
			errs = append(errs, fmt.Errorf("client: fallback names unknown provider %q", name))
		}
	}
	errs = append(errs, c.checkFallbackOn()...)
	errs = append(errs, c.checkEncodings()...)
	c.warnModels()
	if len(errs) == 0 {
		errs = append(errs, c.startLedger())
	}
	if err := errors.Join(errs...); err != nil {
		for _, e := range c.entries {
			for _, d := range e.deps {
				d.pipeline.StopSharing() // a client that is never returned must not stay in the store's polls
				_ = d.pipeline.Close()
			}
		}
		return nil, err
	}
	c.estimating = len(c.windows) > 0 || c.Ledger() != nil
	return c, nil
}

// Provider returns the provider named name, or nil. Type-assert it to reach the provider's
// own client (for example *openai.Provider's Client()) for features the neutral API lacks;
// it already runs over the resilient transport.
func (c *Client) Provider(name string) providers.Provider {
	if e := c.entries[name]; e != nil {
		return e.provider
	}
	return nil
}

// Pipeline returns the resilience pipeline of provider name, or nil.
func (c *Client) Pipeline(name string) *resilience.Pipeline {
	if e := c.entries[name]; e != nil {
		return e.pipeline
	}
	return nil
}

// Circuits returns every provider's pipeline by name, for health checks
// (health.Checker.AddSet) and dashboards. A provider with several deployments
// (WithDeployments) has one entry per deployment, "<provider>/<deployment>".
func (c *Client) Circuits() map[string]*resilience.Pipeline {
	m := make(map[string]*resilience.Pipeline, len(c.entries))
	for _, e := range c.entries {
		for _, d := range e.deps {
			m[d.name] = d.pipeline
		}
	}
	return m
}

// CircuitGroups returns, for every provider with several deployments, the names of its
// deployments' circuits as Circuits names them, so that a health check judges them together
// (health.Checker.AddSet): the provider serves while any of its deployments can.
func (c *Client) CircuitGroups() map[string][]string {
	m := map[string][]string{}
	for _, e := range c.entries {
		if len(e.deps) < 2 {
			continue
		}
		for _, d := range e.deps {
			m[e.name] = append(m[e.name], d.name)
		}
	}
	return m
}

// Chain returns the fallback chain in order.
func (c *Client) Chain() []string { return append([]string(nil), c.chain...) }

// modelFor picks the model to ask provider e for, given the model requested of the chain.
func (c *Client) modelFor(e *entry, requested string, first bool) string {
	if requested == "" {
		return e.model
	}
	if first {
		return requested
	}
	if m, ok := e.models[requested]; ok {
		return m
	}
	if e.model != "" {
		return e.model
	}
	return requested
}

// Warnings returns what New found suspicious in the client's configuration without refusing
// it: a provider calling its vendor's own service (api.openai.com, api.anthropic.com) with a
// model of another vendor's family (an OpenAI model name under the Anthropic provider, a Claude
// model under OpenAI's), whose every call would fail with not_found. A compatible server, a
// proxy or a gateway may serve any vendor's models, and Azure's models are deployment names:
// those are not checked. steady.FromConfig logs the warnings. The slice is the caller's.
func (c *Client) Warnings() []string { return slices.Clone(c.warnings) }

// warnModels records a warning for each model a deployment on its vendor's own host
// (providers.Description.VendorHost) is configured with — its own, else the provider's default
// and the model map's (WithModelMap) — whose name belongs to another GenAI system's family
// (providers.ModelFamily).
func (c *Client) warnModels() {
	for _, name := range c.order {
		e := c.entries[name]
		for _, d := range e.deps {
			desc, ok := d.provider.(providers.Describer)
			if !ok {
				continue
			}
			own := desc.Describe()
			if !own.VendorHost {
				continue
			}
			for _, m := range e.configuredModels(d) {
				if f := providers.ModelFamily(m); f != "" && f != own.System {
					c.warnings = append(c.warnings, fmt.Sprintf("client: provider %q (deployment %q, %s) is configured "+
						"with the model %q, a model of %s: its calls will fail with not_found", name, d.name, own.System, m, f))
				}
			}
		}
	}
}
