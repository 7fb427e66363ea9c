package client

import (
	"errors"
	"sync"

	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/tokens"
)

// WithPrices prices every call at t: ChatResponse.Cost and Stream.Cost say what each call
// cost, the telemetry records it, and budgets (WithBudgets) charge it. A model is priced by
// the provider's name as the client knows it (a deployment by its provider's) and the model
// the provider was asked for, else the model the server said served it. A call on a model t
// has no price for costs nothing in the sums, is counted in CallCost.Unpriced, and is reported
// once per provider and model (cost.EventUnpriced). Without WithPrices no call is priced and
// nothing is paid for it.
func WithPrices(t *cost.Prices) Option {
	return func(b *builder) error {
		if t == nil {
			return errors.New("client: WithPrices with a nil table")
		}
		b.costing().prices = t
		return nil
	}
}

// WithCostObserver sends the events of cost accounting (a model with no price, budgets' tiers
// and decisions, the spend store's trouble) to fn. A Telemetry that implements CostTelemetry
// receives them too.
func WithCostObserver(fn cost.Observer) Option {
	return func(b *builder) error {
		b.costing().observer = fn
		return nil
	}
}

// CostTelemetry is a Telemetry that also records the events of cost accounting
// (*observe.Telemetry does: metrics and log records).
type CostTelemetry interface {
	CostEvent(e cost.Event)
}

// costing is the client's cost accounting: its prices, where its events go, and the models it
// has reported.
type costing struct {
	prices   *cost.Prices
	observer cost.Observer
	// budgets and ledgerOpts are WithBudgets'; ledger keeps them once New built it.
	budgets    []cost.Budget
	ledgerOpts cost.LedgerOptions
	ledger     *cost.Ledger
	tel        CostTelemetry

	mu   sync.Mutex
	told map[priceKey]struct{} // the models reported without a price
}

type priceKey struct{ provider, model string }

// maxTold bounds the models reported once each: past it, further ones are not reported (the
// calls are still counted in CallCost.Unpriced).
const maxTold = 4096

func (b *builder) costing() *costing {
	if b.c.cost == nil {
		b.c.cost = &costing{}
	}
	return b.c.cost
}

// emit sends e to the observer and the telemetry.
func (k *costing) emit(e cost.Event) {
	if k.observer != nil {
		k.observer(e)
	}
	if k.tel != nil {
		k.tel.CostEvent(e)
	}
}

// once reports whether provider/model is reported for the first time, and records it.
func (k *costing) once(provider, model string) bool {
	key := priceKey{provider, model}
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.told[key]; ok || len(k.told) >= maxTold {
		return false
	}
	if k.told == nil {
		k.told = map[priceKey]struct{}{}
	}
	k.told[key] = struct{}{}
	return true
}

// price returns the price of the model a provider was asked for (asked), else of the model the
// server named (served); a model with no price is reported once. ok is false for a model
// without a price, and for a client without prices.
func (c *Client) price(provider, asked, served string) (cost.Price, bool) {
	k := c.cost
	if k == nil || k.prices == nil {
		return cost.Price{}, false
	}
	if p, _, ok := lookup(k.prices, provider, asked, served); ok {
		return p, true
	}
	model := asked
	if model == "" {
		model = served
	}
	if k.once(provider, model) {
		k.emit(cost.Event{Type: cost.EventUnpriced, Time: c.now(), Provider: provider, Model: model, Currency: c.currency()})
	}
	return cost.Price{}, false
}

// lookup finds in t the price of asked at provider, else of served; m is the model priced.
func lookup(t *cost.Prices, provider, asked, served string) (p cost.Price, m string, ok bool) {
	if p, ok := t.Lookup(provider, asked); ok {
		return p, asked, true
	}
	if served != asked {
		if p, ok := t.Lookup(provider, served); ok {
			return p, served, true
		}
	}
	return cost.Price{}, "", false
}

// currency is the currency of the client's prices, "" without prices.
func (c *Client) currency() string {
	if c.cost == nil || c.cost.prices == nil {
		return ""
	}
	return c.cost.prices.Currency()
}

// priced reports whether the client prices calls.
func (c *Client) priced() bool { return c.cost != nil && c.cost.prices != nil }

// bill is what the client knows of a call's prompt to price what servers did not count: the
// request, estimated only when a price needs it (the servers' usage prices every answer that
// reports one), or the provider's count of its prompt (input, 0 when none was made).
type bill struct {
	chat  *providers.ChatRequest  // a chat call's request
	embed *providers.EmbedRequest // an embeddings call's
	input int
}

