package client

import (
	"context"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// Embed sends req along the fallback chain, as Chat does, skipping providers without
// embeddings.
func (c *Client) Embed(ctx context.Context, req *providers.EmbedRequest, opts ...CallOption) (*providers.EmbedResponse, error) {
	op := operation{kind: OperationEmbeddings, embed: req, o: collect(opts)}
	resp, err := c.call(ctx, &op)
	if err != nil {
		return nil, c.failed(op.o, err)
	}
	return resp.(*providers.EmbedResponse), nil
}

// embedTry makes the try t of the embeddings call op.
func (op *operation) embedTry(ctx context.Context, t try) (*providers.EmbedResponse, *resilience.CallInfo, error) {
	call := new(resilience.Call)
	var est estimate
	if op.c.counts(t.d.pipeline.Route(t.key)) {
		est = op.c.estimateEmbed(t.route, op.embed)
	}
	t.setUp(call, ctx, false, op.pl.policyFor(t.d, op.o), op.o, est.n)
	r := op.embed
	if t.model != r.Model {
		cp := *r
		cp.Model = t.model
		r = &cp
	}
	resp, err := t.d.provider.Embed(call, r)
	if err == nil && resp != nil {
		pipe := t.d.pipeline.Route(t.key)
		pipe.SettleTokens(call.Info.TokensDebited, resp.Usage.Total())
		learn(pipe, est, resp.Usage.InputTokens)
	}
	return resp, &call.Info, err
}

// serveEmbed completes the answer resp that attempt at served, after the walk's failures cost
// acct, and its telemetry res (nil without).
func (op *operation) serveEmbed(resp *providers.EmbedResponse, at *attempt, res *TryResult, acct Accounting) {
	c := op.c
	resp.Provider, resp.Deployment = at.d.owner, at.d.name
	resp.FailedAttempts = acct.FailedAttempts
	served := resp.Model
	if resp.Model == "" {
		resp.Model = at.key
	}
	if op.o != nil {
		resp.ClientRequestID = op.o.requestID
	}
	var sc providers.CallCost
	if c.priced() {
		sc = c.servedCost(at.route, served, resp.Usage, op.bill, 0)
		resp.Cost = acct.Cost.Add(sc)
	}
	if res != nil {
		res.ResponseModel, res.Usage, res.Cost = resp.Model, resp.Usage, sc
	}
}
