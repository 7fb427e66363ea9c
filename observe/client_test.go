package observe_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/observe"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

var _ client.Telemetry = (*observe.Telemetry)(nil)

// genAI are the GenAI metric attributes of a try of provider name, of system, asked for model.
func genAI(op, system, legacySystem, name, model, responseModel string, extra ...attribute.KeyValue) []attribute.KeyValue {
	kvs := []attribute.KeyValue{
		semconv.GenAIOperationNameKey.String(op),
		semconv.GenAIProviderNameKey.String(system),
		attribute.String("gen_ai.system", legacySystem),
		observe.KeyProvider.String(name),
		semconv.GenAIRequestModelKey.String(model),
	}
	if responseModel != "" {
		kvs = append(kvs, semconv.GenAIResponseModelKey.String(responseModel))
	}
	return append(kvs, extra...)
}

// with returns a copy of kvs with more appended: attribute.NewSet sorts its argument in place,
// so sets must never share a backing array.
func with(kvs []attribute.KeyValue, more ...attribute.KeyValue) []attribute.KeyValue {
	return append(append([]attribute.KeyValue(nil), kvs...), more...)
}

func TestClient_ChatSpanMetricsAndLogs(t *testing.T) {
	h := newHarness(t)
	s := mocks.NewServer(mocks.WithAPIKey(sentinelKey), mocks.WithReply("hi!"),
		mocks.WithScript(mocks.RateLimited(5*time.Millisecond), mocks.Status(503), mocks.OK()))
	defer s.Close()
	c := newClient(t, azureProvider("azure-eu", s, fastPolicy()), client.WithTelemetry(h.tel))

	temp := 0.2
	req := hello()
	req.MaxTokens, req.Temperature = 50, &temp
	resp, err := c.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}

	span := h.span(t, "chat gpt-4o-mini")
	if span.SpanKind() != trace.SpanKindClient || span.Status().Code != codes.Unset {
		t.Errorf("kind %v, status %v", span.SpanKind(), span.Status())
	}
	a := span.Attributes()
	for key, want := range map[string]any{
		"gen_ai.operation.name":      "chat",
		"gen_ai.provider.name":       "azure.ai.openai",
		"gen_ai.system":              "az.ai.openai",
		"gen_ai.request.model":       "gpt-4o-mini",
		"gen_ai.response.model":      resp.Model,
		"gen_ai.response.id":         resp.ID,
		"gen_ai.request.max_tokens":  int64(50),
		"gen_ai.request.temperature": 0.2,
		"gen_ai.usage.input_tokens":  int64(resp.Usage.InputTokens),
		"gen_ai.usage.output_tokens": int64(resp.Usage.OutputTokens),
		"steady.provider":            "azure-eu",
		"steady.attempts":            int64(3),
		"steady.fallbacks":           int64(0),
		"steady.outcome":             "success",
		"steady.stream":              false,
	} {
		if got := attr(t, a, key).AsInterface(); got != want {
			t.Errorf("span %s = %v (%T), want %v (%T)", key, got, got, want, want)
		}
	}
	if fr := attr(t, a, "gen_ai.response.finish_reasons").AsStringSlice(); len(fr) != 1 || fr[0] != "stop" {
		t.Errorf("finish reasons %v", fr)
	}
	if hasAttr(a, "error.type") {
		t.Error("error.type on a successful call")
	}

	retries := events(span, observe.SpanEventRetry)
	if len(retries) != 2 {
		t.Fatalf("%d retry events on the call span, want 2", len(retries))
	}
	if attr(t, retries[0].Attributes, "steady.server_hint").AsBool() != true ||
		attr(t, retries[0].Attributes, "steady.delay_ms").AsInt64() != 5 ||
		attr(t, retries[1].Attributes, "steady.server_hint").AsBool() != false {
		t.Errorf("retry events %v", retries)
	}

	provider := observe.KeyProvider.String("azure-eu")
	if p := h.value(t, observe.MetricCallDuration, provider, observe.KeyOutcome.String("success")); p.count != 1 || p.sum <= 0 {
		t.Errorf("call duration %+v", p)
	}
	base := genAI("chat", "azure.ai.openai", "az.ai.openai", "azure-eu", "gpt-4o-mini", resp.Model)
	if p := h.value(t, observe.MetricOperationDuration, base...); p.count != 1 {
		t.Errorf("operation duration %+v", p)
	}
	for typ, want := range map[string]int{"input": resp.Usage.InputTokens, "output": resp.Usage.OutputTokens} {
		p := h.value(t, observe.MetricTokenUsage, with(base, semconv.GenAITokenTypeKey.String(typ))...)
		if p.count != 1 || int(p.sum) != want || want == 0 {
			t.Errorf("%s tokens %+v, want sum %d", typ, p, want)
		}
	}
	if pts := h.points(t, observe.MetricTimeToFirstChunk); len(pts) != 0 {
		t.Errorf("time to first chunk recorded for a call that is no stream: %v", pts)
	}
	for _, attempt := range []int{1, 2} {
		h.value(t, observe.MetricRetries, provider, observe.KeyModel.String("gpt-4o-mini"), observe.KeyAttempt.Int(attempt))
	}

	recs := h.records(t)
	retryRecs := withEvent(recs, resilience.EventRetryScheduled)
	if len(retryRecs) != 2 {
		t.Fatalf("%d retry records", len(retryRecs))
	}
	if got, want := retryRecs[0].str("msg"), "attempt 1 of 4 for azure-eu (gpt-4o-mini) failed (status 429); next attempt in 5ms (server hint)"; got != want {
		t.Errorf("retry message %q, want %q", got, want)
	}
	if got, want := retryRecs[1].str("msg"), "attempt 2 of 4 for azure-eu (gpt-4o-mini) failed (status 503); next attempt in 2ms (backoff)"; got != want {
		t.Errorf("retry message %q, want %q", got, want)
	}
	for _, r := range retryRecs {
		if r.str("level") != "WARN" || r.str(observe.LogProvider) != "azure-eu" || r[observe.LogDelayMs] == nil {
			t.Errorf("retry record %v", r)
		}
	}
	for _, r := range withEvent(recs, resilience.EventAttemptFinished) {
		if r.str("level") != "DEBUG" {
			t.Errorf("attempt record at %s", r.str("level"))
		}
	}
	assertNoSecrets(t, "logs", h.logs.String())
	assertNoSecrets(t, "span", spanText(span))
}

