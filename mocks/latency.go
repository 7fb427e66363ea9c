package mocks

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// LatencyProfile is how long a deployment or a model takes to answer: a time to first token
// drawn per request, with a tail of stragglers, and optionally a pace between the words of a
// stream. Hedged requests and latency-aware routing are tested against it: a profile per model
// ([WithModelLatency]), per route ([WithRouteLatency]) or per API key ([WithKeyLatency], one
// key per deployment), or one for every request ([WithLatency]), each changeable while the
// server runs ([Server.Latency], [Server.ModelLatency], [Server.RouteLatency],
// [Server.KeyLatency], or the admin API).
//
// Each request the profile delays draws its first-token delay: with probability
// StragglerRate (or, with StragglerEvery, every n-th request exactly) it is a straggler and
// waits Straggler; otherwise it waits FirstToken, spread log-normally around it when Spread is
// set (real times to first token are skewed to the right: a long tail of slow answers and a
// short one of fast ones), plus a jitter drawn uniformly from [0, Jitter]. Draws come from a
// source seeded with Seed, so the same seed and the same order of requests give the same
// delays; StragglerEvery makes the count of stragglers exact whatever the order. The
// [Journal] records each request's delay and whether it straggled ([Request].FirstTokenDelay,
// [Request].Straggler, [JournalStats].Stragglers).
//
// Where the delay falls: a JSON answer is held back whole (no header, no byte); a stream is
// too, unless HeadersFirst, when its 200 headers and preamble go out at once and the delay
// comes before its first content event, where [Step.FirstTokenDelay] falls (a slow provider
// often answers 200 and then thinks). Only answers with content are delayed — chat, messages
// and embeddings that the step answers 200 (a normal reply, a tool call, a refusal, a stream
// with a cut or error event later) — not an error status, a reset, a stall, a malformed body,
// GET /v1/models, or a request refused before a step was chosen; those draw nothing. The
// profile's delays add to the step's own (a step's Delay, say, comes first).
//
// Every wait runs on the server's timers ([WithAfterFunc]: a test's manual clock makes them
// cost nothing) and ends at once, dropping the connection, when the client goes away or the
// server closes: a hedge's cancelled loser frees its handler without waiting its delay out.
//
// The zero LatencyProfile delays nothing. Durations must lie in [0, [MaxLatencyDelay]],
// StragglerRate in [0, 1], Spread in [0, [MaxLatencySpread]], StragglerEvery in
// [0, math.MaxInt32], and StragglerRate and StragglerEvery cannot both be set:
// [LatencyProfile.Validate] names the field, its value and the allowed range.
type LatencyProfile struct {
	// FirstToken is the time to first token of a request that does not straggle.
	FirstToken time.Duration
	// Jitter, when positive, adds to FirstToken a delay drawn uniformly from [0, Jitter]
	// (after Spread, when both are set).
	Jitter time.Duration
	// Spread, when positive, makes a request that does not straggle wait
	// FirstToken × exp(Spread × Z) instead of FirstToken, Z drawn from a standard normal
	// distribution with the seeded source: a log-normal delay whose median is FirstToken and
	// whose logarithm has the standard deviation Spread. 0.25 puts the 95th percentile at
	// about 1.51 × FirstToken and the 99th at 1.79 ×; 0.85 puts them at 4.05 × and 7.2 ×.
	// The spread delay is cut at [MaxLatencyDelay], and Jitter, when set too, adds to it. A
	// straggler waits Straggler whatever the Spread (so a request that does not straggle may
	// wait longer than one that does). 0 spreads nothing and takes nothing from the source; a
	// positive Spread takes one draw per request that does not straggle, after the
	// straggler's draw and before the jitter's. At most [MaxLatencySpread].
	Spread float64
	// StragglerRate is the fraction of requests, from 0 to 1, that straggle, drawn from the
	// seeded source: a rate of 0.05 gives about one straggler in twenty, 1 makes every
	// request a straggler.
	StragglerRate float64
	// StragglerEvery, when positive, makes exactly every StragglerEvery-th request the profile
	// delays a straggler (the n-th, the 2n-th, …, counted from when the profile was set), for
	// benchmarks that need exact counts; it takes no draw. 0: see StragglerRate.
	StragglerEvery int
	// Straggler is how long a straggler waits for its first token, instead of FirstToken, the
	// spread and the jitter.
	Straggler time.Duration
	// ChunkDelay waits this long before each content event of a stream after the first (the
	// words of the answer, see [Step]); a JSON answer ignores it.
	ChunkDelay time.Duration
	// HeadersFirst sends a stream's 200 headers and preamble at once and waits before its
	// first content event, instead of holding the whole stream back. A JSON answer ignores it.
	HeadersFirst bool
	// Seed seeds the source of the jitter, of Spread and of StragglerRate (0 is a seed like
	// any other).
	Seed uint64
}

