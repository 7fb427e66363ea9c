package health

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/steadyllm/steady/resilience"
)

// ContentType is the media type of the health document, from the IETF health-check draft.
const ContentType = "application/health+json"

// ComponentType is the "componentType" of every check: each provider is a component the
// application depends on.
const ComponentType = "component"

// document is the JSON shape of the IETF health-check draft, restricted to what a circuit
// can tell: no version, links or output text, so nothing secret can leak.
type document struct {
	Status Status             `json:"status"`
	Checks map[string][]check `json:"checks"`
}

type check struct {
	ComponentType string `json:"componentType"`
	ObservedValue string `json:"observedValue"`
	Status        Status `json:"status"`
	Time          string `json:"time"`
	NextProbeIn   string `json:"nextProbeIn,omitempty"`
	CoolingFor    string `json:"coolingFor,omitempty"`
	RequestsLeft  string `json:"requestsLeft,omitempty"`
	TokensLeft    string `json:"tokensLeft,omitempty"`
	// What the client measured of the source's calls (see MarshalJSON).
	FirstToken     string `json:"firstToken,omitempty"`
	PerOutputToken string `json:"perOutputToken,omitempty"`
	LatencyP50     string `json:"latencyP50,omitempty"`
	LatencyP95     string `json:"latencyP95,omitempty"`
	ErrorRate      string `json:"errorRate,omitempty"`
	LatencySamples int64  `json:"latencySamples,omitempty"`
	StreamGapP99   string `json:"streamGapP99,omitempty"`
	StallAfter     string `json:"stallAfter,omitempty"`
	// TokenText and TokenFrame are the weights a route learnt of the client's estimates of a
	// prompt's text and chat-format frame ("1.18"), from TokenSamples answers; absent before
	// any (resilience.TokenModel).
	TokenText    string `json:"tokenText,omitempty"`
	TokenFrame   string `json:"tokenFrame,omitempty"`
	TokenSamples int    `json:"tokenSamples,omitempty"`
	// ConcurrencyLimit is the adaptive concurrency limit, when the source has one.
	ConcurrencyLimit int `json:"concurrencyLimit,omitempty"`
	// Serving, of a source that serves through routes: "1 of 2 models serving", with how
	// many probe; Degraded when some routes cannot serve.
	Serving  string `json:"serving,omitempty"`
	Degraded bool   `json:"degraded,omitempty"`
	// Failing is why the source's calls keep failing for a reason of its configuration, and
	// FailingCalls how many failed so in a row.
	Failing      string `json:"failing,omitempty"`
	FailingCalls int    `json:"failingCalls,omitempty"`
	// What a budget's check adds (budgets.go); nil for every other check.
	*budgetFields
}

// servingText says how many of total serve, and how many probe: "1 of 2 serving, 1 probing".
func servingText(serving, probing, total int, what string) string {
	s := strconv.Itoa(serving) + " of " + strconv.Itoa(total) + what + " serving"
	if probing > 0 {
		s += ", " + strconv.Itoa(probing) + " probing"
	}
	return s
}

