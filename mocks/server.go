package mocks

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"
)

// Server is a fake LLM server speaking the OpenAI, Azure OpenAI and Anthropic wire formats, with
// faults chosen per call. Create it with [NewServer] and Close it when done; its methods are safe
// for concurrent use.
type Server struct {
	ts      *httptest.Server
	journal *Journal
	script  *script
	reply   string
	apiKey  string
	models  []string
	closing chan struct{} // closed by Close: ends stalls, delays and slow streams
	once    sync.Once

	cacheMu    sync.Mutex
	cache      map[[32]byte]bool // the prompts seen with a cache breakpoint (see cached)
	cacheOrder [][32]byte        // the same, oldest first from cacheNext once full
	cacheNext  int

	limiter *limiter // the rate limits (see WithRateLimits) and the budgets
	now     func() time.Time
	started time.Time      // the clock's reading at NewServer, from which outages count
	maxBody int64          // the largest body read (see WithMaxBodyBytes)
	windows map[string]int // context windows by model (see WithContextWindows); read-only
	// tokenizer counts prompt texts (see WithTokenizer); nil counts with Tokens.
	tokenizer func(string) int
	prefill   ModelSet // the models that reject a prefill (see WithRejectPrefill)

	responses     storedResponses     // the Responses answers stored, for previous_response_id
	background    backgroundResponses // the Responses answers run in background mode
	conversations conversations       // the conversations of the Conversations API

	after     func(time.Duration, func()) func() bool // the server's timers (see WithAfterFunc)
	latency   atomic.Pointer[latencyTable]            // the latency profiles in force
	latencyMu sync.Mutex                              // serialises changes to latency
	// conc counts the calls in flight and holds their limit (see concurrency.go).
	conc *concurrency

	// initial is what the server was started with, which Reset restores; admin says whether
	// the admin API answers (see admin.go).
	initial options
	admin   bool
}

// Option configures a [Server].
type Option func(*options)

type options struct {
	listener    net.Listener
	reply       string
	apiKey      string
	script      []Step
	scenarios   map[string][]Step
	routes      map[string][]Step
	use         string
	seed        int64
	chaos       float64
	models      []string
	limits      *RateLimits
	keyLimits   map[string]RateLimits
	routeLimits map[string]RateLimits
	now         func() time.Time
	maxBody     int64
	journal     JournalLimits

	modelScripts map[string][]Step
	windows      map[string]int
	prefill      ModelSet
	outages      []Outage

	after        func(time.Duration, func()) func() bool
	latency      LatencyProfile
	modelLatency map[string]LatencyProfile
	keyLatency   map[string]LatencyProfile
	routeLatency map[string]LatencyProfile
	concurrency  *ConcurrencyLimit
	noAdmin      bool
	tokenizer    func(string) int
}

// WithScript sets the default sequence of steps: each call that names no scenario takes the next
// step; once they are spent, calls get normal replies (or chaos faults). Same as [Server.Script].
func WithScript(steps ...Step) Option { return func(o *options) { o.script = steps } }

// WithRouteScript gives one route (RouteChat, RouteMessages, RouteEmbeddings…) a sequence of
// steps of its own: calls to that route take them before the default sequence (but after a
// script of their model, see [WithModelScript]), so one server can take the Anthropic side
// down while the OpenAI side serves. Once spent, the route's calls fall through to the default
// sequence. An unknown route makes NewServer panic.
func WithRouteScript(route string, steps ...Step) Option {
	return func(o *options) {
		if o.routes == nil {
			o.routes = map[string][]Step{}
		}
		o.routes[route] = steps
	}
}

// WithScenario defines the scenario name, selected per call by the [ScenarioHeader] header or
// for every call by [WithDefaultScenario]. Its steps are consumed one call at a time, across
// all the calls that select it; once spent, it answers normally.
func WithScenario(name string, steps ...Step) Option {
	return func(o *options) {
		if o.scenarios == nil {
			o.scenarios = map[string][]Step{}
		}
		o.scenarios[name] = steps
	}
}

// WithDefaultScenario makes the scenario name (user-defined or builtin) answer the calls that
// name none, in place of a script. An unknown name makes NewServer panic.
func WithDefaultScenario(name string) Option { return func(o *options) { o.use = name } }

// WithChaos injects a random fault into a fraction rate (0 to 1) of the calls that no script or
// scenario answers. The choice is drawn from a source seeded with seed, so the same seed and
// the same order of calls give the same faults. Stalls are never drawn.
func WithChaos(seed int64, rate float64) Option {
	return func(o *options) { o.seed, o.chaos = seed, rate }
}

// WithReply sets the text of every successful reply ("" = echo the last user message).
func WithReply(text string) Option { return func(o *options) { o.reply = text } }

// WithAPIKey makes the server accept only key; by default any non-empty key is accepted.
func WithAPIKey(key string) Option { return func(o *options) { o.apiKey = key } }

// WithModels sets the models that GET /v1/models lists.
func WithModels(ids ...string) Option { return func(o *options) { o.models = ids } }

