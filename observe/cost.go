package observe

import (
	"context"
	"log/slog"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/providers"
)

// The cost metrics (client.WithPrices, client.WithBudgets).
const (
	// MetricCost is what calls cost, in units of the currency (attribute currency), by
	// provider, model, tenant (client.WithTenant; "" for none, "_other" past the first
	// MaxTenantLabels tenants), priority and billing: known (from the usage servers reported)
	// or estimated (attempts whose usage nobody reported, see providers.CallCost).
	MetricCost = "llm_cost_total"
	// MetricCostUnpriced counts the attempts whose model has no price, by provider and model:
	// their cost is in no sum.
	MetricCostUnpriced = "llm_cost_unpriced_total"
	// MetricBudgetDecisions counts what budgets decided for calls, by budget (the one that
	// decided), action (allow, warn, downgrade, refuse) and mode (enforce, shadow: what would
	// have been done).
	MetricBudgetDecisions = "llm_cost_budget_decisions_total"
)

// MaxTenantLabels bounds the tenants MetricCost names: past this many, calls of other tenants
// are counted under "_other", so a metric never grows with the number of tenants.
const MaxTenantLabels = 1000

// Attribute keys of the cost metrics and spans.
const (
	KeyCurrency = attribute.Key("currency") // the price table's currency code
	KeyTenant   = attribute.Key("tenant")   // the call's tenant (client.WithTenant)
	KeyBilling  = attribute.Key("billing")  // known or estimated
	KeyBudget   = attribute.Key("budget")   // a budget's name
	KeyAction   = attribute.Key("action")   // allow, warn, downgrade, refuse
	KeyMode     = attribute.Key("mode")     // enforce or shadow

	// KeySpanCost is the call's whole cost in units of its currency (providers.CallCost.Total),
	// KeySpanCostEstimated the part of it estimated, KeySpanCurrency the currency.
	KeySpanCost          = attribute.Key("steady.cost")
	KeySpanCostEstimated = attribute.Key("steady.cost.estimated")
	KeySpanCurrency      = attribute.Key("steady.cost.currency")
	// KeySpanCostUnpriced counts the call's attempts whose model has no price.
	KeySpanCostUnpriced = attribute.Key("steady.cost.unpriced")
	// KeySpanTenant is the call's tenant (client.WithTenant).
	KeySpanTenant = attribute.Key("steady.tenant")
	// KeySpanBudget is what the client's budgets decided for the call (allow, warn,
	// downgrade, refuse), KeySpanShadowBudget what those in shadow mode would have.
	KeySpanBudget       = attribute.Key("steady.budget.action")
	KeySpanShadowBudget = attribute.Key("steady.budget.shadow_action")
)

// The billing values of MetricCost.
const (
	BillingKnown     = "known"
	BillingEstimated = "estimated"
)

// The attribute layouts of the cost metrics in the option cache (see optionKey).
const (
	layoutCost         uint8 = iota + 32 // a provider, b model, c tenant, d priority, e billing, f currency
	layoutCostUnpriced                   // a provider, b model
	layoutDecision                       // a budget, b action, c mode
)

// costInstruments are the cost metrics of one Telemetry.
type costInstruments struct {
	spend     metric.Float64Counter
	unpriced  metric.Int64Counter
	decisions metric.Int64Counter

	mu      sync.Mutex
	tenants map[string]struct{} // the tenants MetricCost names
}