// inputTokens is the prompt's tokens on route r: the provider's count, or the route's
// estimate (estimatePrompt), the one pacing and budgets use.
func (c *Client) inputTokens(b bill, r route) int {
	switch {
	case b.input > 0:
		return b.input
	case b.chat != nil:
		return c.estimatePrompt(r, b.chat).n
	case b.embed != nil:
		return c.estimateEmbed(r, b.embed).n
	}
	return 0
}

// images is the number of images of the prompt.
func (b bill) images() int {
	if b.chat == nil {
		return 0
	}
	return imagesOf(b.chat)
}

// servedCost is the cost of the try that served: asked of provider as model asked, served by
// the model the server named, with usage u; for an answer whose usage is unknown (a server that
// reports none, a stream closed before its end), estimated from b and the text delivered.
func (c *Client) servedCost(r route, served string, u providers.Usage, b bill, text int) providers.CallCost {
	if !c.priced() {
		return providers.CallCost{}
	}
	out := providers.CallCost{Currency: c.currency()}
	p, ok := c.price(r.d.owner, r.key, served)
	switch {
	case !ok:
		out.Unpriced = 1
	case u.Total() > 0:
		out.Serving = p.Of(u, b.images())
	default:
		out.Estimated = p.Tokens(c.inputTokens(b, r), textTokens(text), b.images())
	}
	return out
}

// abandonedCost is the cost of a try of provider, asked for model, that failed with perr: the
// usage the server reported, as known; the text delivered beyond it, and the whole try when
// content came without any usage, as estimated from b. A failure that delivered nothing and
// reported nothing costs nothing: an error status is not billed, and the usage of an attempt
// cut before any content (a hedge that lost, a timeout) is unknown — the servers may bill it,
// but nobody can say what.
func (c *Client) abandonedCost(r route, perr *providers.Error, b bill) providers.CallCost {
	if !c.priced() || perr == nil || (perr.Usage == nil && perr.Partial == "") {
		return providers.CallCost{}
	}
	out := providers.CallCost{Currency: c.currency()}
	p, ok := c.price(r.d.owner, r.key, "")
	if !ok {
		out.Unpriced = 1
		return out
	}
	delivered := tokens.Heuristic.Count(perr.Partial)
	if u := perr.Usage; u != nil && u.Total() > 0 {
		out.Abandoned = p.Of(*u, b.images())
		if extra := delivered - u.OutputTokens; extra > 0 {
			out.Estimated = p.Tokens(0, extra, 0)
		}
		return out
	}
	out.Estimated = p.Tokens(c.inputTokens(b, r), delivered, b.images())
	return out
}

// chargeFailure adds the cost of the failed try of provider e on route (perr) to the walk's
// accounting and returns it.
func (w *walk) chargeFailure(r route, perr *providers.Error) providers.CallCost {
	cc := w.c.abandonedCost(r, perr, w.op.bill)
	w.acct.Cost = w.acct.Cost.Add(cc)
	return cc
}

// startCosting completes the cost accounting as New builds the client: the telemetry that
// records its events.
func (c *Client) startCosting() {
	if c.cost == nil {
		return
	}
	if t, ok := c.telemetry.(CostTelemetry); ok {
		c.cost.tel = t
	}
}

// charge prices the stream's try once, as it ends: with the usage of its Done delta (u), after
// its failure (perr), or, when both are nil, closed by the caller before its end (estimated
// from its prompt and the text delivered). Later calls return the first's result. It is safe
// to call from Close on another goroutine.
func (s *Stream) charge(u *providers.Usage, perr *providers.Error) providers.CallCost {
	if s.c == nil || !s.c.priced() {
		return providers.CallCost{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.billed {
		return s.tryCost
	}
	var cc providers.CallCost
	switch delivered := int(s.delivered.Load()); {
	case perr != nil:
		cc = s.c.abandonedCost(s.route, perr, s.bill)
	case u != nil:
		cc = s.c.servedCost(s.route, s.servedModel, *u, s.bill, delivered)
		s.usage = *u
	default:
		cc = s.c.servedCost(s.route, s.servedModel, providers.Usage{}, s.bill, delivered)
	}
	s.billed, s.tryCost = true, cc
	s.cost = s.acct.Cost.Add(cc)
	return cc
}

// charged returns the cost of the stream's try as charge recorded it (zero before).
func (s *Stream) charged() providers.CallCost {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tryCost
}

// Cost returns what the call cost at the client's prices (WithPrices): once the stream has
// ended — its Done delta, a failure, Close — the cost of the attempt that served (from its
// usage; estimated when it reported none or was closed before its end) and of the attempts
// the call abandoned (providers.CallCost); before that, the abandoned attempts' alone. After a
// rescue it is the whole call's, the failed stream included. Zero without prices.
func (s *Stream) Cost() providers.CallCost {
	s = s.current()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.billed {
		return s.cost
	}
	return s.acct.Cost
}
