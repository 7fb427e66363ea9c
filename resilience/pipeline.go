package resilience

import (
	"math"
	"net/http"
	"sync/atomic"
	"time"
)

// Pipeline holds the shared state of one resilience policy — the bulkhead's slots, the
// circuit breaker, the retry budget — and builds the RoundTripper chain that enforces it.
// Give each provider (each upstream that fails on its own) its own Pipeline: they do not
// share a circuit. A Pipeline is safe for concurrent use.
//
// A client keeps one Pipeline per deployment and one per route of it (Route), so what one
// holds counts once per model of every deployment: a route shares with its deployment what
// never changes after New (the options, the per-call policy) and the bulkhead, and the state
// of what few pipelines use (shared state, a ratio-mode circuit) is made only when it is on.
// A pipeline, or a route, holds under 4 KB (see docs/performance.md).
type Pipeline struct {
	name string
	// opts are the options the pipeline enforces, never changed after New: a route shares
	// its deployment's. The clock and the observer are the emitter's (ev.clock, ev.observer).
	opts *Options

	// policy is the per-call part of opts, which a call may replace (Call.Policy); a route
	// shares its deployment's.
	policy *Policy
	// shared, when set, shares circuit openings and rate-limit pauses between instances;
	// sh is the pipeline's link to it (see shared_adopt.go), made by initShared only then.
	shared SharedState
	sh     *sharing

	// Each layer owns its state; the pipeline only holds them together. The bulkhead (bh) is
	// made for a pipeline that is no route; a route's is its deployment's.
	ev       emitter
	bh       *bulkhead
	cool     cooldown
	pace     pacer
	timeouts timeouts
	breaker  breaker
	retry    retrier
	// hroom is the last reading of the budgets (HeadroomAt).
	hroom headroomCache
	// lat is what the client measured of the pipeline's calls' speed (latency.go).
	lat latency
	// tok is what the pipeline learnt of its prompts' tokens from their bills (tokens.go).
	tok tokenModel

	// watchers are the observers added by Watch; a route's emitter uses its deployment's.
	watchers watchers

	// parent is the pipeline a route belongs to (nil for one that is no route); routes are a
	// pipeline's routes, by key (see route.go).
	parent *Pipeline
	route  string
	routes routes
	// fault is why the pipeline's calls keep failing for a reason of its configuration (see
	// NoteFailing), nil when they do not.
	fault atomic.Pointer[fault]
}

// Option configures a Pipeline beyond its Options.
type Option func(*Pipeline)

// WithName names the pipeline in events and errors, usually after the provider ("openai").
// The default name is "default".
func WithName(name string) Option { return func(p *Pipeline) { p.name = name } }

// OnEvent sends every event of the pipeline to fn. See Observer for the rules fn must follow.
func OnEvent(fn Observer) Option { return func(p *Pipeline) { p.ev.observer = fn } }

// WithClock replaces the wall clock, so tests can control backoff sleeps and timeouts.
// A nil clock keeps the wall clock.
func WithClock(c Clock) Option {
	return func(p *Pipeline) {
		if c != nil {
			p.ev.clock = c
		}
	}
}

// New validates opts and builds a pipeline. It returns a *ValidationError listing every bad
// field when opts are invalid.
func New(opts Options, options ...Option) (*Pipeline, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	p := &Pipeline{name: "default"}
	p.ev.clock = wallClock{}
	for _, o := range options {
		if o == nil {
			continue // a nil option is no option
		}
		o(p)
	}
	o := new(Options)
	*o = opts
	o.RetryableStatusCodes = append([]int(nil), opts.RetryableStatusCodes...)
	p.opts, p.policy = o, newPolicy("", *o)
	p.init()
	return p, nil
}