// MaxLatencyDelay bounds each duration of a [LatencyProfile]: a day, longer than any test
// waits (a wait ends with its client anyway), and small enough that no sum of them overflows.
const MaxLatencyDelay = 24 * time.Hour

// MaxLatencySpread bounds [LatencyProfile].Spread: at 4 the 99th percentile is already
// 11,000 times the median, more than a test of latency has use for.
const MaxLatencySpread = 4.0

// WithLatency gives every request the profile p (see [LatencyProfile]), unless a profile of
// its API key or its model applies. NewServer panics for an invalid profile.
func WithLatency(p LatencyProfile) Option { return func(o *options) { o.latency = p } }

// WithRouteLatency gives the requests to route (one of [Routes]) the profile p, unless their API
// key or their model has one (see [Server.RouteLatency]). The zero profile removes the
// route's. NewServer panics for an invalid profile or an unknown route.
func WithRouteLatency(route string, p LatencyProfile) Option {
	return func(o *options) {
		if o.routeLatency == nil {
			o.routeLatency = map[string]LatencyProfile{}
		}
		o.routeLatency[route] = p
	}
}

// WithModelLatency gives the requests for model (the body's "model", or the Azure deployment of
// the path) the profile p, unless their API key has one (see [Server.ModelLatency]). The zero
// profile removes the model's. NewServer panics for an invalid profile, an empty model name or
// more than [MaxModels] models.
func WithModelLatency(model string, p LatencyProfile) Option {
	return func(o *options) {
		if o.modelLatency == nil {
			o.modelLatency = map[string]LatencyProfile{}
		}
		o.modelLatency[model] = p
	}
}

// WithKeyLatency gives the requests made with the API key key the profile p, whatever their
// model (see [Server.KeyLatency]): one server, one key per deployment, and each deployment
// has its own latency. The zero profile removes the key's. NewServer panics for an invalid
// profile, an empty key or more than [MaxModels] keys.
func WithKeyLatency(key string, p LatencyProfile) Option {
	return func(o *options) {
		if o.keyLatency == nil {
			o.keyLatency = map[string]LatencyProfile{}
		}
		o.keyLatency[key] = p
	}
}

// Latency replaces the profile of every request (see [WithLatency]); the zero profile removes
// it. It applies to the requests that arrive after it returns (a request takes the profiles
// in force when the server began handling it, [Request].Arrived), and restarts the profile's
// count and its source. It returns the profile's error, changing nothing, when p is invalid.
// It is safe for concurrent use, as are ModelLatency and KeyLatency.
func (s *Server) Latency(p LatencyProfile) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("mocks: latency: %w", err)
	}
	return s.updateLatency(func(t *latencyTable) error {
		t.all = nil
		if p != (LatencyProfile{}) {
			t.all = newLatencyState(p)
		}
		return nil
	})
}

