package observe_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/observe"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// The records, the span and the metrics of a call each name one route — provider,
// deployment and the model that route was asked for — never a provider beside another's
// model.

// callRecord returns the one record of the end of a call at level.
func callRecord(t *testing.T, h *harness, level string) logRecord {
	t.Helper()
	var found []logRecord
	for _, r := range h.records(t) {
		if r.str("level") == level && r.str(observe.LogOutcome) != "" {
			found = append(found, r)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d %s records of a call's end: %v", len(found), level, found)
	}
	return found[0]
}

// checkRoute fails unless record r names provider, deployment and model.
func checkRoute(t *testing.T, what string, r logRecord, provider, deployment, model string) {
	t.Helper()
	if r.str(observe.LogProvider) != provider || r.str(observe.LogDeployment) != deployment || r.str(observe.LogModel) != model {
		t.Errorf("%s names %s / %s / %s, want %s / %s / %s: %v", what, r.str(observe.LogProvider), r.str(observe.LogDeployment),
			r.str(observe.LogModel), provider, deployment, model, r)
	}
}

// checkSpanRoute fails unless attrs name provider, deployment and model.
func checkSpanRoute(t *testing.T, what string, attrs []attribute.KeyValue, provider, deployment, model string) {
	t.Helper()
	got := [3]string{attr(t, attrs, string(observe.KeySpanProvider)).AsString(), attr(t, attrs, string(observe.KeySpanDeployment)).AsString(),
		attr(t, attrs, string(observe.KeySpanModel)).AsString()}
	if got != [3]string{provider, deployment, model} {
		t.Errorf("%s names %v, want %s / %s / %s", what, got, provider, deployment, model)
	}
}

// A chain whose second provider stopped it with a bad request: the call's record and span name
// that provider with the model it was sent (not the model asked of the chain's first
// provider), the fallback's record and event the first provider with its own.
func TestRoute_AFailureNamesTheRouteWhoseFailureExplainsIt(t *testing.T) {
	h := newHarness(t)
	down := mocks.NewServer(mocks.WithScript(mocks.Status(503).Always()))
	defer down.Close()
	picky := mocks.NewServer(mocks.WithScript(mocks.Error(400, "invalid_request_error", "bad").Always()))
	defer picky.Close()
	o := fastPolicy()
	o.RetryCount = 0
	c := newClient(t, openAIProvider("primary", down, o), anthropicProvider("secondary", picky, o),
		client.WithFallback("primary", "secondary"), client.WithTelemetry(h.tel))
	_, err := c.Chat(context.Background(), hello())
	if providers.KindOf(err) != providers.KindBadRequest {
		t.Fatalf("got %v", err)
	}
	r := callRecord(t, h, "ERROR")
	checkRoute(t, "the call's record", r, "secondary", "secondary", "claude-haiku-4-5")
	if r.str(observe.LogRequestModel) != "gpt-4o-mini" || r.str(observe.LogOutcome) != "bad_request" ||
		!strings.HasPrefix(r.str("msg"), "chat gpt-4o-mini failed after ") || !strings.HasSuffix(r.str("msg"), ": primary overloaded, secondary bad_request") {
		t.Errorf("the call's record: %v", r)
	}
	var fell []logRecord
	for _, r := range h.records(t) {
		if r.str(observe.LogFallbackTo) != "" {
			fell = append(fell, r)
		}
	}
	if len(fell) != 1 {
		t.Fatalf("%d fallback records", len(fell))
	}
	checkRoute(t, "the fallback's record", fell[0], "primary", "primary", "gpt-4o-mini")

	s := h.span(t, "chat gpt-4o-mini")
	a := s.Attributes()
	checkSpanRoute(t, "the span", a, "secondary", "secondary", "claude-haiku-4-5")
	if attr(t, a, string(semconv.GenAIProviderNameKey)).AsString() != "anthropic" || attr(t, a, "steady.outcome").AsString() != "bad_request" ||
		attr(t, a, string(semconv.GenAIRequestModelKey)).AsString() != "gpt-4o-mini" {
		t.Errorf("span attributes %v", a)
	}
	ev := events(s, observe.SpanEventFallback)
	if len(ev) != 1 {
		t.Fatalf("%d fallback events", len(ev))
	}
	checkSpanRoute(t, "the fallback event", ev[0].Attributes, "primary", "primary", "gpt-4o-mini")
	// Each try's metric names its own route and model.
	h.value(t, observe.MetricOperationDuration, observe.KeyProvider.String("secondary"), semconv.GenAIOperationNameKey.String("chat"),
		semconv.GenAIProviderNameKey.String("anthropic"), attribute.String("gen_ai.system", "anthropic"),
		semconv.GenAIRequestModelKey.String("claude-haiku-4-5"), semconv.ErrorTypeKey.String("bad_request"))
}

// A call that failed on every provider, the whole-call deadline cutting its last try, names
// the route it tried last — its provider, deployment and model — in its record, its span and
// the deadline's metric.
func TestRoute_ACallEndedOnItsLastRouteNamesThatRoute(t *testing.T) {
	h := newHarness(t)
	down := mocks.NewServer(mocks.WithScript(mocks.Status(503).Always()))
	defer down.Close()
	slow := mocks.NewServer(mocks.WithScript(mocks.Latency(time.Minute).Always()))
	defer slow.Close()
	o := fastPolicy()
	o.RetryCount = 0
	c := newClient(t, openAIProvider("primary", down, o), anthropicProvider("secondary", slow, o),
		client.WithFallback("primary", "secondary"), client.WithTelemetry(h.tel))
	// Two seconds: the first try's 503 comes back long before; the second waits for a minute.
	_, err := c.Chat(context.Background(), hello(), client.WithCallTimeout(2*time.Second))
	var ce *client.ChainError
	if !errors.As(err, &ce) || ce.Cause.Provider != "secondary" || ce.Cause.GaveUp != string(resilience.GaveUpDeadline) {
		t.Fatalf("got %v", err)
	}
	r := callRecord(t, h, "ERROR")
	checkRoute(t, "the call's record", r, "secondary", "secondary", "claude-haiku-4-5")
	a := h.span(t, "chat gpt-4o-mini").Attributes()
	checkSpanRoute(t, "the span", a, "secondary", "secondary", "claude-haiku-4-5")
	h.value(t, observe.MetricTimeouts, observe.KeyProvider.String("secondary"), observe.KeyTimeout.String("call"))
}

// A tenant's call downgraded by its budget names the downgrade's model — served or failed —
// in its record, its span and its metrics.
func TestRoute_ADowngradedCallNamesTheModelItWasDowngradedTo(t *testing.T) {
	h := newHarness(t)
	s := mocks.NewServer(mocks.WithReply("ok"), mocks.WithScript(mocks.OK(), mocks.OK(), mocks.Status(503).Always()))
	defer s.Close()
	p, err := cost.NewPrices("USD", []cost.Entry{
		{Provider: "openai", Model: "gpt-4o", Price: cost.PerMillion(2.5, 10)},
		{Provider: "openai", Model: "gpt-4o-mini", Price: cost.PerMillion(0.15, 0.6)},
	})
	if err != nil {
		t.Fatal(err)
	}
	limit, _ := providers.ParseMoney("0.0001")
	// The first call, on gpt-4o, costs about 0.0000175: past the downgrade tier, a tenth.
	budget := cost.Budget{Name: "tenants", Per: client.TenantDimension, Window: cost.Day, Limit: limit,
		DowngradeAt: 0.1, Downgrade: cost.Downgrade{Model: "gpt-4o-mini"}}
	o := fastPolicy()
	o.RetryCount = 0
	c := newClient(t, openAIProvider("openai", s, o), client.WithTelemetry(h.tel), client.WithPrices(p),
		client.WithBudgets(cost.LedgerOptions{}, budget))
	ask := func() error {
		req := hello()
		req.Model, req.MaxTokens = "gpt-4o", 1
		_, err := c.Chat(context.Background(), req, client.WithTenant("acme"))
		return err
	}
	if err := ask(); err != nil {
		t.Fatal(err)
	}
	if err := ask(); err != nil {
		t.Fatal(err)
	}
	if err := ask(); providers.KindOf(err) != providers.KindOverloaded {
		t.Fatalf("the third call: %v", err)
	}
	var served []logRecord
	for _, r := range h.records(t) {
		if r.str(observe.LogOutcome) == observe.OutcomeSuccess {
			served = append(served, r)
		}
	}
	if len(served) != 2 {
		t.Fatalf("%d records of served calls", len(served))
	}
	checkRoute(t, "the first call's record", served[0], "openai", "openai", "gpt-4o")
	checkRoute(t, "the downgraded call's record", served[1], "openai", "openai", "gpt-4o-mini")
	if _, ok := served[1][observe.LogRequestModel]; ok {
		t.Errorf("the downgraded call's record names another request model: %v", served[1])
	}
	checkRoute(t, "the failed downgraded call's record", callRecord(t, h, "ERROR"), "openai", "openai", "gpt-4o-mini")

	spans := h.spans.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans", len(spans))
	}
	for i, want := range []struct{ name, model, budget string }{
		{"chat gpt-4o", "gpt-4o", "allow"}, {"chat gpt-4o-mini", "gpt-4o-mini", "downgrade"}, {"chat gpt-4o-mini", "gpt-4o-mini", "downgrade"},
	} {
		a := spans[i].Attributes()
		if spans[i].Name() != want.name || attr(t, a, string(semconv.GenAIRequestModelKey)).AsString() != want.model ||
			attr(t, a, string(observe.KeySpanBudget)).AsString() != want.budget {
			t.Errorf("span %d: %s %v", i, spans[i].Name(), a)
		}
		checkSpanRoute(t, spans[i].Name(), a, "openai", "openai", want.model)
	}
	if p := h.value(t, observe.MetricCallDuration, observe.KeyProvider.String("openai"), observe.KeyOutcome.String("success")); p.count != 2 {
		t.Fatalf("served tries %d", p.count)
	}
	for _, want := range []struct {
		model, errType string
	}{{"gpt-4o", ""}, {"gpt-4o-mini", ""}, {"gpt-4o-mini", "overloaded"}} {
		attrs := []attribute.KeyValue{observe.KeyProvider.String("openai"), semconv.GenAIOperationNameKey.String("chat"),
			semconv.GenAIProviderNameKey.String("openai"), attribute.String("gen_ai.system", "openai"),
			semconv.GenAIRequestModelKey.String(want.model)}
		if want.errType == "" {
			attrs = append(attrs, semconv.GenAIResponseModelKey.String(want.model))
		} else {
			attrs = append(attrs, semconv.ErrorTypeKey.String(want.errType))
		}
		h.value(t, observe.MetricOperationDuration, attrs...)
	}
}