// init builds the layers of p, whose name, clock and observer (p.ev's), shared state and
// parent are set, and whose opts (valid) and policy are its own or, for a route, its
// deployment's.
func (p *Pipeline) init() {
	opts := *p.opts
	_, wall := p.ev.clock.(wallClock)
	p.ev = emitter{name: p.name, clock: p.ev.clock, observer: p.ev.observer, watch: &p.watchers,
		maxAttempts: opts.RetryCount + 1, epoch: p.ev.clock.Now(), wall: wall}
	if p.parent != nil {
		// A route's events and errors name its deployment, and the route (Event.Route).
		p.ev.name, p.ev.route = p.parent.name, p.route
		p.ev.watch = p.parent.ev.watch // whoever watches the deployment hears its routes
		p.bh = p.parent.bh             // a route's calls hold its deployment's slots
	} else {
		p.bh = new(bulkhead)
		p.bh.init(opts, p.policy, &p.ev)
	}
	if p.parent != nil {
		// The same name, limit and length as the deployment's: one error serves both.
		p.timeouts.totalErr = p.parent.timeouts.totalErr
	}
	p.timeouts.init(p.policy, &p.ev)
	p.cool.init(opts, p.policy, &p.ev)
	p.pace.init(opts, &p.ev)
	p.pace.reserve.init(opts, p.policy)
	p.cool.pace = &p.pace
	p.breaker.init(opts, &p.ev)
	p.retry.init(opts, p.policy, &p.ev, &p.breaker)
	p.retry.cool, p.retry.pace, p.retry.adaptive = &p.cool, &p.pace, p.bh.adaptive
	if p.parent != nil {
		p.breaker.parent = &p.parent.breaker
	}
	p.initShared()
}

// Policy returns the pipeline's own per-call policy (its retries and time limits), named "":
// the starting point of Policy.WithTimeout for a call that only needs another deadline.
func (p *Pipeline) Policy() *Policy { return p.policy }

// Name returns the pipeline's name.
func (p *Pipeline) Name() string { return p.name }

// Options returns a copy of the options the pipeline enforces.
func (p *Pipeline) Options() Options {
	o := *p.opts
	o.RetryableStatusCodes = append([]int(nil), o.RetryableStatusCodes...)
	return o
}

// Wrap returns base wrapped in the pipeline's layers, outermost first: bulkhead, timeout,
// circuit breaker, retry. A nil base means http.DefaultTransport. Every RoundTripper that
// Wrap returns shares this pipeline's state, so wrapping two transports still gives one
// circuit and one set of bulkhead slots.
//
// When base is an *http.Transport and StreamIdleTimeoutSeconds is set, the pipeline sends
// through a clone of it (Transport.Clone) whose connections note when they read bytes, so that
// the idle timeout measures silence on the wire (see wire.go): configure the transport before
// wrapping it. The clone has its own pool of connections; CloseIdleConnections on the wrapped
// transport closes those. Any other base (an *http.Transport inside a logging, metrics or
// tracing RoundTripper) is used as it is; on Linux the kernel then tells the silence of its
// connections.
//
// The chain honours the http.RoundTripper contract: it never modifies the caller's
// request, always closes the request body, and returns a response whose body must be
// closed by the caller, as usual. Closing it (or reading it to EOF) also releases the
// bulkhead slot, ends the total timeout and reports the call's outcome to the breaker.
func (p *Pipeline) Wrap(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	base = watchTransport(base, p.policy.idle, p.ev.clock)
	p.breaker.active.use(base) // what an active probe sends through
	return p.wrapOver(base)
}

// wrapOver builds the chain over base, which Wrap has prepared (see watchTransport).
func (p *Pipeline) wrapOver(base http.RoundTripper) http.RoundTripper {
	retry := newRetryTransport(&p.retry, base)
	brk := &breakerTransport{b: &p.breaker, next: retry}
	tmo := &timeoutTransport{t: &p.timeouts, below: &p.breaker, next: brk}
	return &bulkheadTransport{b: p.bh, cool: &p.cool, p: p, next: tmo, base: base}
}