// WithListener serves on l instead of a new listener on 127.0.0.1 with a free port. The server
// takes ownership of l. This is for the fakellm command; tests should not need it.
func WithListener(l net.Listener) Option { return func(o *options) { o.listener = l } }

// WithConfig applies a scenario file (see [ParseConfig]).
func WithConfig(cfg *Config) Option {
	return func(o *options) {
		if cfg.Reply != "" {
			o.reply = cfg.Reply
		}
		if len(cfg.Script) > 0 {
			o.script = cfg.Script
		}
		for name, steps := range cfg.Scenarios {
			WithScenario(name, steps...)(o)
		}
		for route, steps := range cfg.Routes {
			WithRouteScript(route, steps...)(o)
		}
		if cfg.Default != "" {
			o.use = cfg.Default
		}
		if cfg.Chaos > 0 {
			o.seed, o.chaos = cfg.Seed, cfg.Chaos
		}
		if cfg.Limits != nil {
			WithRateLimits(*cfg.Limits)(o)
		}
		for key, l := range cfg.KeyLimits {
			WithKeyRateLimits(key, l)(o)
		}
		if cfg.MaxBodyBytes > 0 {
			o.maxBody = cfg.MaxBodyBytes
		}
		if cfg.Journal != nil {
			o.journal = *cfg.Journal
		}
		for model, steps := range cfg.Models {
			WithModelScript(model, steps...)(o)
		}
		WithContextWindows(cfg.ContextWindows)(o)
		if cfg.RejectPrefill.All {
			WithRejectPrefill()(o)
		} else if len(cfg.RejectPrefill.Models) > 0 {
			WithRejectPrefill(cfg.RejectPrefill.Models...)(o)
		}
		WithOutage(cfg.Outages...)(o)
		if cfg.Latency != nil {
			o.latency = *cfg.Latency
		}
		for model, p := range cfg.ModelLatency {
			WithModelLatency(model, p)(o)
		}
		for key, p := range cfg.KeyLatency {
			WithKeyLatency(key, p)(o)
		}
		for route, p := range cfg.RouteLatency {
			WithRouteLatency(route, p)(o)
		}
		for route, l := range cfg.RouteLimits {
			WithRouteRateLimits(route, l)(o)
		}
		if cfg.Concurrency != nil {
			WithConcurrencyLimit(*cfg.Concurrency)(o)
		}
	}
}

// NewServer starts a fake LLM server on 127.0.0.1 with a free port (never another address
// unless [WithListener] gives one). It panics if it cannot listen, like httptest.NewServer.
func NewServer(opts ...Option) *Server {
	o := options{models: defaultModels}
	for _, opt := range opts {
		if opt == nil {
			continue // a nil option is no option
		}
		opt(&o)
	}
	if err := o.check(); err != nil {
		panic(err.Error())
	}
	s := &Server{
		journal: newJournal(o.journal),
		script:  newScript(),
		reply:   o.reply,
		apiKey:  o.apiKey,
		models:  o.models,
		closing: make(chan struct{}),
		limiter: newLimiter(o.limits, o.routeLimits, o.keyLimits),
		conc:    newConcurrency(o.concurrency),
		now:     o.now,
		maxBody: o.maxBody,
		after:   o.after,
		initial: o,
		admin:   !o.noAdmin,
	}
	if s.after == nil {
		s.after = wallAfter
	}
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBodyBytes
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.started = s.now()
	s.windows, s.prefill = o.windows, o.prefill
	s.tokenizer = o.tokenizer
	s.script.load(&o, s.outageWindows(o.outages))
	s.setLatencies(&o)
	l := o.listener
	if l == nil {
		var err error
		if l, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			panic(fmt.Sprintf("mocks: listen on 127.0.0.1: %v", err))
		}
	}
	s.ts = &httptest.Server{Listener: l, Config: &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}}
	s.ts.Start()
	return s
}

// URL returns the server's base URL, such as http://127.0.0.1:41234.
func (s *Server) URL() string { return s.ts.URL }

// OpenAIBaseURL returns the base URL for OpenAI clients: URL() + "/v1".
func (s *Server) OpenAIBaseURL() string { return s.ts.URL + "/v1" }

// AnthropicBaseURL returns the base URL for Anthropic clients: URL(), as they add /v1 themselves.
func (s *Server) AnthropicBaseURL() string { return s.ts.URL }

// Client returns an HTTP client for the server whose idle connections Close releases.
func (s *Server) Client() *http.Client { return s.ts.Client() }

// Journal returns the record of the requests received.
func (s *Server) Journal() *Journal { return s.journal }

// Script replaces the default sequence of steps and rewinds it (see [WithScript]).
func (s *Server) Script(steps ...Step) { s.script.setDefault(steps) }

// RouteScript replaces (and rewinds) the sequence of steps of one route (see
// [WithRouteScript]).
func (s *Server) RouteScript(route string, steps ...Step) {
	if !validRoute(route) {
		panic(fmt.Sprintf("mocks: unknown route %q (want one of %v)", route, Routes))
	}
	s.script.setRoute(route, steps)
}

