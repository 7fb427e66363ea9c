package statuspage

import (
	"math"
	"slices"
	"time"

	"github.com/steadyllm/steady/health"
	"github.com/steadyllm/steady/resilience"
)

// SparkPoints is how many of a route's latest times to first content the sparkline draws
// (Latency.RecentMs).
const SparkPoints = 32

// Snapshot is what the page shows at one moment. Its JSON form is what the page serves for
// ?format=json. It holds names, states, counts and times, and the redacted text of recent
// events: never a key, a header, a URL's credentials, path or query, a prompt or an answer.
type Snapshot struct {
	// Time is when it was read, on the wall clock.
	Time time.Time `json:"time"`
	// Status is the overall status that the readiness check (health.Checker) reports for the
	// same circuits: pass, warn or fail.
	Status health.Status `json:"status"`
	// Chain is the client's fallback chain, in order.
	Chain []string `json:"chain,omitempty"`
	// Providers are the client's providers, those of the chain first, then each bare pipeline
	// (WithPipeline).
	Providers []Provider `json:"providers"`
	// SharedState is the store the client shares its state through, nil when it has none.
	SharedState *SharedState `json:"sharedState,omitempty"`
	// Budgets are the client's cost budgets (client.WithBudgets), by name, and SpendStore the
	// store they are shared through (nil when they are this instance's own): see budgets.go.
	Budgets    []Budget    `json:"budgets,omitempty"`
	SpendStore *SpendStore `json:"spendStore,omitempty"`
	// Events are the latest notable events, newest first: at most WithEvents of them.
	Events []Event `json:"events"`
	// EventsSeen counts the notable events since the page was mounted, including those no
	// longer kept.
	EventsSeen uint64 `json:"eventsSeen"`
}

// Provider is one provider with its deployments.
type Provider struct {
	// Name is the provider's name (WithProvider, WithDeployments), or a bare pipeline's
	// (WithPipeline).
	Name string `json:"name"`
	// Status is the provider's status for readiness: fail only when none of its deployments
	// (or routes) can serve.
	Status health.Status `json:"status"`
	// Serving is how many of its deployments — or, when it keeps its state per model, its
	// routes — can serve now, of Total; Probing how many are half-open: probing, which is
	// never serving.
	Serving int `json:"serving"`
	Probing int `json:"probing,omitempty"`
	Total   int `json:"total"`
	// Pipeline marks a bare pipeline (WithPipeline): it has no hedges or failovers, which are
	// the client's.
	Pipeline bool `json:"pipeline,omitempty"`
	// Hedges, HedgesWon, HedgesUnsent and Failovers add up those of its deployments.
	Hedges       int64 `json:"hedges"`
	HedgesWon    int64 `json:"hedgesWon"`
	HedgesUnsent int64 `json:"hedgesUnsent"`
	Failovers    int64 `json:"failovers"`
	// Deployments are its deployments in their configured order (one for a provider of one).
	Deployments []Deployment `json:"deployments"`
}

// Deployment is one deployment of a provider: its own circuit, pause, budgets, bulkhead and
// speed, and the routes (models) it served.
type Deployment struct {
	// Name is "<provider>/<deployment>", or the provider's name for a provider of one.
	Name string `json:"name"`
	// Status is the deployment's own status for readiness: its circuit's, warn while it
	// pauses.
	Status health.Status `json:"status"`
	State
	// InFlight is the exchanges holding a slot of its bulkhead, of Limit; Waiting the calls
	// queued for one.
	InFlight int `json:"inFlight"`
	Limit    int `json:"limit"`
	Waiting  int `json:"waiting"`
	// Hedges is how many hedges were sent to it that reached the wire, HedgesWon how many of
	// them served, HedgesUnsent how many more were cancelled before their request went out
	// (client.DeploymentInfo); Failovers how many calls failed on it and went on to another
	// route.
	Hedges       int64 `json:"hedges"`
	HedgesWon    int64 `json:"hedgesWon"`
	HedgesUnsent int64 `json:"hedgesUnsent"`
	Failovers    int64 `json:"failovers"`
	// Routes are the models it has served or been asked for, by model.
	Routes []Route `json:"routes,omitempty"`
}

// Route is one model of a deployment, with its own circuit, pause, budgets and speed.
type Route struct {
	// Model is the model, "*" for the models beyond resilience.MaxRoutes, which share one.
	Model string `json:"model"`
	// Status is the route's status for readiness: its circuit's, warn while it pauses, and
	// never better than its deployment's.
	Status health.Status `json:"status"`
	State
	// Tokens is how the route estimates its prompts' tokens (client.TokenInfo). Absent for a
	// bare pipeline's route that learnt nothing.
	Tokens *Tokens `json:"tokens,omitempty"`
}