// ModelLatency replaces the profile of one model (see [WithModelLatency]), as Latency does for
// every request; the zero profile removes it. A request takes the profile of its API key if
// it has one ([Server.KeyLatency]), else its model's, else the profile of every request. It
// fails for an invalid profile, an empty model name or a model beyond [MaxModels].
func (s *Server) ModelLatency(model string, p LatencyProfile) error {
	if model == "" {
		return errors.New("mocks: model latency: the model name is empty")
	}
	if err := p.Validate(); err != nil {
		return fmt.Errorf("mocks: model latency %q: %w", clip(model, maxScenarioName), err)
	}
	return s.updateLatency(func(t *latencyTable) error { return setLatency(t.models, "model", model, p) })
}

// RouteLatency replaces the profile of the requests to one route (see [WithRouteLatency]), as
// Latency does for every request; the zero profile removes it. A request takes the profile of
// its API key, else its model's, else its route's, else the profile of every request. It
// fails for an invalid profile or an unknown route.
func (s *Server) RouteLatency(route string, p LatencyProfile) error {
	if !validRoute(route) {
		return fmt.Errorf("mocks: route latency: unknown route %q (want one of %v)", clip(route, maxScenarioName), Routes)
	}
	if err := p.Validate(); err != nil {
		return fmt.Errorf("mocks: route latency %s: %w", route, err)
	}
	return s.updateLatency(func(t *latencyTable) error { return setLatency(t.routes, "route", route, p) })
}

// KeyLatency replaces the profile of the requests made with one API key (see
// [WithKeyLatency]), as Latency does for every request; the zero profile removes it. It fails
// for an invalid profile, an empty key or a key beyond [MaxModels]; its errors do not repeat
// the key, a secret.
func (s *Server) KeyLatency(key string, p LatencyProfile) error {
	if key == "" {
		return errors.New("mocks: key latency: the key is empty")
	}
	if err := p.Validate(); err != nil {
		return fmt.Errorf("mocks: key latency: %w", err)
	}
	return s.updateLatency(func(t *latencyTable) error { return setLatency(t.keys, "key", key, p) })
}

// setLatency sets (or, for the zero profile, removes) the profile of name in m.
func setLatency(m map[string]*latencyState, kind, name string, p LatencyProfile) error {
	if p == (LatencyProfile{}) {
		delete(m, name)
		return nil
	}
	if _, ok := m[name]; !ok && len(m) >= MaxModels {
		return fmt.Errorf("mocks: %s latency: more than %d %ss have a profile", kind, MaxModels, kind)
	}
	m[name] = newLatencyState(p)
	return nil
}

// updateLatency publishes a changed copy of the latency table: a request reads the table of
// its arrival without a lock, and a change never shows half done.
func (s *Server) updateLatency(change func(t *latencyTable) error) error {
	s.latencyMu.Lock()
	defer s.latencyMu.Unlock()
	t := &latencyTable{models: map[string]*latencyState{}, keys: map[string]*latencyState{}, routes: map[string]*latencyState{}}
	if old := s.latency.Load(); old != nil {
		t.all, t.models, t.keys, t.routes = old.all, maps.Clone(old.models), maps.Clone(old.keys), maps.Clone(old.routes)
	}
	if err := change(t); err != nil {
		return err
	}
	s.latency.Store(t)
	return nil
}

// setLatencies applies the latency options to a new server.
func (s *Server) setLatencies(o *options) {
	errs := []error{s.Latency(o.latency)}
	for model, p := range o.modelLatency {
		errs = append(errs, s.ModelLatency(model, p))
	}
	for key, p := range o.keyLatency {
		errs = append(errs, s.KeyLatency(key, p))
	}
	for route, p := range o.routeLatency {
		errs = append(errs, s.RouteLatency(route, p))
	}
	if err := errors.Join(errs...); err != nil {
		panic(err.Error())
	}
}

// latencyTableOf builds the table of o's profiles, which NewServer checked, with their counts
// and sources new.
func latencyTableOf(o *options) *latencyTable {
	t := &latencyTable{models: map[string]*latencyState{}, keys: map[string]*latencyState{}, routes: map[string]*latencyState{}}
	if o.latency != (LatencyProfile{}) {
		t.all = newLatencyState(o.latency)
	}
	for _, src := range []struct {
		from map[string]LatencyProfile
		to   map[string]*latencyState
	}{{o.modelLatency, t.models}, {o.keyLatency, t.keys}, {o.routeLatency, t.routes}} {
		for name, p := range src.from {
			if p != (LatencyProfile{}) {
				src.to[name] = newLatencyState(p)
			}
		}
	}
	return t
}

