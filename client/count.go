package client

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// Exact token counts. A provider that counts a request's prompt itself (providers.TokenCounter:
// Anthropic's POST /v1/messages/count_tokens) can, where configured (PreflightCount, e.g.
// anthropic.Config.CountTokens), be asked before each call, so that pacing debits the counted
// prompt from the route's tokens-per-minute limit instead of the estimate of four bytes a
// token (EstimateTokens). The answer's share of the debit stays what the estimate allows
// (MaxTokens, or DefaultAnswerTokens), and the usage the answer reports settles the budget
// afterwards, as always.
//
// A count is a request of its own, sent outside the deployment's resilience pipeline, over the
// base transport (WithBaseTransport), by a second instance of the provider built once by its
// factory, with the call's headers and request ID (WithHeader, WithRequestID) but not its extra
// body fields, and without following redirects:
//
//   - It is not a chat call, so it must not count as one: a failed count never opens the
//     circuit nor moves its failure ratio, and takes nothing from the retry budget; a count is
//     never retried (a failure costs the call the count, not its answer).
//   - It has its own rate limit at Anthropic, not the Messages API's: it debits nothing from
//     the route's budgets, holds no bulkhead slot, and its answers' rate-limit headers, which
//     speak of counting, are never read as the route's.
//   - It never fails the call: an error or an answer later than the provider's count timeout
//     (anthropic.Config.CountTimeout) leaves the estimate in its place, and the call's
//     telemetry hears of it (CountTracker; observe counts MetricTokenCounts).
//
// A route without a tokens-per-minute limit — none configured, none learnt yet — is not counted: nothing
// would use the count. Each try counts for itself (a fallback to another model counts again);
// nothing is cached across calls.
//
// Budgets (WithBudgets) use the count too: a call a budget admits is counted once before it is
// admitted, by the chain's first provider that can serve it, when that provider counts before
// each call, so that its pre-flight cost prices the counted prompt rather than the estimate.
// That count also stands for the prompt where a try's usage is unknown (an answer cut before
// its usage), and the call's tries of the same provider and model use it instead of counting
// again. It fails as any count does: the estimate stands in, and the call goes on.

// DefaultCountTimeout bounds a count when the provider states no timeout of its own.
const DefaultCountTimeout = 2 * time.Second

// counting is how a deployment whose provider counts tokens counts them outside its pipeline.
type counting struct {
	preflight bool          // the provider asks to be counted before each call
	timeout   time.Duration // the longest a count may take
	// build makes the provider instance that counts, once, on first use.
	build func() (providers.TokenCounter, error)
	once  sync.Once
	tc    providers.TokenCounter
	err   error
}

// countingOf returns the counting of provider prov, built by factory, of provider name whose
// GenAI system is system, or nil when it does not count tokens. base is the client's base
// transport.
func countingOf(prov providers.Provider, factory ProviderFactory, name, system string, base http.RoundTripper) *counting {
	tc, ok := prov.(providers.TokenCounter)
	if !ok {
		return nil
	}
	on, timeout := tc.PreflightCount()
	if timeout <= 0 {
		timeout = DefaultCountTimeout
	}
	if base == nil {
		base = http.DefaultTransport
	}
	return &counting{preflight: on, timeout: timeout, build: func() (providers.TokenCounter, error) {
		hc := &http.Client{Transport: &extrasTransport{name: name, system: system, next: base, headersOnly: true},
			CheckRedirect: noRedirects}
		p, err := factory(hc)
		if err != nil {
			return nil, err
		}
		tc, ok := p.(providers.TokenCounter)
		if !ok {
			return nil, errors.New("its factory built a provider that does not count tokens")
		}
		return tc, nil
	}}
}

// count counts the prompt of req within the counting's timeout.
func (cn *counting) count(ctx context.Context, req *providers.ChatRequest) (int, error) {
	cn.once.Do(func() { cn.tc, cn.err = cn.build() })
	if cn.err != nil {
		return 0, cn.err
	}
	ctx, cancel := context.WithTimeout(ctx, cn.timeout)
	defer cancel()
	return cn.tc.CountTokens(ctx, req)
}

