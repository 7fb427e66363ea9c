package health

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/steadyllm/steady/resilience"
)

// A pipeline that keeps its state per model shows each model it served as a check of its own:
// one model's open circuit while another serves is a warning, and a refused key (the
// deployment's own circuit) fails every model.
func TestChecker_ModelsOfAPipelineAreJudgedTogether(t *testing.T) {
	o := resilience.DefaultOptions()
	o.CircuitBreakerThreshold = 1
	p, err := resilience.New(o, resilience.WithName("openai"))
	if err != nil {
		t.Fatal(err)
	}
	c := NewChecker()
	c.Add("openai", p)
	p.Route("gpt-4o").OpenFor(60e9)
	_ = p.Route("gpt-4o-mini")
	r := c.Report()
	if r.Status != StatusWarn || len(r.Checks) != 4 || len(r.Groups) != 1 || r.Groups[0].Serving != 1 {
		t.Fatalf("one model down: %+v", r)
	}
	p.Isolate() // the deployment's own circuit: no model can serve
	r = c.Report()
	err = c.Check(context.Background())
	var ue *UnhealthyError
	if r.Status != StatusFail || !errors.As(err, &ue) || len(ue.Failing) != 2 {
		t.Fatalf("the deployment isolated: %s, %v", r.Status, err)
	}
	rec := httptest.NewRecorder()
	c.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("readiness %d", rec.Code)
	}
}

// Each route shows what the client measured of its calls — first token, time per output
// token, p50 and p95, error rate, samples — without changing its status; a route that measured
// nothing shows none of it.
func TestChecker_ShowsEachRoutesLatency(t *testing.T) {
	p, err := resilience.New(resilience.DefaultOptions(), resilience.WithName("openai"))
	if err != nil {
		t.Fatal(err)
	}
	r := p.Route("gpt-4o")
	for range resilience.MinLatencySamples {
		r.ObserveLatency(resilience.LatencySample{FirstContent: 300 * time.Millisecond, Stream: true})
	}
	r.ObserveLatency(resilience.LatencySample{FirstContent: 2 * time.Second, OutputTokens: 400})
	r.ObserveLatency(resilience.LatencySample{Failed: true})
	_ = p.Route("gpt-4o-mini")
	c := NewChecker()
	c.Add("openai", p)
	rep := c.Report()
	var got CheckResult
	for _, cr := range rep.Checks {
		if cr.Route == "gpt-4o" {
			got = cr
		}
	}
	if rep.Status != StatusPass || got.Latency.Samples != 11 || got.Latency.FirstToken != 300*time.Millisecond ||
		got.Latency.PerOutputToken != 5*time.Millisecond || got.Latency.ErrorRate != 0.25 {
		t.Fatalf("report %s %+v", rep.Status, got)
	}
	b, _ := rep.MarshalJSON()
	for _, want := range []string{`"firstToken":"300ms"`, `"perOutputToken":"5ms"`, `"latencyP50":"300ms"`, `"latencyP95":"2s"`,
		`"errorRate":"0.25"`, `"latencySamples":11`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("no %s in %s", want, b)
		}
	}
	if n := strings.Count(string(b), `"latencySamples"`); n != 1 {
		t.Errorf("%d checks show latency, want the measured route's alone: %s", n, b)
	}
}