func validRoute(route string) bool {
	for _, r := range Routes {
		if r == route {
			return true
		}
	}
	return false
}

// Scenario defines or redefines (and rewinds) the scenario name (see [WithScenario]).
func (s *Server) Scenario(name string, steps ...Step) { s.script.setScenario(name, steps) }

// UseScenario makes the scenario name answer the calls that name none, replacing the default
// sequence; it fails for an unknown name.
func (s *Server) UseScenario(name string) error { return s.script.use(name) }

// Chaos turns chaos mode on with the given seed and rate (see [WithChaos]); rate <= 0 turns it off.
func (s *Server) Chaos(seed int64, rate float64) { s.script.setChaos(seed, rate) }

// Close ends every stall, delay and slow stream in progress (their connections drop without a
// response), then shuts the server down and waits for its handlers. It is safe to call twice.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.closing)
		s.ts.Close()
	})
}

// ServeHTTP answers one call. It is exported so the server can also be mounted elsewhere.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.admin && isAdminPath(r.URL.Path) {
		s.serveAdmin(w, r)
		return
	}
	arrived := time.Now()
	latency := s.latency.Load() // the profiles in force when the request arrived
	s.journal.enter()
	defer s.journal.leave()
	body, readErr := readBody(w, r, s.maxBody)
	entry := s.journal.record(r, body, arrived)
	c := &call{s: s, w: w, r: r, seq: entry.Seq}
	rt, ok := route(r)
	c.api, c.endpoint, c.deployment, c.route = rt.api, rt.endpoint, rt.deployment, rt.key()
	reject := func(status int, errType, message, note string) {
		s.journal.setStep(entry, "", fmt.Sprintf("%d %s", status, note))
		c.headers(Step{Status: status})
		c.writeError(Step{Status: status, ErrorType: errType, Message: message})
	}
	switch {
	case !ok:
		reject(http.StatusNotFound, "", "Unknown request URL: "+r.Method+" "+r.URL.Path, "route")
		return
	case r.Method != rt.method:
		reject(http.StatusMethodNotAllowed, "", "Method "+r.Method+" not allowed on "+r.URL.Path, "method")
		return
	case readErr != nil:
		reject(http.StatusRequestEntityTooLarge, "request_too_large", tooLargeMessage(s.maxBody), "size")
		return
	}
	if msg := c.checkAuth(); msg != "" {
		reject(http.StatusUnauthorized, "", msg, "auth")
		return
	}
	if msg := c.checkRequest(); msg != "" {
		reject(http.StatusBadRequest, "", msg, "header")
		return
	}
	if rt.endpoint == storedEndpoint {
		s.journal.setStep(entry, "", c.serveStored(rt))
		return
	}
	if rt.endpoint == conversationsEndpoint {
		s.journal.setStep(entry, "", c.serveConversation(rt, body))
		return
	}
	now := s.now()
	if err := c.parse(body); err != nil {
		if nf, ok := isNotFound(err); ok {
			s.journal.setStep(entry, "", "404 "+nf.param)
			c.writeNotFound(nf)
			return
		}
		var pe *paramError
		if errors.As(err, &pe) {
			s.journal.setStep(entry, "", "400 "+pe.param)
			c.headers(Step{Status: http.StatusBadRequest})
			c.writeErrorParam(Step{Status: http.StatusBadRequest, Message: pe.msg}, pe.param)
			return
		}
		reject(http.StatusBadRequest, "", err.Error(), "body")
		return
	}
	if note, refused := c.checkModel(); refused {
		s.journal.setStep(entry, "", note)
		return
	}
	if !s.conc.admit(c, entry) {
		return
	}
	defer s.conc.leave(c)
	if c.endpoint != modelsEndpoint && c.endpoint != countEndpoint {
		if b, limited := s.limiter.admit(c.route, c.apiKey(), c.cost(), now); limited {
			c.budget, c.budgetAt = &b, now
			if b.limited {
				s.journal.setStep(entry, "", "429 rate limit")
				c.serve(Step{Status: http.StatusTooManyRequests, RetryAfter: b.retryAfter,
					Message: "Rate limit reached for requests or tokens per minute. Please try again in " +
						b.retryAfter.Round(time.Millisecond).String() + "."})
				return
			}
		}
	}
	st, scenario, err := s.script.next(selector{header: r.Header.Get(ScenarioHeader), route: c.route,
		model: c.model, now: now})
	if err != nil {
		reject(http.StatusBadRequest, "", err.Error(), "scenario")
		return
	}
	s.journal.setStep(entry, scenario, st.String())
	if c.delayable(st) {
		if p := latency.pick(c.apiKey(), c.model, c.route); p != nil {
			c.lat = p.draw()
			s.journal.setLatency(entry, c.lat.firstToken, c.lat.straggler)
		}
	}
	c.serve(st)
}

// requestID returns the deterministic id of call seq, with the provider's prefix.
func (s *Server) requestID(prefix string, seq int) string {
	return fmt.Sprintf("%s%020d", prefix, seq)
}