// CircuitState returns the state of what the pipeline can serve now (see CircuitInfo): for a
// pipeline that keeps its state per route, the summary of its routes with its own circuit; for
// any other, its own circuit. It is computed on read: an open circuit whose break has elapsed
// reads as half-open without any call passing through.
//
// With shared state, it adopts the fleet's advice first, as a call would: an opening another
// instance reported shows here without waiting for a call.
func (p *Pipeline) CircuitState() CircuitState {
	if m := p.routes.m.Load(); p.parent == nil && m != nil && len(*m) > 0 {
		return p.CircuitInfo().State
	}
	return p.OwnCircuitState()
}

// OwnCircuitState returns the state of the pipeline's own circuit alone (see OwnCircuit), as
// cheaply as a call reads it.
func (p *Pipeline) OwnCircuitState() CircuitState {
	if p.shared != nil {
		p.adoptShared(nil)
	}
	return p.breaker.state()
}

// CircuitInfo is a snapshot of a circuit for health checks and dashboards. For a pipeline that
// keeps its state per route (a deployment whose calls name their model: see Route), it
// summarizes what the deployment can serve — its own circuit (a refused key, an unreachable
// host: what counts for every model, in Host) and its routes in use:
//
//   - open (or isolated) when nothing can serve: its own circuit is, or every route in use is
//     open; NextProbeIn is then the soonest probe;
//   - half-open (probing) when none serves but some probe: half-open is never serving, on any
//     view, until a probe succeeds;
//   - closed otherwise, Degraded when some routes cannot serve now (open, probing, pausing
//     after a rate limit, failing for a reason of their configuration), or none can but for a
//     pause or a configuration that fails (no outage of the provider's); CoolingFor is then the
//     longest pause, and Routes, Serving and Probing count them ("1 of 2 serving").
//
// A route nobody has called for routeIdle is not counted (its circuit may sit half-open for
// want of a probe); one that is open always is. Without routes, the fields past CoolingFor
// are zero but Failing.
type CircuitInfo struct {
	State CircuitState
	// NextProbeIn is the time until an open circuit lets a probe through; 0 otherwise.
	NextProbeIn time.Duration
	// ConsecutiveFailures counted while closed.
	ConsecutiveFailures int
	// CoolingFor is the time left of the pipeline's rate-limit pause (RateLimitCooldown), 0
	// when it is not pausing; in a summary, the longest pause of the deployment or a route.
	CoolingFor time.Duration
	// Host is, in a summary, the state of the pipeline's own circuit, one component of it.
	Host CircuitState
	// Routes, in a summary, is how many routes in use it counts; Serving how many of them can
	// take a call now, Probing how many are half-open. All 0 for a pipeline without routes.
	Routes, Serving, Probing int
	// Degraded reports a summary where some routes cannot serve now while others can, or
	// every one only pauses after a rate limit.
	Degraded bool
	// Failing is why the pipeline's calls keep failing for a reason of its configuration —
	// a model the server does not have, a refused key (see NoteFailing) — "" when they do
	// not; FailingCalls how many failed so in a row. Its circuit stays as it is: that is no
	// outage of the provider's. In a summary: its own, or, when no route serves, the failing
	// route's.
	Failing      string
	FailingCalls int
}

// CircuitInfo returns the state of what the pipeline can serve now — for a deployment that
// serves through routes, the summary of its routes with its own circuit (see CircuitInfo) —
// with the time until the next probe and the time left of a rate-limit pause, after adopting
// the fleet's advice as CircuitState does. OwnCircuit reads its own circuit alone.
func (p *Pipeline) CircuitInfo() CircuitInfo {
	own := p.OwnCircuit()
	if p.parent != nil {
		return own
	}
	return p.summary(own)
}

// OwnCircuit returns the pipeline's own circuit alone, without its routes: for a deployment,
// what counts for every model (a refused key, an unreachable host). It adopts the fleet's
// advice first, as CircuitInfo does.
func (p *Pipeline) OwnCircuit() CircuitInfo {
	if p.shared != nil {
		p.adoptShared(nil)
	}
	info := p.breaker.info()
	info.CoolingFor = p.cool.remaining()
	if f := p.fault.Load(); f != nil {
		info.Failing, info.FailingCalls = f.reason, int(f.calls.Load())
	}
	return info
}