// MarshalJSON encodes the report as an application/health+json document:
//
//	{
//	  "status": "fail",
//	  "checks": {
//	    "openai:circuit": [{
//	      "componentType": "component",
//	      "observedValue": "open",
//	      "status": "fail",
//	      "time": "2025-06-01T12:00:00Z",
//	      "nextProbeIn": "12.5s"
//	    }]
//	  }
//	}
//
// Each source is the check "<name>:circuit", holding one object. observedValue is the
// circuit state (closed, half-open, open or isolated), status its own pass/warn/fail, and
// time the moment of the reading in UTC, RFC 3339. nextProbeIn, an extension to the draft,
// is present only while the circuit is open and the source knows it: the time until the
// next probe as a Go duration string rounded to the millisecond; coolingFor, another
// extension, is present while the pipeline pauses after a rate limit (the status is then at
// least warn); requestsLeft and tokensLeft, the share left of the per-minute limits of a
// pacing pipeline ("0.40"), are present when the budget is known. What the client measured of
// a source's calls (resilience.Pipeline.Latency, which the client's latency routing reads) adds,
// once known: firstToken and perOutputToken, the moving averages of a stream's time to first
// token and of a whole answer's time per output token, latencyP50 and latencyP95 over its
// last resilience.LatencyWindow times to first content (durations as nextProbeIn), errorRate,
// the moving share of its calls that failed ("0.05"), latencySamples, the times measured,
// streamGapP99, the 99th percentile of its streams' waits for bytes after their first content
// once trusted, and stallAfter, the silence that cuts such a stream now (absent when stall
// detection is off); they never change a status; concurrencyLimit, the limit a pipeline with AdaptiveConcurrency
// has found, when it has one. A shared-state store
// (AddSharedState) is the check "<name>:shared-state" of componentType "datastore", observed
// "up" (pass) or "down" (warn: never fail, since calls go on with local state); its error is
// not shown. The deployments of one provider (a set with CircuitGroups, see AddSet) add the
// check "<provider>:deployments", observed "2 of 3 serving", whose status is the provider's:
// fail only when none can serve. "checks" is an empty object when there are no sources.
//
// Each cost budget (AddBudgets) is the check "<budget>:budget" of componentType "budget",
// observed at its highest tier (allow, warn, downgrade, refuse), with mode (enforce or
// shadow), per, window, windowEnd (RFC 3339) and endsIn (as nextProbeIn), currency, keys (the
// BudgetKeys nearest their limit: key, spent, limit, share, tier, and refused when a call of
// the key was refused in the window), moreKeys, keysAtTier, keysRefused, keysFull and fleet;
// its status is pass or warn, never fail (see BudgetResult). A spend store sharing the
// budgets is the check "spend:shared-state".
func (r Report) MarshalJSON() ([]byte, error) {
	doc := document{Status: r.Status, Checks: make(map[string][]check, len(r.Checks))}
	stamp := r.Time.UTC().Format(time.RFC3339)
	for _, cr := range r.Checks {
		ck := check{
			ComponentType: ComponentType,
			ObservedValue: cr.State.String(),
			Status:        cr.Status,
			Time:          stamp,
		}
		if cr.HasNextProbe {
			ck.NextProbeIn = formatProbe(cr.NextProbeIn)
		}
		if cr.CoolingFor > 0 {
			ck.CoolingFor = formatProbe(cr.CoolingFor)
		}
		if cr.RequestsLeft >= 0 {
			ck.RequestsLeft = strconv.FormatFloat(cr.RequestsLeft, 'f', 2, 64)
		}
		if cr.TokensLeft >= 0 {
			ck.TokensLeft = strconv.FormatFloat(cr.TokensLeft, 'f', 2, 64)
		}
		addLatency(&ck, cr.Latency)
		if m := cr.Tokens; m.Samples > 0 {
			ck.TokenText, ck.TokenFrame = strconv.FormatFloat(m.Text, 'f', 2, 64), strconv.FormatFloat(m.Frame, 'f', 2, 64)
			ck.TokenSamples = m.Samples
		}
		ck.ConcurrencyLimit = cr.ConcurrencyLimit
		if cr.Routes > 0 {
			ck.Serving, ck.Degraded = servingText(cr.Serving, cr.Probing, cr.Routes, " models"), cr.Degraded
		}
		ck.Failing, ck.FailingCalls = cr.Failing, cr.FailingCalls
		doc.Checks[cr.Name+":circuit"] = []check{ck}
	}
	for _, g := range r.Groups {
		doc.Checks[g.Name+":deployments"] = []check{{ComponentType: ComponentType,
			ObservedValue: servingText(g.Serving, g.Probing, g.Total, ""), Status: g.Status, Time: stamp}}
	}
	for _, sr := range r.SharedStates {
		v := "up"
		if !sr.Up {
			v = "down"
		}
		doc.Checks[sr.Name+":shared-state"] = []check{{ComponentType: "datastore", ObservedValue: v, Status: sr.Status, Time: stamp}}
	}
	budgetChecks(doc.Checks, r.Budgets, stamp)
	return json.Marshal(doc)
}

// addLatency adds to ck what is known of l.
func addLatency(ck *check, l resilience.LatencyInfo) {
	for _, f := range []struct {
		to *string
		d  time.Duration
	}{{&ck.FirstToken, l.FirstToken}, {&ck.PerOutputToken, l.PerOutputToken}, {&ck.LatencyP50, l.P50}, {&ck.LatencyP95, l.P95},
		{&ck.StreamGapP99, l.StreamGap}, {&ck.StallAfter, l.StallAfter}} {
		if f.d > 0 {
			*f.to = formatLatency(f.d)
		}
	}
	if l.Samples > 0 || l.ErrorRate > 0 {
		ck.ErrorRate = strconv.FormatFloat(l.ErrorRate, 'f', 2, 64)
	}
	ck.LatencySamples = l.Samples
}

// formatLatency renders a measured time as a Go duration string, to the millisecond above a
// second and to the microsecond below ("312.5ms", "1.25s"): a time per output token is a few
// milliseconds.
func formatLatency(d time.Duration) string {
	if d >= time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Microsecond).String()
}

// Handler returns the readiness handler: it reads every source on each request and
// answers with the report as application/health+json, 200 for pass and warn, 503 for
// fail. GET gets the document, HEAD the same status and headers without a body; any other
// method gets 405 with "Allow: GET, HEAD". Responses carry Cache-Control: no-store, since
// a cached "pass" would hide an outage.
//
// Mount it on the readiness probe only, never on liveness: a provider outage should take
// the instance out of the load balancer, not get it restarted. See [LivenessHandler].
func (c *Checker) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allowMethod(w, r) {
			return
		}
		rep := c.Report()
		body, err := json.MarshalIndent(rep, "", "  ")
		if err != nil { // cannot happen: the document holds only strings
			http.Error(w, "health: cannot encode report", http.StatusInternalServerError)
			return
		}
		writeDocument(w, r, rep.Status.HTTPStatus(), append(body, '\n'))
	})
}

// livenessBody is the whole answer of the liveness handler.
var livenessBody = []byte(`{"status":"pass"}` + "\n")

// LivenessHandler returns a liveness handler that answers every GET and HEAD with 200 and
// {"status":"pass"} as application/health+json. It never looks at any provider: if the
// process can serve this request it is alive, and restarting it would not bring an LLM
// provider back. Other methods get 405, as with [Checker.Handler].
func LivenessHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if allowMethod(w, r) {
			writeDocument(w, r, http.StatusOK, livenessBody)
		}
	})
}

// allowMethod answers 405 to anything but GET and HEAD and reports whether to go on.
func allowMethod(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	h := w.Header()
	h.Set("Allow", "GET, HEAD")
	h.Set("Cache-Control", "no-store")
	http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
	return false
}

// writeDocument sends body with the health headers; for HEAD it sends the headers only.
func writeDocument(w http.ResponseWriter, r *http.Request, code int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", ContentType)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body) // the client went away: nothing left to tell it
	}
}