// A source whose streams were watched shows the 99th percentile of their waits for bytes after
// first content and the silence that cuts one now; a source without shows neither.
func TestChecker_ShowsTheStreamRhythm(t *testing.T) {
	c := NewChecker()
	c.Add("streams", latencyOnly{resilience.LatencyInfo{StreamGap: 120 * time.Millisecond, StallAfter: time.Second}})
	c.Add("learning", latencyOnly{resilience.LatencyInfo{StallAfter: 10 * time.Second}})
	c.Add("none", latencyOnly{})
	rep := c.Report()
	b, _ := rep.MarshalJSON()
	var doc struct {
		Checks map[string][]map[string]any `json:"checks"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][2]any{"streams": {"120ms", "1s"}, "learning": {nil, "10s"}, "none": {nil, nil}} {
		ck := doc.Checks[name+":circuit"][0]
		if ck["streamGapP99"] != want[0] || ck["stallAfter"] != want[1] || ck["status"] != "pass" {
			t.Errorf("%s: %v, want streamGapP99 %v, stallAfter %v, status pass", name, ck, want[0], want[1])
		}
	}
}

// latencyOnly is a closed circuit that measured l.
type latencyOnly struct{ l resilience.LatencyInfo }

func (latencyOnly) CircuitState() resilience.CircuitState { return resilience.CircuitClosed }
func (s latencyOnly) Latency() resilience.LatencyInfo     { return s.l }

// A route that learnt what its prompts' tokens are worth shows the weights and their samples;
// one that learnt nothing shows none, and neither changes a status.
func TestChecker_ShowsWhatEachRouteLearntOfItsTokens(t *testing.T) {
	p, err := resilience.New(resilience.DefaultOptions(), resilience.WithName("claude"))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		p.Route("claude-haiku-4-5").LearnTokens(100, 20, 150)
	}
	_ = p.Route("claude-opus-4-7")
	c := NewChecker()
	c.Add("claude", p)
	rep := c.Report()
	b, _ := rep.MarshalJSON()
	for _, want := range []string{`"tokenText":"1.25"`, `"tokenFrame":"1.25"`, `"tokenSamples":3`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("no %s in %s", want, b)
		}
	}
	if n := strings.Count(string(b), `"tokenSamples"`); n != 1 || rep.Status != StatusPass {
		t.Errorf("%d checks show tokens (want the route that learnt alone), status %s: %s", n, rep.Status, b)
	}
}

// What a provider serves is what its routes serve: its only model open reads open and fails
// readiness beside a host circuit that is closed (its own component, "<name>:host"); a model
// whose break ended reads as probing — never as serving — and warns; a model whose calls fail
// for a reason of its configuration fails readiness with its reason, though no circuit is
// open, and with a fallback that serves is a warning. (The provider's check read "closed,
// pass" beside its open model, and a probing model counted as "1 of 1 serving".)
func TestChecker_AProviderReadsWhatItsRoutesServe(t *testing.T) {
	o := resilience.DefaultOptions()
	o.CircuitBreakerThreshold, o.CircuitBreakerDurationSeconds = 1, 30
	clock := &manualClock{now: time.Unix(1_800_000_000, 0)}
	p, err := resilience.New(o, resilience.WithName("openai"), resilience.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	c := NewChecker()
	c.Add("openai", p)
	p.Route("gpt-4o-mini").OpenFor(30 * time.Second)
	doc := readyz(t, c, http.StatusServiceUnavailable)
	for _, want := range []string{`"openai:circuit":[{"componentType":"component","observedValue":"open","status":"fail"`,
		`"serving":"0 of 1 models serving"`, `"openai:host:circuit":[{"componentType":"component","observedValue":"closed","status":"pass"`,
		`"openai:deployments":[{"componentType":"component","observedValue":"0 of 1 serving","status":"fail"`} {
		if !strings.Contains(doc, want) {
			t.Errorf("the only model open: no %s in\n%s", want, doc)
		}
	}
	clock.advance(31 * time.Second) // the break ends: half-open, probing
	doc = readyz(t, c, http.StatusOK)
	for _, want := range []string{`"openai:circuit":[{"componentType":"component","observedValue":"half-open","status":"warn"`,
		`"observedValue":"0 of 1 serving, 1 probing","status":"warn"`} {
		if !strings.Contains(doc, want) {
			t.Errorf("the only model probing: no %s in\n%s", want, doc)
		}
	}

	q, err := resilience.New(o, resilience.WithName("anthropic"))
	if err != nil {
		t.Fatal(err)
	}
	q.Route("gpt-4o-mini").NoteFailing("not_found (HTTP 404): model: gpt-4o-mini")
	chain := NewChecker()
	chain.Add("anthropic", q)
	doc = readyz(t, chain, http.StatusServiceUnavailable)
	for _, want := range []string{`"anthropic:gpt-4o-mini:circuit":[{"componentType":"component","observedValue":"closed","status":"fail"`,
		`"failing":"not_found (HTTP 404): model: gpt-4o-mini","failingCalls":1`} {
		if !strings.Contains(doc, want) {
			t.Errorf("a model the provider does not have: no %s in\n%s", want, doc)
		}
	}
	var ue *UnhealthyError
	if err := chain.Check(context.Background()); !errors.As(err, &ue) || !strings.Contains(err.Error(), "failing: not_found") {
		t.Fatalf("readiness: %v, want the failing route named with its reason", err)
	}
	if q.Route("gpt-4o-mini").OwnCircuitState() != resilience.CircuitClosed {
		t.Fatal("a configuration that fails opened a circuit")
	}
	fb := NewChecker(WithFallback())
	fb.Add("anthropic", q)
	fb.Add("openai2", mustPipeline(t, "openai2"))
	if r := fb.Report(); r.Status != StatusWarn {
		t.Fatalf("with a fallback that serves: %s, want warn", r.Status)
	}
}

// readyz serves c's readiness and returns its document, failing unless the status is code.
func readyz(t *testing.T, c *Checker, code int) string {
	t.Helper()
	rec := httptest.NewRecorder()
	c.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != code {
		t.Fatalf("readiness %d, want %d:\n%s", rec.Code, code, rec.Body.String())
	}
	var b bytes.Buffer
	if err := json.Compact(&b, rec.Body.Bytes()); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func mustPipeline(t *testing.T, name string) *resilience.Pipeline {
	t.Helper()
	p, err := resilience.New(resilience.DefaultOptions(), resilience.WithName(name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// manualClock is a resilience.Clock the test moves; its timers never fire (the checks read
// the state on demand).
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) AfterFunc(time.Duration, func()) resilience.Timer { return stoppedTimer{} }

func (c *manualClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type stoppedTimer struct{}

func (stoppedTimer) Stop() bool               { return false }
func (stoppedTimer) Reset(time.Duration) bool { return false }