// CoolingFor returns the time left of the pipeline's rate-limit pause, 0 when it is not
// pausing.
func (p *Pipeline) CoolingFor() time.Duration { return p.cool.remaining() }

// SettleTokens corrects the pipeline's tokens-per-minute limit once a call's real usage is
// known, for a server that does not state what remains of its budget: debited is what the
// call was debited (its CallInfo.TokensDebited: never more than a whole budget, and 0 when no
// tokens-per-minute limit was known as it was sent — not its estimate, which may be larger), used the
// tokens the answer reported (input plus output). A call that used fewer leaves the difference
// to the next calls, never more than it was debited; one that used more is debited the rest,
// the budget going below zero if it must (by at most one budget), so the next calls wait until
// it has refilled. Once an answer has stated the tokens remaining (x-ratelimit-remaining-tokens),
// that count is the truth and SettleTokens does nothing: such servers debit the most a call
// may use and never refund it. Without a known tokens-per-minute limit, or without usage, it does
// nothing either.
func (p *Pipeline) SettleTokens(debited, used int) { p.pace.settle(debited, used) }

// InFlight returns the number of exchanges holding a bulkhead slot now (their bodies not yet
// closed), queued calls excluded. A route's are its deployment's.
func (p *Pipeline) InFlight() int { return p.bh.inFlight() }

// Concurrency is the state of a pipeline's bulkhead (Pipeline.Concurrency).
type Concurrency struct {
	// Limit is the number of exchanges that may be in flight now: BulkheadMaxConcurrency, or
	// the adaptive limit.
	Limit int
	// Adaptive says the limit is the one the pipeline finds (AdaptiveConcurrency); Min and
	// Max are then its bounds, Decreases and Increases how many times it moved each way.
	Adaptive             bool
	Min, Max             int
	Decreases, Increases int64
	// InFlight is the number of exchanges holding a slot; Waiting the calls queued for one,
	// by class (indexed as Priorities: interactive, default, batch).
	InFlight int
	Waiting  [3]int
}

// Concurrency returns the state of the pipeline's bulkhead now: its limit, what holds and what
// waits for its slots. A route's is its deployment's.
func (p *Pipeline) Concurrency() Concurrency {
	b := p.bh
	c := Concurrency{Limit: int(b.limit.Load()), InFlight: b.inFlight()}
	if a := b.adaptive; a != nil {
		c.Adaptive, c.Min, c.Max = true, int(a.lo), int(a.hi)
		c.Decreases, c.Increases = a.decreases.Load(), a.increases.Load()
	}
	b.mu.Lock()
	for i := range c.Waiting {
		c.Waiting[i] = b.queues[i].n
	}
	b.mu.Unlock()
	return c
}

// Headroom is what is left of a pipeline's per-minute limits (see Options.PaceRequestsPerMinute).
type Headroom struct {
	// Requests and Tokens are the shares left of each budget, 0 to 1, or -1 when the budget
	// is not known (neither configured nor learnt from the answers' headers).
	Requests, Tokens float64
	// RequestsPerMinute and TokensPerMinute are the budgets, 0 when not known.
	RequestsPerMinute, TokensPerMinute int
}

// Headroom returns what is left of the pipeline's per-minute limits now.
func (p *Pipeline) Headroom() Headroom {
	if p.pace.req.Load() == nil && p.pace.tok.Load() == nil {
		return Headroom{Requests: -1, Tokens: -1} // no budget: no need of the clock
	}
	return p.HeadroomAt(p.pace.monotonic())
}

// Paced reports whether the pipeline knows a per-minute limit (configured or learnt), that
// is whether Headroom has anything to say.
func (p *Pipeline) Paced() bool { return p.pace.req.Load() != nil || p.pace.tok.Load() != nil }

// PacesTokens reports whether the pipeline has a tokens-per-minute limit (configured or
// learnt) from which each call's Call.Tokens is debited: whether an exact count of a call's
// tokens would change anything.
func (p *Pipeline) PacesTokens() bool { return p.pace.tok.Load() != nil }