// Tokens is how a route estimates its prompts' tokens: Method "tokenizer" (Encoding names it),
// "learnt" or "heuristic"; Text and Frame the weights it learnt of the heuristic's count of a
// prompt's text and chat-format frame from its answers' usage, from Samples answers
// (resilience.TokenModel).
type Tokens struct {
	Method   string  `json:"method,omitempty"`
	Encoding string  `json:"encoding,omitempty"`
	Text     float64 `json:"text"`
	Frame    float64 `json:"frame"`
	Samples  int     `json:"samples"`
}

// State is the circuit, pause, budgets and speed of a deployment or a route.
type State struct {
	// Circuit is closed, half-open (probing: never serving), open or isolated. For a
	// deployment that serves through routes it is what the deployment serves, the summary of
	// its routes with its own circuit (resilience.CircuitInfo): Host is then its own circuit's
	// state, Routes its routes in use, Serving those that can take a call now, Probing those
	// half-open, and Degraded says some cannot serve while others can.
	Circuit  string `json:"circuit"`
	Host     string `json:"host,omitempty"`
	Routes   int    `json:"routes,omitempty"`
	Serving  int    `json:"serving,omitempty"`
	Probing  int    `json:"probing,omitempty"`
	Degraded bool   `json:"degraded,omitempty"`
	// Failing is why its calls keep failing for a reason of its configuration (a model the
	// server does not have, a refused key), "" when they do not; FailingCalls how many failed
	// so in a row. No circuit is open for it, yet it serves nothing.
	Failing      string `json:"failing,omitempty"`
	FailingCalls int    `json:"failingCalls,omitempty"`
	// NextProbeMs is, while the circuit is open, the milliseconds until it lets a probe
	// through.
	NextProbeMs int64 `json:"nextProbeMs,omitempty"`
	// Failures is the count of consecutive failures while the circuit is closed.
	Failures int `json:"failures,omitempty"`
	// PauseMs is the milliseconds left of a rate-limit pause, 0 when not pausing.
	PauseMs int64 `json:"pauseMs,omitempty"`
	// RequestsLeft and TokensLeft are the shares left of the per-minute limits, 0 to 1, or
	// -1 when the budget is not known; RequestsPerMinute and TokensPerMinute the budgets.
	RequestsLeft      float64 `json:"requestsLeft"`
	TokensLeft        float64 `json:"tokensLeft"`
	RequestsPerMinute int     `json:"requestsPerMinute,omitempty"`
	TokensPerMinute   int     `json:"tokensPerMinute,omitempty"`
	Latency           Latency `json:"latency"`
}

// Latency is what the client measured of the calls' speed (resilience.LatencyInfo).
type Latency struct {
	// Samples is how many times to first content were measured.
	Samples int64 `json:"samples"`
	// P50Ms and P95Ms are quantiles of the latest resilience.LatencyWindow times to first
	// content, in milliseconds, 0 before resilience.MinLatencySamples.
	P50Ms float64 `json:"p50Ms,omitempty"`
	P95Ms float64 `json:"p95Ms,omitempty"`
	// FirstTokenMs is the moving average of a stream's time to first token.
	FirstTokenMs float64 `json:"firstTokenMs,omitempty"`
	// ErrorRate is the moving share of calls that failed, 0 to 1.
	ErrorRate float64 `json:"errorRate"`
	// RecentMs are the latest SparkPoints times to first content, oldest first, in
	// milliseconds: what the sparkline draws.
	RecentMs []float64 `json:"recentMs,omitempty"`
	// StreamGapMs is the 99th percentile of its streams' waits for bytes after their first
	// content, 0 until trusted; StallAfterMs the silence that cuts such a stream now, 0 when
	// stall detection is off (resilience.LatencyInfo.StreamGap, StallAfter).
	StreamGapMs  float64 `json:"streamGapMs,omitempty"`
	StallAfterMs float64 `json:"stallAfterMs,omitempty"`
}

// SharedState is the state of the store the client shares its state through.
type SharedState struct {
	// Up is true while the store answers; Error is why it does not, redacted.
	Up    bool   `json:"up"`
	Error string `json:"error,omitempty"`
}