// preflight returns what try t on its route debits from the route's per-minute limits for req
// (asked of the try's model), and the estimate of its prompt the route learns from when the
// answer reports its usage: nothing (0, and no estimate) when the route has no
// tokens-per-minute limit and the client needs no estimates (counts); else the route's own
// estimate (estimatePrompt) plus the answer's share — or, when d's provider counts before
// each call and the route has a tokens-per-minute limit to feed, the provider's count of the
// prompt plus the answer's share, the route learning at once what its estimate was worth. A
// count that fails leaves the estimate. prior, when not nil, is the count made for the call's
// budgets: a try of its provider and model uses it instead of counting again. tr hears of
// every count it made when it is a CountTracker (on the goroutine of the try: a hedge's own).
func (c *Client) preflight(ctx context.Context, t try, req *providers.ChatRequest, prior *priorCount, tr CallTracker) (int, estimate) {
	d, pipe := t.d, t.d.pipeline.Route(t.key)
	if !c.counts(pipe) {
		return 0, estimate{}
	}
	e := c.estimatePrompt(t.route, req)
	answer := answerTokens(req)
	cn := d.count
	if cn == nil || !cn.preflight || !pipe.PacesTokens() {
		return e.n + answer, e
	}
	if prior.of(d.owner, req.Model) {
		if prior.report.Err != nil {
			return e.n + answer, e
		}
		learn(pipe, e, prior.n)
		return prior.n + answer, estimate{}
	}
	start := time.Now()
	n, err := cn.count(ctx, req)
	if err != nil && ctx.Err() != nil {
		// The try ended while it counted — its hedge lost, the caller gave up, the call's
		// deadline passed: the count did not fail, and nothing will use it.
		return e.n + answer, e
	}
	if ct, ok := tr.(CountTracker); ok {
		ct.TokensCounted(d.countReport(ctx, t.key, e.n, n, err, time.Since(start)))
	}
	if err != nil {
		return e.n + answer, e
	}
	learn(pipe, e, n)
	return n + answer, estimate{} // learnt from the count: the answer's usage teaches nothing more
}

// countReport is the telemetry of a count by d for route that took took: n tokens, or err;
// estimate is the client's estimate of the prompt.
func (d *deployment) countReport(ctx context.Context, route string, estimate, n int, err error, took time.Duration) TokenCount {
	r := TokenCount{Provider: d.owner, Deployment: d.name, Model: route, Estimate: estimate, Duration: took}
	if err != nil {
		r.Err = providers.Classify(ctx, d.name, err)
	} else {
		r.Counted = n
	}
	return r
}

// priorCount is the count of a call's prompt made before it was admitted by its budgets
// (countForBudgets), by provider entry for model (as sent: the deployment's own name for it).
type priorCount struct {
	entry, model string
	n            int        // the prompt's tokens; 0 when the count failed
	report       TokenCount // its telemetry, given to the call's tracker once the call begins
}

// of reports whether p is a count by provider entry for model. A nil p is none's.
func (p *priorCount) of(entry, model string) bool {
	return p != nil && p.entry == entry && p.model == model
}

// countForBudgets counts req's prompt for the budgets that admit the call asking a along chain,
// with options o: by the first provider of the chain that may serve it (pick.go), when it counts
// before each call (its first deployment that may serve the call and counts, for the model it
// would be asked for). It returns nil when that provider does not count (or none can serve the
// call: the walk says why). A failed count is returned too, with its error in the report.
func (c *Client) countForBudgets(ctx context.Context, a ask, chain []string, req *providers.ChatRequest, o *callOptions) *priorCount {
	w := walk{c: c, ask: a, cur: cursor{chain: chain}}
	first, ok := w.first()
	if !ok {
		return nil
	}
	e := first.e
	m := c.modelFor(e, w.model, true)
	for _, d := range e.deps {
		r := routeOf(e, d, m)
		if d.count == nil || !d.count.preflight || w.mayServe(r) != serves {
			continue
		}
		if o.sendsExtras() {
			ctx = &callExtras{Context: ctx, o: o}
		}
		sent := withModel(req, r.model)
		start := time.Now()
		n, err := d.count.count(ctx, sent)
		if err != nil && ctx.Err() != nil {
			return nil // the call ended while it counted: nothing failed, nothing will use it
		}
		return &priorCount{entry: e.name, model: sent.Model, n: n,
			report: d.countReport(ctx, r.key, c.estimatePrompt(r, sent).n, n, err, time.Since(start))}
	}
	return nil
}

// reportCount gives the call's tracker tr the count made for its budgets, if any.
func reportCount(tr CallTracker, pre *priorCount) {
	if ct, ok := tr.(CountTracker); ok && pre != nil {
		ct.TokensCounted(pre.report)
	}
}