// latencyTable holds the profiles in force. A published table is never modified (see
// updateLatency); the states it points to change only under their own locks.
type latencyTable struct {
	all    *latencyState            // every request's; nil: none
	models map[string]*latencyState // by model (Azure: deployment)
	keys   map[string]*latencyState // by API key
	routes map[string]*latencyState // by route (see Routes)
}

// pick returns the profile of a request made with key for model on route: the key's, else the
// model's, else the route's, else every request's; nil when none applies.
func (t *latencyTable) pick(key, model, route string) *latencyState {
	if t == nil {
		return nil
	}
	if l := t.keys[key]; l != nil {
		return l
	}
	if l := t.models[model]; l != nil {
		return l
	}
	if l := t.routes[route]; l != nil {
		return l
	}
	return t.all
}

// latencyState is a profile in force with what its draws advance: how many requests it
// delayed and its seeded source.
type latencyState struct {
	p   LatencyProfile
	mu  sync.Mutex
	n   uint64
	rng *rand.Rand
}

func newLatencyState(p LatencyProfile) *latencyState {
	return &latencyState{p: p, rng: rand.New(rand.NewPCG(p.Seed, 0x1a7e))}
}

// latencyDraw is what a profile gave one request.
type latencyDraw struct {
	firstToken   time.Duration
	straggler    bool
	chunk        time.Duration
	headersFirst bool
}

// draw counts one more request and returns its delays.
func (l *latencyState) draw() latencyDraw {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	p := l.p
	d := latencyDraw{chunk: p.ChunkDelay, headersFirst: p.HeadersFirst}
	switch {
	case p.StragglerEvery > 0:
		d.straggler = l.n%uint64(p.StragglerEvery) == 0
	case p.StragglerRate > 0:
		d.straggler = l.rng.Float64() < p.StragglerRate
	}
	if d.straggler {
		d.firstToken = p.Straggler
		return d
	}
	d.firstToken = p.FirstToken
	if p.Spread > 0 {
		// Drawn only with a Spread, and after the straggler's draw: a profile without one keeps
		// the sequence of delays its seed gave before Spread existed.
		d.firstToken = spreadDelay(p.FirstToken, p.Spread, l.rng.NormFloat64())
	}
	if p.Jitter > 0 {
		d.firstToken += time.Duration(l.rng.Int64N(int64(p.Jitter) + 1))
	}
	return d
}

// spreadDelay is median × exp(spread × z), cut at MaxLatencyDelay. It multiplies in floating
// point: a long tail of a long median (a day × e^16, say) is beyond what a Duration holds.
func spreadDelay(median time.Duration, spread, z float64) time.Duration {
	if median <= 0 {
		return 0 // and not 0 × +Inf, which is NaN
	}
	f := float64(median) * math.Exp(spread*z)
	if !(f < float64(MaxLatencyDelay)) {
		return MaxLatencyDelay
	}
	return time.Duration(math.Round(f))
}

// delayable reports whether a latency profile applies to the call answered with st: an
// answer with content, a 200 from chat, messages or embeddings (see LatencyProfile).
func (c *call) delayable(st Step) bool {
	return c.endpoint != modelsEndpoint && c.endpoint != countEndpoint && !st.isError() && !st.Stall && !st.Reset && !st.Malformed &&
		(c.stream || st.StreamError == "")
}

// waitFirstToken waits the call's first-token delay where it falls before the headers: for a
// JSON answer, or a stream without HeadersFirst. It reports false when the wait ended early.
func (c *call) waitFirstToken() bool {
	if d := c.lat.firstToken; d > 0 && !(c.stream && c.lat.headersFirst) {
		return c.wait(d)
	}
	return true
}
