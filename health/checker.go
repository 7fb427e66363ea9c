package health

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/steadyllm/steady/resilience"
)

// CircuitSource is anything whose circuit state can be read: a *resilience.Pipeline, or
// each provider of a client. CircuitState must be cheap, must not block and must be safe
// for concurrent use, since every health request calls it.
//
// A source that also has a method CircuitInfo() resilience.CircuitInfo (as
// *resilience.Pipeline does) is read through that method instead, in one consistent
// snapshot, and its time until the next probe is reported while it is open.
type CircuitSource interface {
	CircuitState() resilience.CircuitState
}

// circuitInfoSource is the optional richer form of a CircuitSource.
type circuitInfoSource interface {
	CircuitInfo() resilience.CircuitInfo
}

// CircuitSet is implemented by anything that owns several named circuits, typically the
// steady client with one pipeline per provider. It is declared here, and uses only
// resilience types, so that the owner satisfies it without importing health; hand it to
// [Checker.AddSet].
type CircuitSet interface {
	// Circuits returns the circuits by name, usually the provider name ("openai"). The
	// checker reads the map once, when the set is added.
	Circuits() map[string]*resilience.Pipeline
}

// Option configures a Checker.
type Option func(*Checker)

// WithFallback tells the checker that its sources form one fallback chain: a call goes to
// the next provider when one is down, so the application still works while any of them
// passes. The overall status is then fail only when every source fails, and warn when
// some fail while another passes. Without this option the worst source decides. To watch
// two independent chains, use one Checker per chain.
func WithFallback() Option { return func(c *Checker) { c.fallback = true } }

// WithNow replaces the clock that stamps the "time" field of each check, so tests get a
// fixed output. A nil function keeps time.Now. It does not affect the time until the next
// probe, which the source itself computes.
func WithNow(now func() time.Time) Option {
	return func(c *Checker) {
		if now != nil {
			c.now = now
		}
	}
}

// Checker reports the health of named circuit sources: closed is pass, half-open is warn,
// open and isolated are fail, and the overall status is the worst of them (see
// [WithFallback] for chains). It reads each source's state at the moment it is asked, so
// it does no I/O, starts no goroutine and sees an open circuit turn half-open without any
// traffic.
//
// Serve it with [Checker.Handler] on a readiness endpoint, or plug [Checker.Check] into
// another health library. The zero value is not usable; call [NewChecker]. A Checker is
// safe for concurrent use, including adding sources while it is being served.
type Checker struct {
	now      func() time.Time
	fallback bool

	mu      sync.RWMutex
	sources map[string]CircuitSource
	shared  map[string]SharedStateSource
	// groups maps a source's name to the group it serves in (the provider whose deployment
	// it is); a source in no group stands alone.
	groups map[string]string
	// budgets are the sets of cost budgets shown (AddBudgets).
	budgets []BudgetSet
}

// SharedStateSource is a store that shares circuit state between the instances of an
// application (resilience.SharedState; github.com/steadyllm/steady/state/redis), read for
// its trouble: Err returns nil while the store answers. It must be cheap and must not block.
type SharedStateSource interface {
	Err() error
}

// AddSharedState registers the shared-state store src under name, which appears in the
// output as the check "name:shared-state". A store in trouble is a warning, never a failure:
// every instance goes on with its own state. Adding a name again replaces it; an empty name
// or a nil src panics, as in Add.
func (c *Checker) AddSharedState(name string, src SharedStateSource) {
	if name == "" || src == nil {
		panic(fmt.Sprintf("health: AddSharedState(%q) with an empty name or a nil source", name))
	}
	c.mu.Lock()
	c.shared[name] = src
	c.mu.Unlock()
}

// sharedStateOwner is a CircuitSet whose circuits share state between instances (the steady
// client built with a shared-state store): AddSet adds the store too.
type sharedStateOwner interface {
	SharedState() resilience.SharedState
}

// NewChecker returns a checker with no sources. With no sources it reports pass.
func NewChecker(opts ...Option) *Checker {
	c := &Checker{now: time.Now, sources: make(map[string]CircuitSource), shared: make(map[string]SharedStateSource),
		groups: make(map[string]string)}
	for _, o := range opts {
		if o == nil {
			continue // a nil option is no option
		}
		o(c)
	}
	return c
}