// spanText renders everything a span holds, to search it for secrets.
func spanText(s sdktrace.ReadOnlySpan) string {
	var b strings.Builder
	b.WriteString(s.Name() + " " + s.Status().Description)
	set := attribute.NewSet(s.Attributes()...)
	b.WriteString(" " + set.Encoded(attribute.DefaultEncoder()))
	for _, e := range s.Events() {
		set := attribute.NewSet(e.Attributes...)
		b.WriteString(" " + e.Name + " " + set.Encoded(attribute.DefaultEncoder()))
	}
	return b.String()
}

func TestClient_FallbackIsRecorded(t *testing.T) {
	h := newHarness(t)
	down := mocks.NewServer(mocks.WithAPIKey(sentinelKey), mocks.WithScript(mocks.Status(503).Always()))
	defer down.Close()
	up := mocks.NewServer(mocks.WithAPIKey(sentinelKey), mocks.WithReply("from the backup"))
	defer up.Close()
	o := fastPolicy()
	o.RetryCount = 1
	c := newClient(t, openAIProvider("primary", down, o), anthropicProvider("backup", up, o),
		client.WithFallback("primary", "backup"), client.WithTelemetry(h.tel))

	resp, err := c.Chat(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Provider != "backup" {
		t.Fatalf("served by %q", resp.Provider)
	}

	span := h.span(t, "chat gpt-4o-mini")
	a := span.Attributes()
	for key, want := range map[string]any{
		"steady.provider":      "backup",
		"gen_ai.provider.name": "anthropic",
		"gen_ai.system":        "anthropic",
		"steady.attempts":      int64(3), // two to the primary, one to the backup
		"steady.fallbacks":     int64(1),
		"steady.outcome":       "success",
	} {
		if got := attr(t, a, key).AsInterface(); got != want {
			t.Errorf("span %s = %v, want %v", key, got, want)
		}
	}
	fb := events(span, observe.SpanEventFallback)
	if len(fb) != 1 {
		t.Fatalf("%d fallback events", len(fb))
	}
	for key, want := range map[string]any{"steady.provider": "primary", "steady.fallback.to": "backup",
		"error.type": "overloaded", "steady.attempts": int64(2)} {
		if got := attr(t, fb[0].Attributes, key).AsInterface(); got != want {
			t.Errorf("fallback event %s = %v, want %v", key, got, want)
		}
	}

	h.value(t, observe.MetricCallDuration, observe.KeyProvider.String("primary"), observe.KeyOutcome.String("overloaded"))
	h.value(t, observe.MetricCallDuration, observe.KeyProvider.String("backup"), observe.KeyOutcome.String("success"))
	h.value(t, observe.MetricOperationDuration, genAI("chat", "openai", "openai", "primary", "gpt-4o-mini", "",
		semconv.ErrorTypeKey.String("overloaded"))...)
	// The backup is asked for its own default model: the chain has no mapping for gpt-4o-mini.
	h.value(t, observe.MetricOperationDuration, genAI("chat", "anthropic", "anthropic", "backup", "claude-haiku-4-5", resp.Model)...)

	var fallbackLogged bool
	for _, r := range h.records(t) {
		if r.str("msg") == "falling back from primary to backup after overloaded" && r.str("level") == "WARN" {
			fallbackLogged = true
		}
	}
	if !fallbackLogged {
		t.Errorf("no fallback record in\n%s", h.logs.String())
	}
	assertNoSecrets(t, "logs", h.logs.String())
	assertNoSecrets(t, "span", spanText(span))
}

func TestClient_FailedCallMarksTheSpanAsAnError(t *testing.T) {
	h := newHarness(t)
	s := mocks.NewServer(mocks.WithAPIKey(sentinelKey), mocks.WithScript(mocks.RateLimited(0).Always()))
	defer s.Close()
	o := fastPolicy()
	o.RetryCount = 1
	c := newClient(t, openAIProvider("openai", s, o), client.WithTelemetry(h.tel))
	_, err := c.Chat(context.Background(), hello())
	if providers.KindOf(err) != providers.KindRateLimited {
		t.Fatalf("err %v", err)
	}
	span := h.span(t, "chat gpt-4o-mini")
	if span.Status().Code != codes.Error || span.Status().Description == "" {
		t.Errorf("status %+v", span.Status())
	}
	if got := attr(t, span.Attributes(), "error.type").AsString(); got != "rate_limited" {
		t.Errorf("error.type %q", got)
	}
	if got := attr(t, span.Attributes(), "steady.outcome").AsString(); got != "rate_limited" {
		t.Errorf("outcome %q", got)
	}
	if n := len(events(span, observe.SpanEventRetryGaveUp)); n != 1 {
		t.Errorf("%d gave-up events", n)
	}
	h.value(t, observe.MetricCallDuration, observe.KeyProvider.String("openai"), observe.KeyOutcome.String("rate_limited"))
	h.value(t, observe.MetricOperationDuration, genAI("chat", "openai", "openai", "openai", "gpt-4o-mini", "",
		semconv.ErrorTypeKey.String("rate_limited"))...)
	if pts := h.points(t, observe.MetricTokenUsage); len(pts) != 0 {
		t.Errorf("token usage recorded for a failed call: %v", pts)
	}
	// One provider's give-up is a warning (the client might have served the call elsewhere);
	// the call's failure is the one error, naming each provider tried with its own kind.
	var levels []string
	for _, r := range h.records(t) {
		if r.str("level") == "ERROR" || strings.HasPrefix(r.str("msg"), "gave up") || strings.HasPrefix(r.str("msg"), "chat gpt-4o-mini failed") {
			levels = append(levels, r.str("level")+" "+r.str("msg"))
		}
	}
	want := []string{"WARN gave up on openai (gpt-4o-mini) after attempt 2 of 2: retries exhausted",
		"ERROR chat gpt-4o-mini failed after ", ": openai rate_limited"}
	if len(levels) != 2 || levels[0] != want[0] || !strings.HasPrefix(levels[1], want[1]) || !strings.HasSuffix(levels[1], want[2]) {
		t.Errorf("records %q, want %q", levels, want)
	}
	assertNoSecrets(t, "logs", h.logs.String())
	assertNoSecrets(t, "span", spanText(span))
}

func TestClient_EmbeddingsSpan(t *testing.T) {
	h := newHarness(t)
	s := mocks.NewServer(mocks.WithAPIKey(sentinelKey))
	defer s.Close()
	c := newClient(t, openAIProvider("openai", s, fastPolicy()), client.WithTelemetry(h.tel))
	resp, err := c.Embed(context.Background(), &providers.EmbedRequest{Model: "text-embedding-3-small", Inputs: []string{"a", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	span := h.span(t, "embeddings text-embedding-3-small")
	if attr(t, span.Attributes(), "gen_ai.operation.name").AsString() != "embeddings" {
		t.Errorf("attributes %v", span.Attributes())
	}
	h.value(t, observe.MetricOperationDuration, genAI("embeddings", "openai", "openai", "openai", "text-embedding-3-small", resp.Model)...)
}

func TestClient_RejectionsAndTransitionsLandOnTheCallSpan(t *testing.T) {
	h := newHarness(t)
	s := mocks.NewServer(mocks.WithAPIKey(sentinelKey), mocks.WithScript(mocks.Status(503).Always()))
	defer s.Close()
	o := fastPolicy()
	o.RetryCount = 0
	o.CircuitBreakerThreshold = 1
	c := newClient(t, openAIProvider("openai", s, o), client.WithTelemetry(h.tel))

	if _, err := c.Chat(context.Background(), hello()); providers.KindOf(err) != providers.KindOverloaded {
		t.Fatalf("first call: %v", err)
	}
	if _, err := c.Chat(context.Background(), hello()); providers.KindOf(err) != providers.KindCircuitOpen {
		t.Fatalf("second call: %v", err)
	}
	spans := h.spans.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	tripped, rejected := spans[0], spans[1]
	if ev := events(tripped, observe.SpanEventCircuitChanged); len(ev) != 1 ||
		attr(t, ev[0].Attributes, "steady.circuit.to").AsString() != "open" {
		t.Errorf("tripping call's events %v", tripped.Events())
	}
	if ev := events(rejected, observe.SpanEventCircuitRejected); len(ev) != 1 ||
		attr(t, ev[0].Attributes, "steady.circuit.state").AsString() != "open" {
		t.Errorf("rejected call's events %v", rejected.Events())
	}
	if got := attr(t, rejected.Attributes(), "error.type").AsString(); got != "circuit_open" {
		t.Errorf("error.type %q", got)
	}
	if got := attr(t, rejected.Attributes(), "steady.attempts").AsInt64(); got != 0 {
		t.Errorf("attempts %d", got)
	}
	// The model's circuit opened: the events name the model (the state is per model).
	gpt := observe.KeyModel.String("gpt-4o-mini")
	h.value(t, observe.MetricCircuitRejected, observe.KeyProvider.String("openai"), gpt, observe.KeyState.String("open"))
	h.value(t, observe.MetricCircuitBreaker, observe.KeyProvider.String("openai"), gpt, observe.KeyState.String("open"))
	h.value(t, observe.MetricCallDuration, observe.KeyProvider.String("openai"), observe.KeyOutcome.String("circuit_open"))
}

func TestClient_ObserverAndTelemetryBothReceiveEvents(t *testing.T) {
	h := newHarness(t)
	s := mocks.NewServer(mocks.WithAPIKey(sentinelKey), mocks.WithScript(mocks.Status(503), mocks.OK()))
	defer s.Close()
	var seen []resilience.EventType
	c := newClient(t, openAIProvider("openai", s, fastPolicy()), client.WithTelemetry(h.tel),
		client.WithObserver(func(e resilience.Event) { seen = append(seen, e.Type) }))
	if _, err := c.Chat(context.Background(), hello()); err != nil {
		t.Fatal(err)
	}
	if len(seen) == 0 {
		t.Error("the observer saw nothing")
	}
	h.value(t, observe.MetricRetries, observe.KeyProvider.String("openai"), observe.KeyModel.String("gpt-4o-mini"), observe.KeyAttempt.Int(1))
}

func TestClient_CanceledCallIsRecorded(t *testing.T) {
	h := newHarness(t)
	s := mocks.NewServer(mocks.WithAPIKey(sentinelKey), mocks.WithScript(mocks.Stall()))
	defer s.Close()
	c := newClient(t, openAIProvider("openai", s, fastPolicy()), client.WithTelemetry(h.tel))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for deadline := time.Now().Add(5 * time.Second); s.Journal().Len() == 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := c.Chat(ctx, hello())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	span := h.span(t, "chat gpt-4o-mini")
	if got := attr(t, span.Attributes(), "error.type").AsString(); got != "canceled" {
		t.Errorf("error.type %q", got)
	}
}

// A call's policy, request ID and own attributes reach its span and its log record, and never
// its metrics.
func TestClient_CallOptionsReachTheSpanAndTheLog(t *testing.T) {
	h := newHarness(t)
	s := mocks.NewServer(mocks.WithAPIKey(sentinelKey), mocks.WithReply("hi!"))
	defer s.Close()
	c := newClient(t, azureProvider("azure-eu", s, fastPolicy()), client.WithTelemetry(h.tel),
		client.WithPolicies(map[string]resilience.Options{"interactive": fastPolicy()}))
	_, err := c.Chat(context.Background(), hello(), client.WithPolicy("interactive"), client.WithRequestID("r-77"),
		client.WithAttributes(slog.String("tenant", "acme"), slog.Int("tier", 2), slog.Duration("budget", 1500*time.Millisecond)))
	if err != nil {
		t.Fatal(err)
	}
	spans := h.spans.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans", len(spans))
	}
	got := map[attribute.Key]attribute.Value{}
	for _, kv := range spans[0].Attributes() {
		got[kv.Key] = kv.Value
	}
	if got[observe.KeySpanPolicy].AsString() != "interactive" || got[observe.KeySpanRequestID].AsString() != "r-77" ||
		got["tenant"].AsString() != "acme" || got["tier"].AsInt64() != 2 || got["budget"].AsFloat64() != 1.5 {
		t.Fatalf("span attributes %v", spans[0].Attributes())
	}
	logs := h.logs.String()
	if !strings.Contains(logs, `"policy":"interactive"`) || !strings.Contains(logs, `"client_request_id":"r-77"`) ||
		!strings.Contains(logs, `"tenant":"acme"`) {
		t.Fatalf("log records %s", logs)
	}
	for _, p := range h.points(t, "gen_ai.client.operation.duration") {
		if _, ok := p.attrs.Value("tenant"); ok {
			t.Fatal("a call's own attribute reached a metric")
		}
	}
}

// A hedged call counts its hedges by outcome, marks them on its span, and its span and
// metrics name the try that served; the loser is no failure.
func TestClient_HedgesAreRecorded(t *testing.T) {
	h := newHarness(t)
	slow := mocks.NewServer(mocks.WithAPIKey(sentinelKey), mocks.WithScript(mocks.Reply("slow").WithDelay(time.Minute).Always()))
	defer slow.Close()
	fast := mocks.NewServer(mocks.WithAPIKey(sentinelKey), mocks.WithReply("fast"))
	defer fast.Close()
	o := fastPolicy()
	o.HedgeAfterSeconds = 0.02
	o.RetryBudgetPercent, o.RetryBudgetFloor = 1, 1 // one hedge in the window, then refusals
	c := newClient(t, openAIProvider("primary", slow, o), openAIProvider("backup", fast, fastPolicy()),
		client.WithFallback("primary", "backup"), client.WithTelemetry(h.tel))
	resp, err := c.Chat(context.Background(), hello())
	if err != nil || !resp.HedgeWon {
		t.Fatalf("%+v %v", resp, err)
	}
	if pt := h.value(t, observe.MetricHedges, observe.KeyProvider.String("backup"), observe.KeyOutcome.String(observe.OutcomeHedgeWon)); pt.sum != 1 {
		t.Fatalf("hedge_won %v", pt.sum)
	}
	if pt := h.value(t, observe.MetricHedges, observe.KeyProvider.String("primary"), observe.KeyOutcome.String(observe.OutcomeFirstLost)); pt.sum != 1 {
		t.Fatalf("first_lost %v", pt.sum)
	}
	span := h.span(t, "chat gpt-4o-mini")
	if got := attr(t, span.Attributes(), "steady.provider").AsString(); got != "backup" {
		t.Fatalf("span provider %s", got)
	}
	if n := len(events(span, observe.SpanEventHedge)); n != 2 {
		t.Fatalf("%d hedge events, want the loser's and the winner's", n)
	}
	linked := map[trace.SpanID]bool{}
	for _, l := range span.Links() {
		linked[l.SpanContext.SpanID()] = true
	}
	for _, name := range []string{"hedge primary", "hedge backup"} {
		hs := h.span(t, name)
		if hs.Parent().SpanID() != span.SpanContext().SpanID() || !linked[hs.SpanContext().SpanID()] {
			t.Fatalf("%s is not under the call's span, or not linked from it", name)
		}
		if m := attr(t, hs.Attributes(), string(observe.KeySpanModel)).AsString(); m != "gpt-4o-mini" {
			t.Fatalf("%s names the model %q", name, m)
		}
	}
	for _, p := range h.points(t, observe.MetricCallDuration) {
		if v, _ := p.attrs.Value(observe.KeyProvider); v.AsString() == "primary" {
			t.Fatalf("the cancelled primary has a call duration: %v", p.attrs)
		}
	}

	// The budget allows no second hedge: the call waits for the primary, and the refusal counts.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, _ = c.Chat(ctx, hello())
	if pt := h.value(t, observe.MetricHedges, observe.KeyProvider.String("primary"), observe.KeyOutcome.String(observe.OutcomeRefused)); pt.sum != 1 {
		t.Fatalf("refused %v", pt.sum)
	}
}

// A call its whole-call deadline ended is counted among the time limits that ran out, as
// timeout "call", for the provider it tried last — apart from the pipeline's own limits.
func TestClient_TheWholeCallDeadlineIsCountedAsTimeoutCall(t *testing.T) {
	h := newHarness(t)
	// A 429 whose hint passes the 5 s deadline: the call gives up at once, its deadline's.
	s := mocks.NewServer(mocks.WithAPIKey(sentinelKey), mocks.WithScript(mocks.RateLimited(30*time.Second).Always()))
	defer s.Close()
	o := fastPolicy()
	o.CallTimeoutSeconds = 5
	c := newClient(t, openAIProvider("openai", s, o), client.WithTelemetry(h.tel))
	_, err := c.Chat(context.Background(), hello())
	var te *resilience.TimeoutError
	if !errors.As(err, &te) || te.Limit != resilience.TimeoutCall {
		t.Fatalf("err %v, want the call's deadline", err)
	}
	if p := h.value(t, observe.MetricTimeouts, observe.KeyProvider.String("openai"), observe.KeyTimeout.String("call")); p.sum != 1 {
		t.Fatalf("timeout=call counted %v times", p.sum)
	}
	// A call that fails otherwise is not.
	s.Script(mocks.RateLimited(0).Always())
	o.CallTimeoutSeconds, o.RetryCount = 0, 0
	plain := newClient(t, openAIProvider("other", s, o), client.WithTelemetry(h.tel))
	if _, err := plain.Chat(context.Background(), hello()); providers.KindOf(err) != providers.KindRateLimited {
		t.Fatalf("err %v", err)
	}
	for _, p := range h.points(t, observe.MetricTimeouts) {
		if v, ok := p.attrs.Value(observe.KeyProvider); ok && v.AsString() == "other" {
			t.Fatalf("a rate-limited call counted as a timeout: %v", p.attrs.Encoded(attribute.DefaultEncoder()))
		}
	}
}