func (ci *costInstruments) init(m metric.Meter) error {
	var err1, err2, err3 error
	ci.spend, err1 = m.Float64Counter(MetricCost, metric.WithUnit("{currency_unit}"),
		metric.WithDescription("What calls cost, in units of the currency of the prices."))
	ci.unpriced, err2 = m.Int64Counter(MetricCostUnpriced, metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts whose model has no price."))
	ci.decisions, err3 = m.Int64Counter(MetricBudgetDecisions, metric.WithUnit("{call}"),
		metric.WithDescription("What budgets decided for calls."))
	if err1 != nil {
		return err1
	}
	if err2 != nil {
		return err2
	}
	return err3
}

// tenant returns the label of tenant t: itself for the first MaxTenantLabels, "_other" after.
func (ci *costInstruments) tenant(t string) string {
	if t == "" {
		return ""
	}
	ci.mu.Lock()
	defer ci.mu.Unlock()
	if _, ok := ci.tenants[t]; ok {
		return t
	}
	if len(ci.tenants) >= MaxTenantLabels {
		return "_other"
	}
	if ci.tenants == nil {
		ci.tenants = map[string]struct{}{}
	}
	ci.tenants[t] = struct{}{}
	return t
}

// tryCost records what try r of a call that started as s cost.
func (in *instruments) tryCost(ctx context.Context, s *client.CallStart, r *client.TryResult) {
	cc := r.Cost
	if cc.Currency == "" {
		return
	}
	ci := &in.costs
	model := r.ResponseModel
	if model == "" {
		model = r.Model
	}
	if cc.Unpriced > 0 {
		ci.unpriced.Add(ctx, int64(cc.Unpriced), in.options.get(optionKey{layout: layoutCostUnpriced, a: r.Provider, b: model},
			func() []attribute.KeyValue {
				return []attribute.KeyValue{KeyProvider.String(r.Provider), KeyModel.String(model)}
			}).add...)
	}
	tenant := ""
	if s.Tenant != "" {
		tenant = ci.tenant(s.Tenant)
	}
	for _, part := range [2]struct {
		billing string
		amount  providers.Money
	}{{BillingKnown, cc.Known()}, {BillingEstimated, cc.Estimated}} {
		if part.amount <= 0 {
			continue
		}
		k := optionKey{layout: layoutCost, a: r.Provider, b: model, c: tenant, d: string(s.Priority), e: part.billing, f: cc.Currency}
		ci.spend.Add(ctx, part.amount.Units(), in.options.get(k, func() []attribute.KeyValue {
			return []attribute.KeyValue{KeyProvider.String(k.a), KeyModel.String(k.b), KeyTenant.String(k.c),
				KeyPriority.String(k.d), KeyBilling.String(k.e), KeyCurrency.String(k.f)}
		}).add...)
	}
}

// budgetAttributes appends the span attributes of the budgets' decision for the call that
// started as c.
func budgetAttributes(attrs []attribute.KeyValue, c client.CallStart) []attribute.KeyValue {
	if c.Budget != "" {
		attrs = append(attrs, KeySpanBudget.String(c.Budget))
	}
	if c.ShadowBudget != "" {
		attrs = append(attrs, KeySpanShadowBudget.String(c.ShadowBudget))
	}
	return attrs
}

// costAttributes appends the span attributes of a call's cost cc to attrs.
func costAttributes(attrs []attribute.KeyValue, cc providers.CallCost, tenant string) []attribute.KeyValue {
	if tenant != "" {
		attrs = append(attrs, KeySpanTenant.String(tenant))
	}
	if cc.Currency == "" {
		return attrs
	}
	attrs = append(attrs, KeySpanCost.Float64(cc.Total().Units()), KeySpanCurrency.String(cc.Currency))
	if cc.Estimated > 0 {
		attrs = append(attrs, KeySpanCostEstimated.Float64(cc.Estimated.Units()))
	}
	if cc.Unpriced > 0 {
		attrs = append(attrs, KeySpanCostUnpriced.Int(cc.Unpriced))
	}
	return attrs
}

// CostEvent records an event of the client's cost accounting: MetricBudgetDecisions for each
// decision, and with WithLogger a record of each other event (Warn for a model without a
// price, a budget's tier, the spend store's trouble; Info for the rest). It makes *Telemetry a
// client.CostTelemetry.
func (t *Telemetry) CostEvent(e cost.Event) {
	ctx := context.Background()
	if e.Type == cost.EventDecision {
		mode := "enforce"
		if e.Shadow {
			mode = "shadow"
		}
		action := e.Action.String()
		t.inst.costs.decisions.Add(ctx, 1, t.inst.options.get(optionKey{layout: layoutDecision, a: e.Budget, b: action, c: mode},
			func() []attribute.KeyValue {
				return []attribute.KeyValue{KeyBudget.String(e.Budget), KeyAction.String(action), KeyMode.String(mode)}
			}).add...)
		return
	}
	l := t.logger
	level := slog.LevelWarn
	switch e.Type {
	case cost.EventStoreRecovered:
		level = slog.LevelInfo
	}
	if l == nil || !l.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{slog.String(LogEvent, e.Type.String())}
	msg := ""
	switch e.Type {
	case cost.EventUnpriced:
		msg = "model " + e.Model + " at " + e.Provider + " has no price: its calls cost nothing in the sums"
		attrs = append(attrs, slog.String(LogProvider, e.Provider), slog.String(LogModel, e.Model))
	case cost.EventStoreFailed:
		msg = "the spend store stopped answering"
		if e.Err != nil {
			attrs = append(attrs, slog.String(LogError, safeText(e.Err)))
		}
	case cost.EventStoreRecovered:
		msg = "the spend store answers again"
	default:
		msg = "budget " + e.Budget + ": " + e.Type.String()
		if e.Shadow {
			msg += " (shadow: nothing enforced)"
		}
		attrs = append(attrs, slog.String("budget", e.Budget), slog.String("budget_key", e.Key),
			slog.String("spent", e.Spent.String()), slog.String("limit", e.Limit.String()),
			slog.String("currency", e.Currency), slog.Time("window_end", e.WindowEnd))
	}
	l.LogAttrs(ctx, level, msg, attrs...)
}
