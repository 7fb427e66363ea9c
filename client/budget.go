package client

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/internal/redact"
	"github.com/steadyllm/steady/providers"
)

// WithBudgets keeps budgets of what calls spend (see cost.Budget): each call (Chat,
// ChatStream, Embed) is admitted by the budgets that count it — its keys are given with
// WithBudgetKey and WithTenant — before anything is sent: its pre-flight cost (its prompt's
// token estimate, or the provider's exact count where the chain's first provider counts
// before each call, and the most it may answer, MaxTokens or DefaultAnswerTokens, at the price
// of the model the chain's first provider would be asked for) is held in each budget until it
// ends and is then replaced by what it cost (ChatResponse.Cost, Stream.Cost,
// EmbedResponse.Cost: known and estimated). A call whose estimate would take a budget past
// its refuse tier is refused (KindBudgetExhausted, RetryAfter the time until the budget's
// window ends); a chat call whose key's spend passed a downgrade tier goes to the budget's
// Downgrade — its model, providers (in place of the call's chain and of WithProviders) and
// policy — from the next call on (an embeddings call is never downgraded). Budgets in shadow
// mode decide the same way and apply nothing; WithCostObserver receives every decision.
//
// Budgets need prices (WithPrices), in the same currency; a Downgrade must name providers and
// policies of the client. o's Now is the client's clock and its Observer the client's cost
// observer: leave them unset. With a shared store (WithSharedState) that keeps spend
// (cost.SpendStore, as github.com/steadyllm/steady/state/redis does), the budgets are the
// fleet's — every instance sharing the store keeps one spend per budget and key — unless
// o.Store names another store. A client without budgets pays nothing for them.
func WithBudgets(o cost.LedgerOptions, budgets ...cost.Budget) Option {
	return func(b *builder) error {
		if o.Now != nil || o.Observer != nil {
			return errors.New("client: WithBudgets: leave LedgerOptions.Now and Observer unset: the client's clock " +
				"(WithClock) and cost observer (WithCostObserver) are used")
		}
		k := b.costing()
		k.ledgerOpts, k.budgets = o, slices.Clone(budgets)
		return nil
	}
}

// WithBudgetKey names the call's key in the budgets kept per dimension (cost.Budget.Per): a
// tenant, a team, an API key of your own application. A key is 1 to cost.MaxKeyBytes bytes of
// text without control characters, and only dimensions some budget is kept per may be named:
// anything else is a bad_request, before anything is sent. Keys appear in events, errors and
// logs: never use a secret as a key.
//
// An empty key is a bad_request too, unlike an empty WithTenant. This option is only for
// budgets: a call that names a dimension without its key is a mistake to see at once, since
// taken as no key its spend would go, unnoticed, to the key "" that the calls naming no key
// of the dimension share. Leave the option out for a call that has no key.
func WithBudgetKey(dimension, key string) CallOption {
	return func(o *callOptions) { o.keys = append(o.keys, cost.Key{Dimension: dimension, Key: key}) }
}

// TenantDimension is the dimension WithTenant names, and the one MetricCost's tenant attribute
// (package observe) reports.
const TenantDimension = "tenant"

// WithTenant is WithBudgetKey(TenantDimension, tenant): the call's tenant, for the budgets kept
// per tenant and for the telemetry (the span's steady.tenant, the cost metric's tenant). Unlike
// other dimensions, a tenant may be given to a client that keeps no budget per tenant (or no
// budget at all): it is then the telemetry's alone. A malformed tenant is a bad_request all
// the same.
//
// An empty tenant is no tenant: WithTenant("") is the option left out, so a service may pass
// a request header through as it comes. The call then names no tenant to the telemetry, and
// the budgets kept per tenant count it under the key "" that every call naming no tenant
// shares (see cost.Budget), limited like any other key.
func WithTenant(tenant string) CallOption {
	if tenant == "" {
		return noOption
	}
	return WithBudgetKey(TenantDimension, tenant)
}

// noOption is a call option that asks for nothing.
func noOption(*callOptions) {}

// tenantOf returns the call's tenant, "" when it names none.
func (o *callOptions) tenantOf() string {
	if o == nil {
		return ""
	}
	for _, k := range o.keys {
		if k.Dimension == TenantDimension {
			return k.Key
		}
	}
	return ""
}

