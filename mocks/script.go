package mocks

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"time"
)

// ScenarioHeader is the request header that selects a named scenario for one call.
const ScenarioHeader = "X-Fake-Scenario"

// chaosScenario is the journal's Scenario for a call answered by chaos mode.
const chaosScenario = "chaos"

// sequence is a list of steps consumed one call at a time.
type sequence struct {
	steps []Step
	pos   int // index of the current step
	used  int // calls the current step has answered
}

// next returns the step for the next call and false once the sequence is spent.
func (q *sequence) next() (Step, bool) {
	for q.pos < len(q.steps) {
		st := q.steps[q.pos]
		if st.Forever {
			return st, true
		}
		if q.used < max(st.Repeat, 1) {
			q.used++
			return st, true
		}
		q.pos, q.used = q.pos+1, 0
	}
	return Step{}, false
}

// builtins are the scenarios every server knows; each answers every call that names it, so a
// tool such as curl can ask for a fault with one header and no setup.
func builtins() map[string][]Step {
	return map[string][]Step{
		"ok":              {OK().Always()},
		"rate-limited":    {RateLimited(200 * time.Millisecond).Always()},
		"quota-exceeded":  {QuotaExceeded().Always()},
		"server-error":    {Status(500).Always()},
		"bad-gateway":     {Status(502).Always()},
		"unavailable":     {Status(503).Always()},
		"gateway-timeout": {Status(504).Always()},
		"overloaded":      {Overloaded().Always()},
		"slow":            {Latency(2 * time.Second).Always()},
		"slow-stream":     {SlowStream(200 * time.Millisecond).Always()},
		"stall":           {Stall().Always()},
		"reset":           {ResetConnection().Always()},
		"cut-stream":      {CutStream(3).Always()},
		"truncated":       {TruncateStream(3).Always()},
		"stream-error":    {StreamError(3, "overloaded_error").Always()},
		"malformed":       {Malformed().Always()},
		// Faults that strike after the stream opened (see Step): only a first-token limit, an
		// idle limit or a check of the finish reason catches them.
		"slow-first-token":     {SlowFirstToken(2 * time.Second).Always()},
		"stall-after-content":  {StallAfter(2, 0).Always()},
		"malformed-mid-stream": {MalformedAt(2).Always()},
		"no-terminal":          {OmitTerminal().Always()},
		"cut-after-content":    {CutStream(2).CountingContent().Always()},
		"refusal":              {Refusal("").Always()},
		"refusal-mid-stream":   {RefuseAfter(2, "").Always()},
		"content-filter":       {ContentFiltered(2).Always()},
	}
}