// Add registers src under name, which appears in the output as the check "name:circuit".
// Use the provider's name ("openai"), never anything that carries a secret. Adding a name
// again replaces its source. Add panics when name is empty or src is nil (including a nil
// *resilience.Pipeline), as these are programming errors.
func (c *Checker) Add(name string, src CircuitSource) {
	if name == "" {
		panic("health: Add with an empty name")
	}
	if src == nil {
		panic(fmt.Sprintf("health: Add(%q) with a nil source", name))
	}
	if p, ok := src.(*resilience.Pipeline); ok && p == nil {
		panic(fmt.Sprintf("health: Add(%q) with a nil *resilience.Pipeline", name))
	}
	c.mu.Lock()
	c.sources[name] = src
	c.mu.Unlock()
}

// AddAll registers every pipeline of sources under its map key, as Add does.
func (c *Checker) AddAll(sources map[string]*resilience.Pipeline) {
	for name, p := range sources {
		c.Add(name, p)
	}
}

// CircuitGroups is implemented by a CircuitSet whose circuits serve in groups — the steady
// client, whose provider with several deployments has one circuit per deployment: Groups
// returns each group's name (the provider's) with the names of its circuits
// ("openai/key-1", "openai/key-2"). A circuit in no group stands alone.
type CircuitGroups interface {
	CircuitGroups() map[string][]string
}

// AddSet registers every circuit of set, as AddAll does, and, when set shares its state
// between instances through a store that reports its trouble, the store as AddSharedState
// does, under the name "shared". The set is read once: circuits that set gains later are not
// seen until AddSet is called again.
//
// When set also implements CircuitGroups (the client does), the deployments of one provider
// are judged together, as calls see them — a call goes to another deployment when one is down:
// the provider passes when every deployment passes, fails only when none of them can serve
// (every one open or isolated), and is a warning otherwise (one isolated, taken out for a
// refused key, open or cooling while another serves). Each deployment keeps its own check in
// the output, and the provider gets the check "<provider>:deployments" with the count that
// can serve. Readiness fails only when a provider has nothing that can serve (or, with
// WithFallback, when no provider of the chain can).
//
// A pipeline that keeps its state per model (resilience.Pipeline.Route) adds, on every
// report, a check per model it has served, "<name>:<model>:circuit", in its provider's group:
// one model down while another serves is a warning; each route can serve only while its
// deployment's own circuit (a refused key, an unreachable host) lets calls through.
//
// When set keeps cost budgets (BudgetSet, as the client does), AddSet adds them as
// AddBudgets does.
func (c *Checker) AddSet(set CircuitSet) {
	c.AddAll(set.Circuits())
	if g, ok := set.(CircuitGroups); ok {
		c.mu.Lock()
		for group, names := range g.CircuitGroups() {
			for _, n := range names {
				c.groups[n] = group
			}
		}
		c.mu.Unlock()
	}
	if o, ok := set.(sharedStateOwner); ok {
		if src, ok := o.SharedState().(SharedStateSource); ok && src != nil {
			c.AddSharedState("shared", src)
		}
	}
	if b, ok := set.(BudgetSet); ok {
		c.AddBudgets(b)
	}
}

// CheckResult is one source's state at the time of a check.
type CheckResult struct {
	// Name is the name the source was added under.
	Name string
	// State is the circuit state read from the source.
	State resilience.CircuitState
	// Status is StatusOf(State).
	Status Status
	// NextProbeIn is the time until an open circuit lets a probe through. It is meaningful
	// only when HasNextProbe is true.
	NextProbeIn time.Duration
	// HasNextProbe is true when the circuit is open and the source reports the time until
	// the next probe (it has a CircuitInfo method). Half-open circuits are probing already;
	// isolated ones wait for a manual reset.
	HasNextProbe bool
	// CoolingFor is the time left of the source's rate-limit pause (0 when none). A closed
	// circuit that is pausing is a warning: calls wait for the pause or go elsewhere.
	CoolingFor time.Duration
	// RequestsLeft and TokensLeft are the shares left of the source's per-minute limits
	// (0 to 1), -1 when unknown or when the source has no Headroom method.
	RequestsLeft, TokensLeft float64
	// Group is the group the source serves in (its provider, for a deployment added by
	// AddSet), "" for a source that stands alone. A source that keeps its state per model
	// forms a group with its routes.
	Group string
	// Latency is what the client measured of the source's calls (for a source with a method
	// Latency() resilience.LatencyInfo, as *resilience.Pipeline has): their speed and error
	// rate. It never changes Status.
	Latency resilience.LatencyInfo
	// Tokens is what a route learnt of its prompts' tokens from their bills (for a source with
	// a method TokenModel() resilience.TokenModel, as *resilience.Pipeline has; see
	// client.TokenInfo); zero for a source that learnt nothing. It never changes Status.
	Tokens resilience.TokenModel
	// Route is the model of a route's result ("<source>:<model>", see resilience.Pipeline.Route),
	// "" for a source's own. Routed marks a source's own result when it serves through routes:
	// it is shown, and its failures count through its routes' statuses.
	Route  string
	Routed bool
	// ConcurrencyLimit is the adaptive concurrency limit of a source's own bulkhead
	// (resilience.Options.AdaptiveConcurrency), 0 when its limit is fixed or unknown.
	ConcurrencyLimit int
	// For a source that serves through routes, its own result is the summary of what it
	// serves (resilience.CircuitInfo): Routes counts its routes in use, Serving those that can
	// take a call now, Probing those half-open — probing, never serving — and Degraded says
	// some cannot serve while others can. Its own circuit (a refused key, an unreachable host:
	// what holds for every model) is the result "<name>:host", marked Host.
	Routes, Serving, Probing int
	Degraded                 bool
	Host                     bool
	// Failing is why the source's calls keep failing for a reason of its configuration (a
	// model the server does not have, a refused key: resilience.Pipeline.NoteFailing), ""
	// when they do not. A failing source fails (it serves nothing) without its circuit being
	// open; FailingCalls is how many calls failed so in a row.
	Failing      string
	FailingCalls int
}

