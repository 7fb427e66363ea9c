package observe_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/steadyllm/steady/internal/testkit/backend"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/observe"
	"github.com/steadyllm/steady/resilience"
)

// bare is a bare pipeline named "openai" wired with the harness's Telemetry through its one
// option, in front of a fresh transport.
type bare struct {
	p  *resilience.Pipeline
	hc *http.Client
}

func newBare(t *testing.T, h *harness, o resilience.Options, opts ...resilience.Option) *bare {
	t.Helper()
	p, err := resilience.New(o, append([]resilience.Option{resilience.WithName("openai"), h.tel.PipelineOption()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &bare{p: p, hc: &http.Client{Transport: p.Wrap(tr)}}
}

// post sends a chat completion request to s with the sentinel key, and returns the response
// with its body read and closed.
func (b *bare) post(ctx context.Context, s *mocks.Server) (int, error) {
	body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.OpenAIBaseURL()+"/chat/completions?key="+sentinelKey,
		strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+sentinelKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.hc.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

func TestPipeline_RetriesBecomeCountersAndEventsOnTheCallersSpan(t *testing.T) {
	h := newHarness(t)
	s := mocks.NewServer(mocks.WithAPIKey(sentinelKey),
		mocks.WithScript(mocks.RateLimited(5*time.Millisecond), mocks.Status(503), mocks.OK()))
	defer s.Close()
	b := newBare(t, h, fastPolicy())

	// The application's own span, as an otelhttp transport above the pipeline would start it.
	ctx, span := h.tp.Tracer("app").Start(context.Background(), "POST /chat/completions", trace.WithSpanKind(trace.SpanKindClient))
	status, err := b.post(ctx, s)
	span.End()
	if err != nil || status != 200 {
		t.Fatalf("status %d, err %v", status, err)
	}

	provider := observe.KeyProvider.String("openai")
	for _, attempt := range []int{1, 2} {
		if p := h.value(t, observe.MetricRetries, provider, observe.KeyAttempt.Int(attempt)); p.sum != 1 {
			t.Errorf("retries after attempt %d = %v, want 1", attempt, p.sum)
		}
	}
	// The call histograms need the client: a bare pipeline does not know where a call ends.
	if pts := h.points(t, observe.MetricCallDuration); len(pts) != 0 {
		t.Errorf("call duration recorded without a client: %v", pts)
	}

	retries := events(h.span(t, "POST /chat/completions"), observe.SpanEventRetry)
	if len(retries) != 2 {
		t.Fatalf("%d retry events, want 2", len(retries))
	}
	first, second := retries[0].Attributes, retries[1].Attributes
	if attr(t, first, "steady.server_hint").AsBool() != true || attr(t, first, "steady.delay_ms").AsInt64() != 5 ||
		attr(t, first, "http.response.status_code").AsInt64() != 429 || attr(t, first, "steady.attempt").AsInt64() != 1 {
		t.Errorf("first retry event %v", first)
	}
	if attr(t, second, "steady.server_hint").AsBool() != false || attr(t, second, "steady.delay_ms").AsInt64() != 2 ||
		attr(t, second, "http.response.status_code").AsInt64() != 503 || attr(t, second, "steady.provider").AsString() != "openai" {
		t.Errorf("second retry event %v", second)
	}
	assertNoSecrets(t, "logs", h.logs.String())
}

func TestPipeline_BreakerTransitionsAndRejections(t *testing.T) {
	h := newHarness(t)
	s := mocks.NewServer(mocks.WithAPIKey(sentinelKey), mocks.WithScript(mocks.Status(503), mocks.OK().Always()))
	defer s.Close()
	o := fastPolicy()
	o.RetryCount = 0
	o.CircuitBreakerThreshold = 1
	o.CircuitBreakerDurationSeconds = 0.02
	b := newBare(t, h, o)
	ctx, span := h.tp.Tracer("app").Start(context.Background(), "failing call")
	if status, err := b.post(ctx, s); err != nil || status != 503 {
		t.Fatalf("status %d, err %v", status, err)
	}
	span.End()
	if _, err := b.post(context.Background(), s); !errors.Is(err, resilience.ErrCircuitOpen) {
		t.Fatalf("second call: %v, want ErrCircuitOpen", err)
	}
	// The break elapses; a read of the state (as a health check does) sees half-open first.
	eventually(t, "half-open", func() bool { return b.p.CircuitState() == resilience.CircuitHalfOpen })
	if status, err := b.post(context.Background(), s); err != nil || status != 200 {
		t.Fatalf("probe: status %d, err %v", status, err)
	}
	b.p.Isolate()
	b.p.Reset()

	provider := observe.KeyProvider.String("openai")
	for state, want := range map[string]float64{"open": 1, "half-open": 1, "closed": 2, "isolated": 1} {
		if p := h.value(t, observe.MetricCircuitBreaker, provider, observe.KeyState.String(state)); p.sum != want {
			t.Errorf("transitions to %s = %v, want %v", state, p.sum, want)
		}
	}
	if p := h.value(t, observe.MetricCircuitRejected, provider, observe.KeyState.String("open")); p.sum != 1 {
		t.Errorf("rejections = %v, want 1", p.sum)
	}

	// The call that tripped the circuit carries the transition as a span event.
	changes := events(h.span(t, "failing call"), observe.SpanEventCircuitChanged)
	if len(changes) != 1 || attr(t, changes[0].Attributes, "steady.circuit.to").AsString() != "open" ||
		attr(t, changes[0].Attributes, "steady.circuit.from").AsString() != "closed" {
		t.Errorf("span events %v", changes)
	}

	levels := map[string]string{}
	for _, r := range withEvent(h.records(t), resilience.EventBreakerStateChanged) {
		levels[r.str(observe.LogTo)] = r.str("level")
	}
	want := map[string]string{"open": "WARN", "half-open": "INFO", "closed": "INFO", "isolated": "WARN"}
	for state, level := range want {
		if levels[state] != level {
			t.Errorf("transition to %s logged at %q, want %s (all: %v)", state, levels[state], level, levels)
		}
	}
	rejected := withEvent(h.records(t), resilience.EventBreakerRejected)
	if len(rejected) != 1 || rejected[0].str("level") != "WARN" {
		t.Errorf("rejection records %v", rejected)
	}
}

func TestPipeline_TimeoutIsCountedByKind(t *testing.T) {
	h := newHarness(t)
	s := mocks.NewServer(mocks.WithAPIKey(sentinelKey), mocks.WithScript(mocks.Stall(), mocks.OK()))
	defer s.Close()
	o := fastPolicy()
	o.AttemptTimeoutSeconds = 0.02
	b := newBare(t, h, o)
	ctx, span := h.tp.Tracer("app").Start(context.Background(), "slow call")
	status, err := b.post(ctx, s)
	span.End()
	if err != nil || status != 200 {
		t.Fatalf("status %d, err %v", status, err)
	}
	p := h.value(t, observe.MetricTimeouts, observe.KeyProvider.String("openai"), observe.KeyTimeout.String("attempt"))
	if p.sum != 1 {
		t.Errorf("timeouts = %v, want 1", p.sum)
	}
	tos := events(h.span(t, "slow call"), observe.SpanEventTimeout)
	if len(tos) != 1 || attr(t, tos[0].Attributes, "steady.timeout").AsString() != "attempt" ||
		attr(t, tos[0].Attributes, "steady.delay_ms").AsInt64() != 20 {
		t.Errorf("timeout events %v", tos)
	}
	recs := withEvent(h.records(t), resilience.EventTimeout)
	if len(recs) != 1 || recs[0].str("level") != "WARN" || recs[0].str(observe.LogTimeout) != "attempt" {
		t.Errorf("timeout records %v", recs)
	}
}

func TestPipeline_BulkheadRejectionIsCounted(t *testing.T) {
	h := newHarness(t)
	s := mocks.NewServer(mocks.WithAPIKey(sentinelKey))
	defer s.Close()
	o := fastPolicy()
	o.BulkheadMaxConcurrency = 1
	o.BulkheadMaxQueue = 0
	b := newBare(t, h, o)

	// The first exchange holds the only slot until its body is closed.
	req, _ := http.NewRequest(http.MethodPost, s.OpenAIBaseURL()+"/chat/completions",
		strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+sentinelKey)
	held, err := b.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Body.Close()
	ctx, span := h.tp.Tracer("app").Start(context.Background(), "turned away")
	_, err = b.post(ctx, s)
	span.End()
	if !errors.Is(err, resilience.ErrBulkheadRejected) {
		t.Fatalf("err %v, want ErrBulkheadRejected", err)
	}
	if p := h.value(t, observe.MetricBulkheadRejected, observe.KeyProvider.String("openai"),
		observe.KeyPriority.String("default"), observe.KeyReason.String("full")); p.sum != 1 {
		t.Errorf("bulkhead rejections = %v", p.sum)
	}
	if n := len(events(h.span(t, "turned away"), observe.SpanEventBulkheadRejected)); n != 1 {
		t.Errorf("%d bulkhead span events", n)
	}
	recs := withEvent(h.records(t), resilience.EventBulkheadRejected)
	if len(recs) != 1 || recs[0].str("level") != "WARN" {
		t.Errorf("bulkhead records %v", recs)
	}
}

func TestPipeline_GaveUpIsAnErrorWithItsReason(t *testing.T) {
	h := newHarness(t)
	s := mocks.NewServer(mocks.WithAPIKey(sentinelKey), mocks.WithScript(mocks.Status(503).Always()))
	defer s.Close()
	o := fastPolicy()
	o.RetryCount = 1
	b := newBare(t, h, o)
	if status, err := b.post(context.Background(), s); err != nil || status != 503 {
		t.Fatalf("status %d, err %v", status, err)
	}
	p := h.value(t, observe.MetricRetryGaveUp, observe.KeyProvider.String("openai"), observe.KeyReason.String("exhausted"))
	if p.sum != 1 {
		t.Errorf("gave up = %v", p.sum)
	}
	recs := withEvent(h.records(t), resilience.EventGaveUp)
	if len(recs) != 1 || recs[0].str("level") != "ERROR" || recs[0].str(observe.LogReason) != string(resilience.GaveUpExhausted) ||
		recs[0]["status"] != float64(503) {
		t.Errorf("gave-up records %v", recs)
	}
}

func TestPipeline_EventsWithoutASpanStillCount(t *testing.T) {
	h := newHarness(t)
	s := mocks.NewServer(mocks.WithAPIKey(sentinelKey), mocks.WithScript(mocks.Status(502), mocks.OK()))
	defer s.Close()
	b := newBare(t, h, fastPolicy())
	if status, err := b.post(context.Background(), s); err != nil || status != 200 {
		t.Fatalf("status %d, err %v", status, err)
	}
	h.value(t, observe.MetricRetries, observe.KeyProvider.String("openai"), attribute.Int("attempt", 1))
	if n := len(h.spans.Ended()); n != 0 {
		t.Errorf("%d spans started by a bare pipeline", n)
	}
}

// watchedState is a shared state whose trouble the test reports by hand.
type watchedState struct{ watchers resilience.Watchers }

func (s *watchedState) Advise(string, resilience.Advice)  {}
func (s *watchedState) Advice(string) resilience.Advice   { return resilience.Advice{} }
func (s *watchedState) Watch(f func(error)) (stop func()) { return s.watchers.Add(f) }
func (s *watchedState) report(err error)                  { s.watchers.Notify(err) }

// The shared state's trouble is counted, logged as a warning, and its recovery logged.
func TestPipelineTelemetry_SharedStateTrouble(t *testing.T) {
	h := newHarness(t)
	s := &watchedState{}
	if _, err := resilience.New(resilience.DefaultOptions(), resilience.WithName("openai"), resilience.WithSharedState(s),
		h.tel.PipelineOption()); err != nil {
		t.Fatal(err)
	}
	s.report(errors.New("dial tcp 127.0.0.1:1: connection refused"))
	s.report(nil)
	if p := h.value(t, observe.MetricSharedStateFailures, observe.KeyProvider.String("openai")); p.sum != 1 {
		t.Fatalf("%s = %v", observe.MetricSharedStateFailures, p.sum)
	}
	if recs := withEvent(h.records(t), resilience.EventSharedStateFailed); len(recs) != 1 || recs[0].str("level") != "WARN" {
		t.Fatalf("failure records: %v", recs)
	}
	if recs := withEvent(h.records(t), resilience.EventSharedStateRecovered); len(recs) != 1 {
		t.Fatalf("recovery records: %v", recs)
	}
}

// Active probes are counted by outcome, with the model of a model's circuit, and logged: a
// failure as a warning, a success as information.
func TestPipelineTelemetry_ActiveProbes(t *testing.T) {
	h := newHarness(t)
	clk := backend.NewManualClock()
	var up atomic.Bool
	probe := func(ctx context.Context, rt http.RoundTripper, route string) error {
		if !up.Load() {
			return errors.New("still down")
		}
		return nil
	}
	p, err := resilience.New(resilience.DefaultOptions(), resilience.WithName("openai"), resilience.WithClock(clk),
		resilience.WithActiveProbe(probe, time.Second), h.tel.PipelineOption())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	route := p.Route("gpt-4o")
	probed := func(n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for len(withEvent(h.records(t), resilience.EventProbeFinished)) < n && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	route.OpenFor(time.Second)
	clk.Advance(route.CircuitInfo().NextProbeIn)
	probed(1)
	up.Store(true)
	clk.Advance(route.CircuitInfo().NextProbeIn)
	probed(2)
	for _, outcome := range []string{observe.OutcomeFailure, observe.OutcomeSuccess} {
		if pt := h.value(t, observe.MetricActiveProbes, observe.KeyProvider.String("openai"), observe.KeyModel.String("gpt-4o"),
			observe.KeyOutcome.String(outcome)); pt.sum != 1 {
			t.Fatalf("%s{outcome=%s} = %v", observe.MetricActiveProbes, outcome, pt.sum)
		}
	}
	recs := withEvent(h.records(t), resilience.EventProbeFinished)
	if len(recs) != 2 || recs[0].str("level") != "WARN" || recs[1].str("level") != "INFO" {
		t.Fatalf("probe records: %v", recs)
	}
}