// headroomTTL is how long a reading of the budgets serves HeadroomAt while they do not change:
// they refill meanwhile by at most a thousandth of a minute's budget per 60 ms.
const headroomTTL = time.Millisecond

// HeadroomAt returns what is left of the pipeline's per-minute limits at now, read from the
// pipeline's clock (see WithClock), for a router that weighs several pipelines at one moment.
// A reading serves for up to a millisecond while no call or answer changes the budgets, so
// routers ask without taking the budgets' locks.
func (p *Pipeline) HeadroomAt(now time.Time) Headroom {
	req, tok := p.pace.req.Load(), p.pace.tok.Load()
	if req == nil && tok == nil {
		return Headroom{Requests: -1, Tokens: -1}
	}
	c, n, gen := &p.hroom, now.UnixNano(), p.pace.gen.Load()
	if s := c.seq.Load(); s&1 == 0 {
		at := c.at.Load()
		h := Headroom{Requests: math.Float64frombits(c.req.Load()), Tokens: math.Float64frombits(c.tok.Load()),
			RequestsPerMinute: int(c.reqPM.Load()), TokensPerMinute: int(c.tokPM.Load())}
		if c.gen.Load() == gen && n >= at && n-at < int64(headroomTTL) && c.seq.Load() == s {
			return h
		}
	}
	var h Headroom
	h.Requests, h.RequestsPerMinute = headroom(req, now)
	h.Tokens, h.TokensPerMinute = headroom(tok, now)
	if s := c.seq.Load(); s&1 == 0 && c.seq.CompareAndSwap(s, s+1) {
		c.gen.Store(gen)
		c.at.Store(n)
		c.req.Store(math.Float64bits(h.Requests))
		c.tok.Store(math.Float64bits(h.Tokens))
		c.reqPM.Store(int64(h.RequestsPerMinute))
		c.tokPM.Store(int64(h.TokensPerMinute))
		c.seq.Store(s + 2)
	}
	return h
}

// headroomCache is the last reading of HeadroomAt, written under a sequence count (odd while
// it is written) so that readers never take a lock and never see half a reading.
type headroomCache struct {
	seq, gen     atomic.Uint64
	at           atomic.Int64
	req, tok     atomic.Uint64 // float64 bits
	reqPM, tokPM atomic.Int64
}

// Isolate holds the circuit open until Reset, whatever calls or time do: every call fails
// at once with ErrCircuitOpen and CircuitState reports CircuitIsolated. Use it to take a
// provider out of service by hand. Every route of the pipeline consults its circuit first.
func (p *Pipeline) Isolate() { p.breaker.isolate() }

// OpenFor opens the circuit now, for at least d, whatever the failure counts say: calls fail
// at once with ErrCircuitOpen until the break is over, then a probe decides as after any
// opening (a success closes, a failure reopens). A circuit open for longer already keeps its
// break; an isolated one stays isolated. It is how the client takes a deployment whose key
// was refused, or whose quota is spent, out for a break that grows each time it fails again,
// so a fixed key comes back without a restart. d <= 0 does nothing.
func (p *Pipeline) OpenFor(d time.Duration) {
	if d <= 0 {
		return
	}
	p.breaker.announce(nil, p.breaker.c.openAtLeast(d))
}

// Reset ends isolation and closes the circuit with fresh counts, and ends a rate-limit pause,
// on the pipeline and every route of it.
func (p *Pipeline) Reset() {
	p.breaker.reset()
	p.cool.end()
	for _, r := range p.Routes() {
		r.Reset()
	}
}

// statusSet is a bitset of HTTP status codes 0..639.
type statusSet [10]uint64

func (s *statusSet) add(code int) {
	if code >= 0 && code < 640 {
		s[code/64] |= 1 << (code % 64)
	}
}

func (s *statusSet) has(code int) bool {
	return code >= 0 && code < 640 && s[code/64]&(1<<(code%64)) != 0
}