// serving reports whether the source can take a call now: its circuit closed, not pausing,
// not failing for its configuration, and for a summary with a route that serves. Half-open is
// probing, never serving.
func (r *CheckResult) serving() bool {
	if r.State != resilience.CircuitClosed || r.Failing != "" && r.Serving == 0 || r.CoolingFor > 0 && r.Serving == 0 {
		return false
	}
	return r.Routes == 0 || r.Serving > 0
}

// GroupResult is one group of sources (the deployments of one provider, or the routes of one)
// judged together.
type GroupResult struct {
	Name string
	// Serving is how many of its sources can take a call now (closed, not pausing, not failing
	// for their configuration), of Total; Probing how many are half-open: probing, which is
	// never serving.
	Serving, Probing, Total int
	// Status is pass when every source passes, fail when none can serve nor probes (each open,
	// isolated or failing for its configuration), warn otherwise.
	Status Status
}

// headroomSource is implemented by a source that paces its calls (*resilience.Pipeline).
type headroomSource interface {
	Headroom() resilience.Headroom
}

// latencySource is implemented by a source whose calls' speed is measured
// (*resilience.Pipeline).
type latencySource interface {
	Latency() resilience.LatencyInfo
}

// tokenSource is a source that learns what its prompts' tokens are worth (a pipeline).
type tokenSource interface {
	TokenModel() resilience.TokenModel
}

// Report is the outcome of one check of every source. Its JSON form is the
// application/health+json document that [Checker.Handler] serves.
type Report struct {
	// Status is the overall status.
	Status Status
	// Time is when the sources were read.
	Time time.Time
	// Checks holds one result per source, sorted by name.
	Checks []CheckResult
	// SharedStates holds one result per shared-state store, sorted by name.
	SharedStates []SharedStateResult
	// Groups holds one result per group of sources (CircuitGroups), sorted by name.
	Groups []GroupResult
	// Budgets holds one result per cost budget (AddBudgets), sorted by name.
	Budgets []BudgetResult
}

// SharedStateResult is one shared-state store's state at the time of a check.
type SharedStateResult struct {
	Name string
	// Up is true while the store answers.
	Up bool
	// Status is pass while the store answers, warn while it does not.
	Status Status
}

