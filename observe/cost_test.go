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
	_ = providers.CallCost{}
}