// CountTracker is a CallTracker that also hears of the exact token counts made before the
// call's tries (see TokenCount). It is called on the goroutine of the try, which for a hedge is
// not the call's: implementations must be safe for that.
type CountTracker interface {
	TokensCounted(c TokenCount)
}

// TokenCount is one count of a call's prompt made before a try (providers.TokenCounter's
// PreflightCount), for telemetry.
type TokenCount struct {
	// Provider and Deployment name the route counted for, and Model its model (the provider's
	// default when the call names none).
	Provider, Deployment, Model string
	// Counted is the prompt's input tokens as the provider counted them, 0 when the count
	// failed.
	Counted int
	// Estimate is the route's estimate of the same prompt (Client.EstimateTokens' Input),
	// which the count replaced or, when it failed, which stood in for it.
	Estimate int
	// Err is why the count failed, nil when it did not: the estimate was debited instead.
	Err *providers.Error
	// Duration is how long the count took.
	Duration time.Duration
}

// CountTokens returns an exact count of the input tokens of req — system prompt, messages and
// tools — on the first route of the call's chain (WithProviders, WithPolicy… as for Chat) that
// can serve it and count it exactly, for the model it would be asked for: by the provider
// itself where it counts tokens (providers.TokenCounter: Anthropic; Method EstimateProvider),
// or by the route's own encoding (Method EstimateTokenizer: see estimate.go). Routes that can
// do neither are passed over; a chain with no route that can is KindBadRequest (see
// EstimateTokens for an estimate). A provider's count teaches its route what its estimates
// are worth, as an answer's usage does.
//
// A provider's count is one request outside the provider's resilience pipeline, as pre-flight
// counts are (see above): not retried, never counted against the circuit, bounded by the
// provider's count timeout (anthropic.Config.CountTimeout) and by ctx. Its failure is returned
// as a *providers.Error.
func (c *Client) CountTokens(ctx context.Context, req *providers.ChatRequest, opts ...CallOption) (TokenEstimate, error) {
	if ctx == nil {
		return TokenEstimate{}, errNilContext()
	}
	if err := req.Validate(); err != nil {
		return TokenEstimate{}, err
	}
	o := collect(opts)
	pl, err := c.planFor(o)
	if err != nil {
		return TokenEstimate{}, err
	}
	if o.sendsExtras() {
		ctx = &callExtras{Context: ctx, o: o}
	}
	// The routes the call may be sent to, in the chain's order, as the walk would pick them.
	w := walk{c: c, ask: askOf(req, false), cur: cursor{chain: pl.chain}}
	var skipped []string
	entered := false
	for _, name := range pl.chain {
		e := c.entries[name]
		if !w.takes(e) {
			continue
		}
		m := c.modelFor(e, req.Model, !entered)
		entered = true
		serving := false
		for _, d := range e.deps {
			r := routeOf(e, d, m)
			if w.mayServe(r) != serves {
				continue
			}
			serving = true
			out := TokenEstimate{Answer: answerTokens(req), Learnt: resilience.TokenModel{Text: 1, Frame: 1}, Provider: e.name, Deployment: d.name, Model: r.modelName()}
			if d.count != nil {
				sent := withModel(req, r.model)
				n, err := d.count.count(ctx, sent)
				if err != nil {
					return TokenEstimate{}, classify(ctx, d.name, err, nil)
				}
				pipe := d.pipeline.Route(r.key)
				learn(pipe, c.estimatePrompt(r, sent), n)
				out.Input, out.Method = n, EstimateProvider
				out.Learnt = pipe.TokenModel()
				return out, nil
			}
			if enc := c.encodingOf(r); enc != nil {
				out.Input, out.Method, out.Encoding = promptTokens(enc, r.modelName(), req), EstimateTokenizer, enc.Name()
				return out, nil
			}
		}
		if serving {
			skipped = append(skipped, name)
		}
	}
	msg := "no route of the chain can count the request's tokens exactly"
	if len(skipped) > 0 {
		msg += " (" + strings.Join(skipped, ", ") + " can serve it, but neither counts tokens nor has a tokenizer linked)"
	}
	return TokenEstimate{}, &providers.Error{Kind: providers.KindBadRequest, Message: msg + ": use EstimateTokens for an estimate"}
}

// rawSystem is the GenAI system whose providers alone can serve req: that of its raw tools
// (providers.Tool.Raw), "" when it has none.
func rawSystem(req *providers.ChatRequest) string {
	system, _ := req.RawToolSystems()
	return system
}