// Report reads every source now and aggregates their statuses.
func (c *Checker) Report() Report {
	c.mu.RLock()
	results := make([]CheckResult, 0, len(c.sources))
	srcs := make([]CircuitSource, 0, len(c.sources))
	for name, src := range c.sources {
		results = append(results, CheckResult{Name: name, Group: c.groups[name]})
		srcs = append(srcs, src)
	}
	shared := make([]SharedStateResult, 0, len(c.shared))
	for name, src := range c.shared {
		r := SharedStateResult{Name: name, Up: src.Err() == nil, Status: StatusPass}
		if !r.Up {
			r.Status = StatusWarn
		}
		shared = append(shared, r)
	}
	budgetSets := slices.Clone(c.budgets)
	c.mu.RUnlock()
	budgets, spend := readBudgets(budgetSets)
	shared = append(shared, spend...)

	// Sources are read outside the lock: reading a pipeline may run its event observer.
	for i, src := range srcs {
		r := &results[i]
		read(r, src)
		if cs, ok := src.(interface{ Concurrency() resilience.Concurrency }); ok {
			if c := cs.Concurrency(); c.Adaptive {
				r.ConcurrencyLimit = c.Limit
			}
		}
		rs, ok := src.(routeSource)
		if !ok {
			continue
		}
		routes := rs.Routes()
		if len(routes) == 0 {
			continue
		}
		// A pipeline that keeps its state per model serves through its routes: each is a check
		// of its own in the source's group, and can serve only when the pipeline's own circuit
		// (a refused key, an unreachable host) lets calls through too.
		if r.Group == "" {
			r.Group = r.Name
		}
		r.Routed = true
		// Its own circuit is one component of what it serves: a refused key, an unreachable
		// host hold for every model, so no route is better than it.
		host := CheckResult{Name: r.Name + ":host", Group: r.Group, Host: true, Routed: true, RequestsLeft: -1, TokensLeft: -1}
		if os, ok := src.(ownCircuitSource); ok {
			setCircuit(&host, os.OwnCircuit())
		} else {
			host.State, host.Status = r.State, r.Status
		}
		results = append(results, host)
		for key, p := range routes {
			rr := CheckResult{Name: r.Name + ":" + key, Group: r.Group, Route: key}
			read(&rr, p)
			if host.Status.rank() > rr.Status.rank() {
				rr.Status = host.Status
			}
			results = append(results, rr)
		}
	}
	slices.SortFunc(results, func(a, b CheckResult) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(shared, func(a, b SharedStateResult) int { return strings.Compare(a.Name, b.Name) })
	groups, units := group(results)
	status := aggregate(units, c.fallback)
	for _, r := range shared {
		if r.Status.rank() > status.rank() {
			status = r.Status // at worst a warning: calls go on with local state
		}
	}
	status = budgetStatus(status, budgets)
	return Report{Status: status, Time: c.now(), Checks: results, SharedStates: shared, Groups: groups, Budgets: budgets}
}

// read fills r with what src says now: its state (for a source that serves through routes,
// the summary of what it serves), the time to its next probe, its pause and its budgets, and
// the status they make.
func read(r *CheckResult, src CircuitSource) {
	if is, ok := src.(circuitInfoSource); ok {
		setCircuit(r, is.CircuitInfo())
	} else {
		r.State = src.CircuitState()
		r.Status = StatusOf(r.State)
	}
	r.RequestsLeft, r.TokensLeft = -1, -1
	if hs, ok := src.(headroomSource); ok {
		h := hs.Headroom()
		r.RequestsLeft, r.TokensLeft = h.Requests, h.Tokens
	}
	if ls, ok := src.(latencySource); ok {
		r.Latency = ls.Latency()
	}
	if ts, ok := src.(tokenSource); ok {
		if m := ts.TokenModel(); m.Samples > 0 {
			r.Tokens = m
		}
	}
}

// setCircuit fills r with a circuit's reading and the status it makes: open or isolated fail,
// half-open warns (probing); a closed circuit warns while it pauses after a rate limit, or
// while some of its routes cannot serve (Degraded), and fails when its calls keep failing for a
// reason of its configuration and nothing of it serves — no outage, yet nothing it can do.
func setCircuit(r *CheckResult, info resilience.CircuitInfo) {
	r.State = info.State
	if info.State == resilience.CircuitOpen {
		r.NextProbeIn, r.HasNextProbe = max(info.NextProbeIn, 0), true
	}
	r.CoolingFor = max(info.CoolingFor, 0)
	r.Routes, r.Serving, r.Probing, r.Degraded = info.Routes, info.Serving, info.Probing, info.Degraded
	r.Failing, r.FailingCalls = info.Failing, info.FailingCalls
	r.Status = StatusOf(r.State)
	switch {
	case r.Status != StatusPass:
	case r.Failing != "" && (r.Routes == 0 || r.Serving == 0):
		r.Status = StatusFail
	case r.CoolingFor > 0 || r.Degraded:
		r.Status = StatusWarn // pausing after a rate limit, or some routes down: calls wait or go elsewhere
	}
}

// ownCircuitSource is a source that serves through routes and reads its own circuit apart
// (*resilience.Pipeline).
type ownCircuitSource interface {
	OwnCircuit() resilience.CircuitInfo
}

// routeSource is a source that keeps its state per model (*resilience.Pipeline, see
// resilience.Pipeline.Route): its routes are read on every report, so models it serves later
// show as they come.
type routeSource interface {
	Routes() map[string]*resilience.Pipeline
}

// group judges the grouped results together: it returns each group's result and the statuses
// that decide the overall one — one per group, one per source that stands alone.
func group(results []CheckResult) ([]GroupResult, []Status) {
	var groups []GroupResult
	index := map[string]int{}
	var units []Status
	for _, r := range results {
		if r.Group == "" {
			units = append(units, r.Status)
			continue
		}
		if r.Routed {
			continue // its routes serve, each judged with its own circuit and this one's
		}
		i, ok := index[r.Group]
		if !ok {
			i = len(groups)
			index[r.Group] = i
			groups = append(groups, GroupResult{Name: r.Group, Status: StatusPass})
		}
		g := &groups[i]
		g.Total++
		switch {
		case r.Status != StatusFail && r.serving():
			g.Serving++
		case r.Status != StatusFail && r.State == resilience.CircuitHalfOpen:
			g.Probing++
		}
		if r.Status != StatusPass {
			g.Status = StatusWarn
		}
	}
	for i := range groups {
		g := &groups[i]
		if g.Serving == 0 && g.Probing == 0 && !g.onlyPausing(results) {
			g.Status = StatusFail
		}
		units = append(units, g.Status)
	}
	slices.SortFunc(groups, func(a, b GroupResult) int { return strings.Compare(a.Name, b.Name) })
	return groups, units
}

// onlyPausing reports whether every member of g that cannot serve is pausing after a rate
// limit (and none is open, isolated or failing): a pause is no outage.
func (g *GroupResult) onlyPausing(results []CheckResult) bool {
	paused := false
	for _, r := range results {
		if r.Group != g.Name || r.Routed {
			continue
		}
		if r.Status == StatusFail {
			return false
		}
		paused = paused || r.CoolingFor > 0
	}
	return paused
}

// Check reports whether the application is ready to serve LLM calls, in the form most Go
// health libraries accept (func(context.Context) error). It returns ctx.Err() when ctx is
// already done, nil when the overall status is pass or warn, and an *UnhealthyError
// (matching ErrUnhealthy) listing the failing sources when it is fail. It never blocks.
func (c *Checker) Check(ctx context.Context) error {
	if ctx == nil {
		return errors.New("health: Check with a nil context")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	r := c.Report()
	if r.Status != StatusFail {
		return nil
	}
	e := &UnhealthyError{}
	failedGroup := map[string]bool{}
	for _, g := range r.Groups {
		failedGroup[g.Name] = g.Status == StatusFail
	}
	for _, cr := range r.Checks {
		// A deployment down while its provider serves through another does not fail readiness.
		// A route that fails only because its deployment does is named by the deployment's own
		// check; a deployment that serves through routes is named only when it fails itself.
		if cr.Status == StatusFail && (cr.Group == "" || failedGroup[cr.Group]) && (StatusOf(cr.State) == StatusFail || cr.Failing != "") &&
			!(cr.Routed && !cr.Host) {
			e.Failing = append(e.Failing, cr)
		}
	}
	return e
}

// ErrUnhealthy is matched, with errors.Is, by every error Check returns for a failing
// status.
var ErrUnhealthy = errors.New("health: unhealthy")

// UnhealthyError is the error Check returns when the overall status is fail. It names the
// failing sources and their states only: no URLs, headers or keys.
type UnhealthyError struct {
	// Failing holds the results whose status is fail, sorted by name.
	Failing []CheckResult
}

// Error lists the failing sources, e.g.
// "health: unhealthy: azure circuit isolated, openai circuit open (next probe in 12.5s)".
func (e *UnhealthyError) Error() string {
	var b strings.Builder
	b.WriteString(ErrUnhealthy.Error())
	for i, r := range e.Failing {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString(", ")
		}
		if r.Failing != "" && StatusOf(r.State) != StatusFail {
			fmt.Fprintf(&b, "%s failing: %s", r.Name, r.Failing)
			continue
		}
		fmt.Fprintf(&b, "%s circuit %s", r.Name, r.State)
		if r.HasNextProbe {
			fmt.Fprintf(&b, " (next probe in %s)", formatProbe(r.NextProbeIn))
		}
	}
	return b.String()
}

// Unwrap returns ErrUnhealthy.
func (e *UnhealthyError) Unwrap() error { return ErrUnhealthy }

// formatProbe renders a wait as a Go duration string rounded to the millisecond ("12.5s").
func formatProbe(d time.Duration) string {
	return d.Round(time.Millisecond).String()
}
