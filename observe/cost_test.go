package observe_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/observe"
	"github.com/steadyllm/steady/providers"
)

func prices(t *testing.T) *cost.Prices {
	t.Helper()
	p, err := cost.NewPrices("USD", []cost.Entry{{Provider: "openai", Model: "gpt-4o-mini", Price: cost.PerMillion(0.15, 0.6)}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCost_MetricAndSpanCarryWhatACallCost(t *testing.T) {
	h := newHarness(t)
	s := mocks.NewServer(mocks.WithReply("four words of reply"))
	defer s.Close()
	c := newClient(t, openAIProvider("openai", s, fastPolicy()), client.WithTelemetry(h.tel), client.WithPrices(prices(t)))
	resp, err := c.Chat(context.Background(), hello(), client.WithPriority("batch"))
	if err != nil {
		t.Fatal(err)
	}
	total := resp.Cost.Total().Units()
	if total <= 0 {
		t.Fatalf("cost %+v", resp.Cost)
	}
	p := h.value(t, observe.MetricCost, observe.KeyProvider.String("openai"), observe.KeyModel.String(resp.Model),
		observe.KeyTenant.String(""), observe.KeyPriority.String("batch"), observe.KeyBilling.String(observe.BillingKnown),
		observe.KeyCurrency.String("USD"))
	if math.Abs(p.sum-total) > 1e-15 {
		t.Fatalf("metric %v, call cost %v", p.sum, total)
	}
	a := h.span(t, "chat gpt-4o-mini").Attributes()
	if got := attr(t, a, string(observe.KeySpanCost)).AsFloat64(); math.Abs(got-total) > 1e-15 {
		t.Fatalf("span cost %v, want %v", got, total)
	}
	if attr(t, a, string(observe.KeySpanCurrency)).AsString() != "USD" || hasAttr(a, string(observe.KeySpanCostEstimated)) {
		t.Fatalf("span attributes %v", a)
	}
}

func TestCost_AnUnpricedModelIsCountedAndLoggedOnce(t *testing.T) {
	h := newHarness(t)
	s := mocks.NewServer()
	defer s.Close()
	c := newClient(t, openAIProvider("openai", s, fastPolicy()), client.WithTelemetry(h.tel), client.WithPrices(prices(t)))
	for range 2 {
		req := hello()
		req.Model = "gpt-mystery"
		if _, err := c.Chat(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if p := h.value(t, observe.MetricCostUnpriced, observe.KeyProvider.String("openai"), observe.KeyModel.String("gpt-mystery")); p.sum != 2 {
		t.Fatalf("unpriced attempts %v, want 2", p.sum)
	}
	n := 0
	for _, r := range h.records(t) {
		if r.str("event") == cost.EventUnpriced.String() {
			n++
			if r.str("level") != "WARN" || !strings.Contains(r.str("msg"), "gpt-mystery at openai has no price") {
				t.Fatalf("record %v", r)
			}
		}
	}
	if n != 1 {
		t.Fatalf("%d log records of the unpriced model, want 1", n)
	}
	a := h.spans.Ended()[0].Attributes()
	if attr(t, a, string(observe.KeySpanCostUnpriced)).AsInt64() != 1 {
		t.Fatalf("span %v", a)
	}
}

// A budgeted call's span says what the budgets decided and for which tenant; a refused call's
// span ends as budget_exhausted; the decisions are counted by budget, action and mode.
func TestCost_BudgetDecisionsReachTheSpanAndTheMetric(t *testing.T) {
	h := newHarness(t)
	s := mocks.NewServer(mocks.WithReply("ok"))
	defer s.Close()
	limit, _ := providers.ParseMoney("0.0000021") // one call of "hello there" answered "ok" costs 0.00000105
	c := newClient(t, openAIProvider("openai", s, fastPolicy()), client.WithTelemetry(h.tel), client.WithPrices(prices(t)),
		client.WithBudgets(cost.LedgerOptions{}, cost.Budget{Name: "tenants", Per: "tenant", Window: cost.Day, Limit: limit, WarnAt: 0.5}))
	var errs []error
	for range 3 {
		req := hello()
		req.MaxTokens = 1
		_, err := c.Chat(context.Background(), req, client.WithTenant("acme"))
		errs = append(errs, err)
	}
	if errs[0] != nil || errs[1] != nil || errs[2] == nil {
		t.Fatalf("errors %v", errs)
	}
	spans := h.spans.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans", len(spans))
	}
	for i, want := range []string{"allow", "warn", "refuse"} {
		a := spans[i].Attributes()
		if got := attr(t, a, string(observe.KeySpanBudget)).AsString(); got != want {
			t.Errorf("span %d: budget action %q, want %q", i, got, want)
		}
		if attr(t, a, string(observe.KeySpanTenant)).AsString() != "acme" {
			t.Errorf("span %d: no tenant", i)
		}
	}
	if got := attr(t, spans[2].Attributes(), "steady.outcome").AsString(); got != string(providers.KindBudgetExhausted) {
		t.Fatalf("the refused call's outcome %q", got)
	}
	for _, action := range []string{"allow", "warn", "refuse"} {
		if p := h.value(t, observe.MetricBudgetDecisions, observe.KeyBudget.String("tenants"), observe.KeyAction.String(action),
			observe.KeyMode.String("enforce")); p.sum != 1 {
			t.Errorf("%s decisions: %v", action, p.sum)
		}
	}
	p := h.value(t, observe.MetricCost, observe.KeyProvider.String("openai"), observe.KeyModel.String("gpt-4o-mini"),
		observe.KeyTenant.String("acme"), observe.KeyPriority.String(""), observe.KeyBilling.String(observe.BillingKnown),
		observe.KeyCurrency.String("USD"))
	if p.sum <= 0 {
		t.Fatalf("cost of acme's calls %v", p.sum)
	}
	// The refusal is the application's policy working, not a provider's failure: the call's
	// record is a warning, and no record of the three calls is an error.
	var refused int
	for _, r := range h.records(t) {
		if r.str("level") == "ERROR" {
			t.Errorf("an error record: %v", r)
		}
		if r.str("outcome") == string(providers.KindBudgetExhausted) {
			refused++
			if r.str("level") != "WARN" {
				t.Errorf("the refused call's record: %v", r)
			}
		}
	}
	if refused != 1 {
		t.Fatalf("%d records of the refused call, want 1", refused)
	}
}