// Event is one notable event of a pipeline: a failed attempt, a retry, a give-up, a timeout,
// a circuit's change, a bulkhead's refusal, a pause, a probe, the shared state failing or
// coming back, the adaptive limit moving. Calls that succeed at once, and the calls that an
// open circuit or a pause turns away, are not events here.
type Event struct {
	// Time is the event's time on the pipeline's clock.
	Time time.Time `json:"time"`
	// Deployment names the deployment (the pipeline), Model the route, "" for the
	// deployment's own state.
	Deployment string `json:"deployment"`
	Model      string `json:"model,omitempty"`
	// Type is the event's resilience.EventType in snake_case ("breaker_state_changed").
	Type string `json:"type"`
	// Detail says what happened in a few words, redacted: "closed → open for 30s",
	// "attempt 1/4: status 503".
	Detail string `json:"detail"`
}

// Snapshot reads the state of every provider, deployment and route now, with the events kept.
// It does no I/O. It reads through the pipelines' and the client's own snapshots, which hold
// for a moment the few locks a call may also take: a latency window's
// (resilience.Pipeline.RecentLatencies, LatencyQuantile) and a bulkhead queue's
// (resilience.Pipeline.Concurrency, which a call takes only when it must queue).
func (p *Page) Snapshot() Snapshot {
	now := p.now()
	rep := p.checker.Report()
	status := make(map[string]health.Status, len(rep.Checks))
	for _, c := range rep.Checks {
		status[c.Name] = c.Status
	}
	groups := make(map[string]health.GroupResult, len(rep.Groups))
	for _, g := range rep.Groups {
		groups[g.Name] = g
	}
	s := Snapshot{Time: now, Status: rep.Status, Providers: []Provider{}, Events: []Event{}}
	var spark []time.Duration // reused for every route
	if p.c != nil {
		s.Chain = p.names(p.c.Chain())
		circuits := p.c.Circuits()
		order := p.c.Chain()
		for _, name := range p.c.Providers() {
			if !slices.Contains(order, name) {
				order = append(order, name)
			}
		}
		for _, name := range order {
			pr := Provider{Name: p.scrub.Text(name, maxName)}
			for _, d := range p.c.Deployments(name) {
				dep := Deployment{Name: p.scrub.Text(d.Name, maxName), Status: status[d.Name], InFlight: d.Concurrency.InFlight,
					Limit: d.Concurrency.Limit, Hedges: d.Hedges, HedgesWon: d.HedgesWon, HedgesUnsent: d.HedgesUnsent, Failovers: d.Failovers}
				for _, w := range d.Concurrency.Waiting {
					dep.Waiting += w
				}
				pipe := circuits[d.Name]
				spark = recent(pipe, spark)
				dep.State = state(d.Circuit, d.Headroom, d.Latency, spark)
				var routes map[string]*resilience.Pipeline
				if pipe != nil && len(d.Routes) > 0 {
					routes = pipe.Routes()
				}
				for _, r := range d.Routes {
					spark = recent(routes[r.Model], spark)
					dep.Routes = append(dep.Routes, Route{Model: p.scrub.Text(r.Model, maxName), Status: status[d.Name+":"+r.Model],
						State: state(r.Circuit, r.Headroom, r.Latency, spark), Tokens: &Tokens{Method: string(r.Tokens.Method),
							Encoding: p.scrub.Text(r.Tokens.Encoding, maxName), Text: r.Tokens.Learnt.Text, Frame: r.Tokens.Learnt.Frame,
							Samples: r.Tokens.Learnt.Samples}})
				}
				pr.Hedges += d.Hedges
				pr.HedgesWon += d.HedgesWon
				pr.HedgesUnsent += d.HedgesUnsent
				pr.Failovers += d.Failovers
				pr.Deployments = append(pr.Deployments, dep)
			}
			pr.Status, pr.Serving, pr.Probing, pr.Total = standing(name, pr.Deployments, status, groups)
			s.Providers = append(s.Providers, pr)
		}
		if st := p.c.SharedState(); st != nil {
			s.SharedState = &SharedState{Up: true}
			if src, ok := st.(health.SharedStateSource); ok {
				if err := src.Err(); err != nil {
					s.SharedState.Up, s.SharedState.Error = false, p.scrub.Text(err.Error(), maxDetail)
				}
			}
		}
	}
	for _, np := range p.pipes {
		pipe := np.p
		spark = recent(pipe, spark)
		dep := Deployment{Name: p.scrub.Text(np.name, maxName), Status: status[np.name], InFlight: pipe.InFlight()}
		c := pipe.Concurrency()
		dep.Limit = c.Limit
		for _, w := range c.Waiting {
			dep.Waiting += w
		}
		dep.State = state(pipe.CircuitInfo(), pipe.Headroom(), pipe.Latency(), spark)
		routes := pipe.Routes()
		models := make([]string, 0, len(routes))
		for m := range routes {
			models = append(models, m)
		}
		slices.Sort(models)
		for _, m := range models {
			r := routes[m]
			spark = recent(r, spark)
			rt := Route{Model: p.scrub.Text(m, maxName), Status: status[np.name+":"+m],
				State: state(r.CircuitInfo(), r.Headroom(), r.Latency(), spark)}
			if m := r.TokenModel(); m.Samples > 0 {
				rt.Tokens = &Tokens{Method: "learnt", Text: m.Text, Frame: m.Frame, Samples: m.Samples}
			}
			dep.Routes = append(dep.Routes, rt)
		}
		pr := Provider{Name: dep.Name, Pipeline: true, Deployments: []Deployment{dep}}
		pr.Status, pr.Serving, pr.Probing, pr.Total = standing(np.name, pr.Deployments, status, groups)
		s.Providers = append(s.Providers, pr)
	}
	s.Budgets, s.SpendStore = p.budgets(rep)
	if p.events != nil {
		s.Events = p.events.latest(p.scrub)
		s.EventsSeen = p.events.seen()
	}
	return s
}