// When every provider failed and one failure may pass, that failure leads the chain's error:
// the call's record and span name its route, with its outcome — not the route tried last,
// whose failure (a refused key) is another.
func TestRoute_AChainThatMayPassNamesTheFailureItLeadsWith(t *testing.T) {
	h := newHarness(t)
	down := mocks.NewServer(mocks.WithScript(mocks.Status(503).Always()))
	defer down.Close()
	refused := mocks.NewServer(mocks.WithScript(mocks.Error(401, "authentication_error", "bad key").Always()))
	defer refused.Close()
	o := fastPolicy()
	o.RetryCount = 0
	c := newClient(t, openAIProvider("primary", down, o), anthropicProvider("secondary", refused, o),
		client.WithFallback("primary", "secondary"), client.WithTelemetry(h.tel))
	_, err := c.Chat(context.Background(), hello())
	if providers.KindOf(err) != providers.KindOverloaded {
		t.Fatalf("got %v", err)
	}
	r := callRecord(t, h, "ERROR")
	checkRoute(t, "the call's record", r, "primary", "primary", "gpt-4o-mini")
	if r.str(observe.LogOutcome) != "overloaded" {
		t.Errorf("the call's record: %v", r)
	}
	a := h.span(t, "chat gpt-4o-mini").Attributes()
	checkSpanRoute(t, "the span", a, "primary", "primary", "gpt-4o-mini")
	if attr(t, a, string(semconv.GenAIProviderNameKey)).AsString() != "openai" || attr(t, a, "steady.outcome").AsString() != "overloaded" ||
		attr(t, a, string(semconv.ErrorTypeKey)).AsString() != "overloaded" {
		t.Errorf("span attributes %v", a)
	}
}