// startLedger builds the client's budgets as New completes: its clock, its cost observer, the
// shared store when it keeps spend, and the downgrades' providers and policies resolved.
func (c *Client) startLedger() error {
	k := c.cost
	if k == nil || k.budgets == nil {
		return nil
	}
	if k.prices == nil {
		return errors.New("client: WithBudgets needs WithPrices: a call without a price costs nothing to a budget")
	}
	o := k.ledgerOpts
	if o.Currency == "" {
		o.Currency = k.prices.Currency()
	}
	if o.Currency != k.prices.Currency() {
		return fmt.Errorf("client: WithBudgets in %s, but the prices are in %s", o.Currency, k.prices.Currency())
	}
	if o.Store == nil {
		if s, ok := c.shared.(cost.SpendStore); ok {
			o.Store = s
		}
	}
	o.Now, o.Observer = c.now, k.emit
	var errs []error
	budgets := slices.Clone(k.budgets)
	for i := range budgets {
		d := &budgets[i].Downgrade
		d.Providers = slices.Clone(d.Providers)
		for j, name := range d.Providers {
			e := c.lookup(name)
			if e == nil {
				errs = append(errs, fmt.Errorf("client: budget %q: its downgrade names the provider %q, which the client does not have (have %v)",
					budgets[i].Name, name, c.order))
				continue
			}
			d.Providers[j] = e.name
		}
		if d.Policy != "" && c.policy(d.Policy) == nil {
			errs = append(errs, fmt.Errorf("client: budget %q: its downgrade names the policy %q, which the client does not have (have %v)",
				budgets[i].Name, d.Policy, c.policyNames()))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	l, err := cost.NewLedger(o, budgets...)
	if err != nil {
		return fmt.Errorf("client: WithBudgets: %w", err)
	}
	k.ledger = l
	return nil
}

// Ledger returns the client's budgets (WithBudgets), nil when it keeps none: what each key
// spent in each budget (cost.Ledger.Spend).
func (c *Client) Ledger() *cost.Ledger {
	if c.cost == nil {
		return nil
	}
	return c.cost.ledger
}

// admit asks the client's budgets about the call op, before anything is sent: it gives op
// the ticket to settle when it ends (none when the client keeps no budgets) and, for a chat
// call, the count of its prompt made for the budgets (see countForBudgets: it replaces the
// bill's input estimate) and what a downgrade changes — the request's model, and the plan's
// chain and policy. The pre-flight cost prices the first route of the plan's chain that may
// serve the call (see estimate). A refusal is the call's error; op's plan says what the
// budgets decided either way.
func (c *Client) admit(ctx context.Context, op *operation) error {
	l, keys, err := c.budgetsOf(op.o)
	if l == nil || err != nil {
		return err
	}
	// The estimate captures copies, never op itself: a closure that captured it would move
	// it to the heap on every call, budgeted or not.
	a, planned := op.ask(), op.pl.chain
	if op.kind == OperationEmbeddings {
		embed := op.embed
		t, err := l.Admit(ctx, cost.Call{Keys: keys, Estimate: func(*cost.Downgrade) providers.Money {
			// Never downgraded: a budget's downgrade names a chat model, providers and
			// policy, and an embeddings call goes as it was asked.
			return c.estimate(a, planned, nil, func(p cost.Price, r route) providers.Money {
				return p.Tokens(c.estimateEmbed(r, embed).n, 0, 0)
			})
		}})
		op.pl = decided(op.pl, t, err)
		op.ticket = t
		return err
	}
	req := op.chat
	op.prior = c.countForBudgets(ctx, a, planned, req, op.o)
	if op.prior != nil && op.prior.report.Err == nil {
		op.bill.input = op.prior.n
	}
	counted, images, answer := op.bill.input, imagesOf(req), answerTokens(req)
	t, err := l.Admit(ctx, cost.Call{Keys: keys, Estimate: func(d *cost.Downgrade) providers.Money {
		return c.estimate(a, planned, d, func(p cost.Price, r route) providers.Money {
			input := counted
			if input == 0 { // no count, or one that failed: the route's own estimate
				input = c.estimatePrompt(r, req).n
			}
			return p.Tokens(input, answer, images)
		})
	}})
	op.pl = decided(op.pl, t, err)
	if err != nil {
		return err
	}
	op.ticket = t
	if d := t.Downgrade; d != nil {
		if d.Model != "" {
			op.chat = withModel(req, d.Model)
		}
		if len(d.Providers) > 0 {
			op.pl.chain = d.Providers
		}
		if d.Policy != "" {
			op.pl.policy = c.policy(d.Policy)
		}
	}
	return nil
}

// estimate is a call's pre-flight cost at the price of the first route of chain
// that may serve what a asks, as sent (d nil) or changed by the downgrade d, by priced; 0 when that route's
// model has no price (the call is then reported unpriced, and costs nothing) or none may serve.
func (c *Client) estimate(a ask, chain []string, d *cost.Downgrade, priced func(cost.Price, route) providers.Money) providers.Money {
	if d != nil && len(d.Providers) > 0 {
		chain = d.Providers
	}
	if d != nil && d.Model != "" {
		a.model = d.Model
	}
	w := walk{c: c, ask: a, cur: cursor{chain: chain}}
	r, ok := w.first()
	if !ok {
		return 0
	}
	p, ok := c.price(r.e.name, r.key, "")
	if !ok {
		return 0
	}
	return priced(p, r)
}

// budgetsOf returns the client's budgets and the keys a call with options o gives them: a nil
// ledger when the client keeps none (the keys are still checked: a malformed one, or one of a
// dimension no budget is kept per, is the call's error).
func (c *Client) budgetsOf(o *callOptions) (*cost.Ledger, []cost.Key, error) {
	l := c.Ledger()
	if l == nil && (o == nil || len(o.keys) == 0) {
		return nil, nil, nil
	}
	var keys []cost.Key
	if o != nil {
		var err error
		if keys, err = budgetKeys(l, o.keys); err != nil {
			return nil, nil, err
		}
	}
	return l, keys, nil
}

// decided is pl with what the budgets decided for its call — ticket t, or the refusal err —
// for the telemetry.
func decided(pl plan, t *cost.Ticket, err error) plan {
	if err != nil {
		var pe *providers.Error
		if errors.As(err, &pe) && pe.Kind == providers.KindBudgetExhausted {
			pl.budget = cost.ActionRefuse.String()
		}
		return pl
	}
	if t.Enforced {
		pl.budget = t.Action.String()
	}
	if t.Shadowed {
		pl.shadowBudget = t.WouldBe.String()
	}
	return pl
}

// budgetKeys checks the keys a call gives (WithBudgetKey, WithTenant) and returns those for the
// ledger l (nil: the client keeps no budgets): a malformed key is a bad_request, and so is a key
// of a dimension no budget is kept per — but a tenant, which the telemetry reports too, when
// no budget is kept per tenant.
func budgetKeys(l *cost.Ledger, keys []cost.Key) ([]cost.Key, error) {
	drop := 0
	for _, k := range keys {
		if msg := cost.CheckKey(k.Key); msg != "" {
			return nil, &providers.Error{Kind: providers.KindBadRequest,
				Message: fmt.Sprintf("budget key of %q %q: %s", redact.Safe(k.Dimension, 64), redact.Safe(k.Key, 64), msg)}
		}
		switch {
		case l != nil && l.Keeps(k.Dimension):
		case k.Dimension == TenantDimension:
			drop++
		case l == nil:
			return nil, &providers.Error{Kind: providers.KindBadRequest,
				Message: fmt.Sprintf("WithBudgetKey(%q, …): the client keeps no budgets (WithBudgets)", redact.Safe(k.Dimension, 64))}
		}
	}
	if drop == 0 {
		return keys, nil
	}
	kept := make([]cost.Key, 0, len(keys)-drop)
	for _, k := range keys {
		if k.Dimension != TenantDimension || (l != nil && l.Keeps(k.Dimension)) {
			kept = append(kept, k)
		}
	}
	return kept, nil
}

// settle ends a chat call's ticket: it cost cc, its serving attempt (if any) was served by
// provider for model with usage u.
func (c *Client) settle(t *cost.Ticket, cc providers.CallCost, provider, model string, u providers.Usage, b bill) {
	if t == nil {
		return
	}
	t.Settle(cc.Total(), c.wouldBe(t, cc, provider, model, u, b))
}

// wouldBe is what a call that cost cc would have cost had every budget been enforced: its
// serving attempt at the price of the downgrade a budget in shadow mode would have sent it
// to (the served usage priced at the downgrade's model and first provider), cc otherwise. The
// usage another model would have reported is unknown; the served one stands for it.
func (c *Client) wouldBe(t *cost.Ticket, cc providers.CallCost, provider, model string, u providers.Usage, b bill) providers.Money {
	total := cc.Total()
	d := t.WouldDowngrade
	if d == nil || t.Downgrade != nil || cc.Serving == 0 {
		return total
	}
	if len(d.Providers) > 0 {
		provider = d.Providers[0]
	}
	if d.Model != "" {
		model = d.Model
	}
	p, ok := c.price(provider, model, "")
	if !ok {
		return total
	}
	return max(total-cc.Serving, 0).Add(p.Of(u, b.images()))
}

// settle ends the stream's ticket, if it holds one, with what the call cost so far: at its
// end (Done, a failure no rescue follows, Close). Only the first settle counts.
func (s *Stream) settle() {
	if s.ticket == nil || s.c == nil {
		return
	}
	s.mu.Lock()
	cc, u := s.acct.Cost, s.usage
	if s.billed {
		cc = s.cost
	}
	s.mu.Unlock()
	s.c.settle(s.ticket, cc, s.served, s.model, u, s.bill)
}