// names scrubs a list of names.
func (p *Page) names(in []string) []string {
	out := make([]string, len(in))
	for i, n := range in {
		out[i] = p.scrub.Text(n, maxName)
	}
	return out
}

// recent returns the latest SparkPoints times to first content of pipe into buf.
func recent(pipe *resilience.Pipeline, buf []time.Duration) []time.Duration {
	if pipe == nil {
		return buf[:0]
	}
	buf = pipe.RecentLatencies(buf[:0])
	if len(buf) > SparkPoints {
		buf = buf[len(buf)-SparkPoints:]
	}
	return buf
}

// state converts what the pipeline and the client read into the page's terms.
func state(ci resilience.CircuitInfo, h resilience.Headroom, l resilience.LatencyInfo, spark []time.Duration) State {
	s := State{Circuit: ci.State.String(), RequestsLeft: round3(h.Requests), TokensLeft: round3(h.Tokens),
		RequestsPerMinute: h.RequestsPerMinute, TokensPerMinute: h.TokensPerMinute,
		Latency: Latency{Samples: l.Samples, P50Ms: ms(l.P50), P95Ms: ms(l.P95), FirstTokenMs: ms(l.FirstToken),
			ErrorRate: round3(l.ErrorRate), StreamGapMs: ms(l.StreamGap), StallAfterMs: ms(l.StallAfter)}}
	switch ci.State {
	case resilience.CircuitOpen:
		s.NextProbeMs = max(ci.NextProbeIn, 0).Milliseconds()
	case resilience.CircuitClosed:
		s.Failures = ci.ConsecutiveFailures
	}
	if ci.Routes > 0 {
		s.Host, s.Routes, s.Serving, s.Probing, s.Degraded = ci.Host.String(), ci.Routes, ci.Serving, ci.Probing, ci.Degraded
	}
	s.Failing, s.FailingCalls = ci.Failing, ci.FailingCalls
	if ci.CoolingFor > 0 {
		s.PauseMs = max(ci.CoolingFor.Milliseconds(), 1) // a pause is never shown as none
	}
	if len(spark) > 0 {
		s.Latency.RecentMs = make([]float64, len(spark))
		for i, d := range spark {
			s.Latency.RecentMs[i] = ms(d)
		}
	}
	return s
}

// round3 rounds a share to a thousandth (-1, unknown, stays -1).
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// ms converts d to milliseconds, to a hundredth.
func ms(d time.Duration) float64 {
	return float64(d.Round(10*time.Microsecond)) / float64(time.Millisecond)
}

// standing is a provider's status and how many of its deployments (or routes) can serve and
// how many probe, as the readiness check judges them: its group's when it has one, else its
// one deployment's — which serves only while its circuit is closed, not pausing and not failing
// for its configuration (half-open is probing, never serving).
func standing(name string, deps []Deployment, status map[string]health.Status,
	groups map[string]health.GroupResult) (health.Status, int, int, int) {
	if g, ok := groups[name]; ok {
		return g.Status, g.Serving, g.Probing, g.Total
	}
	st := status[name]
	if st == "" && len(deps) == 1 {
		st = deps[0].Status
	}
	if len(deps) != 1 {
		serving := 0
		if st != health.StatusFail {
			serving = 1
		}
		return st, serving, 0, 1
	}
	switch d := deps[0].State; {
	case d.Circuit == "half-open":
		return st, 0, 1, 1
	case st == health.StatusFail || d.Circuit != "closed" || d.Failing != "" || d.PauseMs > 0:
		return st, 0, 0, 1
	}
	return st, 1, 0, 1
}