// BuiltinScenarios returns the names of the scenarios every server knows, sorted: each answers
// every call that names it with one fault ("rate-limited", "overloaded", "stall", …).
func BuiltinScenarios() []string {
	var names []string
	for name := range builtins() {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// chaos injects a random fault into a fraction of calls, from a seeded source so that a run is
// reproducible for a given seed and arrival order.
type chaos struct {
	rate float64
	rng  *rand.Rand
}

func newChaos(seed int64, rate float64) *chaos {
	return &chaos{rate: rate, rng: rand.New(rand.NewPCG(uint64(seed), 0x5eed))}
}

// chaosFaults is what chaos mode draws from. Stalls are left out: a client without a timeout
// would hang forever, which no one wants from a random run.
var chaosFaults = []Step{
	RateLimited(100 * time.Millisecond),
	Status(500),
	Status(502),
	Status(503),
	Status(504),
	Overloaded(),
	ResetConnection(),
	Latency(250 * time.Millisecond),
	CutStream(2),
	StreamError(2, "overloaded_error"),
}

// draw returns a fault, or false when this call is left alone.
func (c *chaos) draw() (Step, bool) {
	if c.rng.Float64() >= c.rate {
		return Step{}, false
	}
	return chaosFaults[c.rng.IntN(len(chaosFaults))], true
}

// script holds the server's fault selection: the named scenarios, the outages, the per-model
// and per-route sequences, the default sequence and chaos mode. It is safe for concurrent use.
type script struct {
	mu        sync.Mutex
	def       *sequence            // the default sequence; nil when none
	defName   string               // the named scenario in use as default, if any
	scenarios map[string]*sequence // user scenarios, then builtins
	routes    map[string]*sequence // per-route sequences, by Route… constant
	models    map[string]*sequence // per-model sequences, by model (Azure: deployment) name
	outages   []outageWindow       // in the order given; the first that matches wins
	chaos     *chaos               // nil when off
}

func newScript() *script {
	return &script{scenarios: map[string]*sequence{}, routes: map[string]*sequence{}, models: map[string]*sequence{}}
}

// load replaces everything with what o says, rewound: the default sequence or scenario, the
// named scenarios, the route and model sequences, the outages (already resolved) and chaos
// mode. o must have been checked (see NewServer).
func (sc *script) load(o *options, outages []outageWindow) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.def, sc.defName = nil, ""
	sc.scenarios = map[string]*sequence{}
	for name, steps := range o.scenarios {
		sc.scenarios[name] = &sequence{steps: slices.Clone(steps)}
	}
	sc.routes = map[string]*sequence{}
	for route, steps := range o.routes {
		if len(steps) > 0 {
			sc.routes[route] = &sequence{steps: slices.Clone(steps)}
		}
	}
	sc.models = map[string]*sequence{}
	for model, steps := range o.modelScripts {
		if len(steps) > 0 {
			sc.models[model] = &sequence{steps: slices.Clone(steps)}
		}
	}
	sc.outages = outages
	if o.script != nil {
		sc.def = &sequence{steps: slices.Clone(o.script)}
	}
	if o.use != "" {
		if q, ok := sc.lookup(o.use); ok {
			sc.def, sc.defName = q, o.use
		}
	}
	sc.chaos = nil
	if o.chaos > 0 {
		sc.chaos = newChaos(o.seed, min(o.chaos, 1))
	}
}

// setModel replaces (and rewinds) the sequence of one model, or with no steps removes it. It
// fails when the model would be one more than MaxModels.
func (sc *script) setModel(model string, steps []Step) error {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if len(steps) == 0 {
		delete(sc.models, model)
		return nil
	}
	if _, ok := sc.models[model]; !ok && len(sc.models) >= MaxModels {
		return fmt.Errorf("mocks: more than %d model scripts", MaxModels)
	}
	sc.models[model] = &sequence{steps: slices.Clone(steps)}
	return nil
}

// setRoute replaces (and rewinds) the sequence of one route, or with no steps removes it.
func (sc *script) setRoute(route string, steps []Step) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if len(steps) == 0 {
		delete(sc.routes, route)
		return
	}
	sc.routes[route] = &sequence{steps: slices.Clone(steps)}
}

// routeStep takes the next step of route's own sequence; false when it has none (left).
func (sc *script) routeStep(route string) (Step, bool) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if q := sc.routes[route]; q != nil {
		return q.next()
	}
	return Step{}, false
}

// setDefault replaces the default sequence.
func (sc *script) setDefault(steps []Step) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.def, sc.defName = &sequence{steps: slices.Clone(steps)}, ""
}

// setScenario defines (or redefines and rewinds) the scenario name.
func (sc *script) setScenario(name string, steps []Step) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.scenarios[name] = &sequence{steps: append([]Step(nil), steps...)}
}

// lookup returns the scenario name, user-defined first, then builtin; sc.mu must be held.
func (sc *script) lookup(name string) (*sequence, bool) {
	if q, ok := sc.scenarios[name]; ok {
		return q, true
	}
	steps, ok := builtins()[name]
	if !ok {
		return nil, false
	}
	q := &sequence{steps: steps}
	sc.scenarios[name] = q
	return q, true
}

// use makes the scenario name answer calls that name none.
func (sc *script) use(name string) error {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	q, ok := sc.lookup(name)
	if !ok {
		return fmt.Errorf("mocks: unknown scenario %q", name)
	}
	sc.def, sc.defName = q, name
	return nil
}

// setChaos turns chaos mode on (rate > 0) or off.
func (sc *script) setChaos(seed int64, rate float64) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if rate <= 0 {
		sc.chaos = nil
		return
	}
	sc.chaos = newChaos(seed, min(rate, 1))
}

// errUnknownScenario is returned by next for a header naming no scenario.
type errUnknownScenario string

// Error quotes the name cut to maxScenarioName bytes: the header can be as long as net/http
// allows (1 MiB), and echoing it whole would let a client make every answer that large.
func (e errUnknownScenario) Error() string {
	return fmt.Sprintf("unknown fake scenario %q", clip(string(e), maxScenarioName))
}

// maxScenarioName is how much of an unknown scenario name the 400 and the journal repeat.
const maxScenarioName = 128

