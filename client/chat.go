package client

import (
	"context"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// Chat sends req along the fallback chain and returns the first answer. The response's
// Provider field names the provider that served it. A failure is a *providers.Error; when
// more than one provider of the chain failed, it is a *ChainError that leads with the failure
// that explains the outcome (errors.As finds it) and lists every provider's failure.
//
// req is checked before anything is sent (providers.ChatRequest.Validate): a nil request, an
// unknown role or a parameter out of range is a bad_request naming the field. Providers that
// cannot serve the request (no tools, no JSON output…) are skipped. The chain moves on only
// for a failure that is the provider's rather than the request's (providers.ErrorKind
// FallsBack), and never once the caller's context has ended.
func (c *Client) Chat(ctx context.Context, req *providers.ChatRequest, opts ...CallOption) (*providers.ChatResponse, error) {
	op := operation{kind: OperationChat, chat: req, o: collect(opts)}
	resp, err := c.call(ctx, &op)
	if err != nil {
		return nil, c.failed(op.o, err)
	}
	return resp.(*providers.ChatResponse), nil
}

// chatTry makes the try t of the chat call op (its estimate may be replaced by a pre-flight
// count, or by the count made for the budgets).
func (op *operation) chatTry(ctx context.Context, t try) (*providers.ChatResponse, *resilience.CallInfo, error) {
	r := withModel(op.chat, t.model)
	tokens, est := op.c.preflight(ctx, t, r, op.prior, op.tr)
	call := new(resilience.Call)
	t.setUp(call, ctx, false, op.pl.policyFor(t.d, op.o), op.o, tokens)
	resp, err := t.d.provider.Chat(call, r)
	if err == nil && resp != nil {
		pipe := t.d.pipeline.Route(t.key)
		pipe.SettleTokens(call.Info.TokensDebited, resp.Usage.Total())
		learn(pipe, est, resp.Usage.InputTokens)
	}
	return resp, &call.Info, err
}

// serveChat completes the answer resp that attempt at served, after the walk's failures cost
// acct: where it came from, what the call cost, and its telemetry res (nil without).
func (op *operation) serveChat(resp *providers.ChatResponse, at *attempt, res *TryResult, acct Accounting) {
	c := op.c
	resp.Provider, resp.Deployment = at.d.owner, at.d.name
	resp.FailedAttempts, resp.AbandonedUsage = acct.FailedAttempts, acct.AbandonedUsage
	resp.Hedges, resp.HedgeWon = acct.Hedges, acct.HedgeWon
	served := resp.Model
	if resp.Model == "" {
		resp.Model = at.key
	}
	if op.o != nil {
		resp.ClientRequestID = op.o.requestID
	}
	var sc providers.CallCost
	if c.priced() {
		sc = c.servedCost(at.route, served, resp.Usage, op.bill, len(resp.Message.Content))
		resp.Cost = acct.Cost.Add(sc)
	}
	if res != nil {
		res.ResponseModel, res.ResponseID = resp.Model, resp.ID
		res.FinishReason, res.Usage, res.Cost = resp.FinishReason, resp.Usage, sc
	}
}

// withModel returns req asking for model: req itself when it already does, else a copy. A
// provider never changes the request it is given.
func withModel(req *providers.ChatRequest, model string) *providers.ChatRequest {
	if model == req.Model {
		return req
	}
	r := *req
	r.Model = model
	return &r
}