// clip returns s cut to at most n bytes, marked with "…" when cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// selector is what the choice of a step depends on.
type selector struct {
	header string    // the X-Fake-Scenario header, "" for none
	route  string    // the call's route name (see Routes), "" for the others
	model  string    // the request's model (Azure: deployment), "" for none
	now    time.Time // the server's clock
}

// next chooses the step for one call, most specific first: the scenario the header names; else
// the first outage in force for the call's model and route; else the model's own sequence
// while it lasts; else the route's, while it lasts; else the default sequence; else chaos;
// else a normal reply. An outage takes no step from any sequence. It returns the scenario
// name for the journal ("outage[0]", "model gpt-4o", "route /v1/messages", …).
func (sc *script) next(sel selector) (Step, string, error) {
	header, route := sel.header, sel.route
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if header != "" {
		q, ok := sc.lookup(header)
		if !ok {
			return Step{}, header, errUnknownScenario(header)
		}
		if st, ok := q.next(); ok {
			return st, header, nil
		}
		return OK(), header, nil
	}
	for i, o := range sc.outages {
		if o.matches(sel) {
			return o.step, fmt.Sprintf("outage[%d]", i), nil
		}
	}
	if q := sc.models[sel.model]; q != nil && sel.model != "" {
		if st, ok := q.next(); ok {
			return st, "model " + sel.model, nil
		}
	}
	if q := sc.routes[route]; q != nil {
		if st, ok := q.next(); ok {
			return st, "route " + route, nil
		}
	}
	if sc.def != nil {
		if st, ok := sc.def.next(); ok {
			return st, sc.defName, nil
		}
	}
	if sc.chaos != nil {
		if st, ok := sc.chaos.draw(); ok {
			return st, chaosScenario, nil
		}
	}
	return OK(), sc.defName, nil
}

// ScriptState is one sequence of steps as it stands: its steps, the one the next call takes,
// and how many calls that one has answered already (for a step that Repeats).
type ScriptState struct {
	Steps []Step `json:"steps"`
	// Next is the index in Steps of the step the next call takes; Next == len(Steps) once the
	// sequence is spent.
	Next int `json:"next"`
	// Used is how many calls Steps[Next] has answered so far.
	Used int `json:"used"`
	// Spent reports that the sequence has no step left: its calls fall through to the next
	// source (see the package doc, "Choosing faults").
	Spent bool `json:"spent"`
}

// ScriptsState is the fault selection in force (see [State]).
type ScriptsState struct {
	// Default is the default sequence ([Server.Script]); nil when there is none.
	Default *ScriptState `json:"default,omitempty"`
	// DefaultScenario names the scenario in use as the default ([Server.UseScenario]), "" for
	// none.
	DefaultScenario string `json:"defaultScenario,omitempty"`
	// Routes and Models are the sequences of the routes and of the models that have one.
	Routes map[string]ScriptState `json:"routes,omitempty"`
	Models map[string]ScriptState `json:"models,omitempty"`
	// Scenarios names the scenarios defined or used so far (builtins once used), sorted.
	Scenarios []string `json:"scenarios,omitempty"`
	// Outages is how many outages are scheduled ([WithOutage]).
	Outages int `json:"outages"`
	// ChaosRate is the fraction of calls chaos mode fails (0: off).
	ChaosRate float64 `json:"chaosRate,omitempty"`
}

// state returns q as it stands.
func (q *sequence) state() ScriptState {
	return ScriptState{Steps: slices.Clone(q.steps), Next: q.pos, Used: q.used, Spent: q.pos >= len(q.steps)}
}

// state returns the fault selection as it stands.
func (sc *script) state() ScriptsState {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	st := ScriptsState{DefaultScenario: sc.defName, Outages: len(sc.outages)}
	if sc.def != nil && sc.defName == "" {
		d := sc.def.state()
		st.Default = &d
	}
	for route, q := range sc.routes {
		if st.Routes == nil {
			st.Routes = map[string]ScriptState{}
		}
		st.Routes[route] = q.state()
	}
	for model, q := range sc.models {
		if st.Models == nil {
			st.Models = map[string]ScriptState{}
		}
		st.Models[model] = q.state()
	}
	for name := range sc.scenarios {
		st.Scenarios = append(st.Scenarios, name)
	}
	sort.Strings(st.Scenarios)
	if sc.chaos != nil {
		st.ChaosRate = sc.chaos.rate
	}
	return st
}
