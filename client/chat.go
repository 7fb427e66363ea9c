package client

import (
	"context"
	"errors"
	"strings"
	"time"

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
	o := collect(opts)
	resp, err := c.chat(ctx, req, o)
	if err != nil {
		return nil, c.failed(o, err)
	}
	return resp, nil
}

func (c *Client) chat(ctx context.Context, req *providers.ChatRequest, o *callOptions) (*providers.ChatResponse, error) {
	if ctx == nil {
		return nil, errNilContext()
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	pl, err := c.planFor(o)
	if err != nil {
		return nil, err
	}
	ctx, dl := c.withDeadline(ctx, c.callTimeout(o, pl))
	defer dl.release()
	b := c.billOf(req)
	tokens := EstimateTokens(req)
	w := c.newWalk(ctx, nil, pl, askOf(req, false, tokens)).bounded(dl).hedging(o, false).starting(req.Background).billing(b)
	ticket, req, prior, err := c.admit(ctx, w, req, o, &b, false)
	ctx, tr := c.begin(ctx, o, w.pl, OperationChat, false, req.Model, req.MaxTokens, req.Temperature, req.TopP)
	reportCount(tr, prior)
	if err != nil {
		return nil, endCall(tr, err)
	}
	pl = w.pl
	w.ctx, w.tr, w.bill = ctx, tr, b
	resp, err := walkChain(w,
		func(ctx context.Context, t try) (*providers.ChatResponse, *resilience.CallInfo, error) {
			return chatTry(ctx, t, req, pl, o, tokens, prior, tr)
		},
		func() tryFunc[*providers.ChatResponse] {
			return func(ctx context.Context, t try) (*providers.ChatResponse, *resilience.CallInfo, error) {
				return chatTry(ctx, t, req, pl, o, tokens, prior, tr)
			}
		},
		func(resp *providers.ChatResponse, d *deployment, model string, res *TryResult, acct Accounting) bool {
			resp.Provider, resp.Deployment = d.owner, d.name
			resp.FailedAttempts, resp.AbandonedUsage = acct.FailedAttempts, acct.AbandonedUsage
			resp.Hedges, resp.HedgeWon = acct.Hedges, acct.HedgeWon
			served := resp.Model
			if resp.Model == "" {
				resp.Model = model
			}
			if o != nil {
				resp.ClientRequestID = o.requestID
			}
			var sc providers.CallCost
			if c.priced() {
				sc = c.servedCost(d.owner, model, served, resp.Usage, b, len(resp.Message.Content))
				resp.Cost = acct.Cost.Add(sc)
			}
			if res != nil {
				res.ResponseModel, res.ResponseID = resp.Model, resp.ID
				res.FinishReason, res.Usage, res.Cost = resp.FinishReason, resp.Usage, sc
			}
			return false
		})
	if ticket != nil {
		if err != nil {
			c.settle(ticket, w.acct.Cost, "", "", providers.Usage{}, b)
		} else {
			c.settle(ticket, resp.Cost, resp.Provider, resp.Model, resp.Usage, b)
		}
	}
	return resp, err
}

// chatTry makes the try t of a chat call for req, planned as pl, with options o and token
// estimate tokens (which a pre-flight count, or the count prior made for the budgets, may
// replace), for the call's tracker tr.
func chatTry(ctx context.Context, t try, req *providers.ChatRequest, pl plan, o *callOptions, tokens int, prior *priorCount,
	tr CallTracker) (*providers.ChatResponse, *resilience.CallInfo, error) {
	r := withModel(req, t.model)
	tokens = t.d.preflight(ctx, t.key, r, tokens, prior, tr)
	call := new(resilience.Call)
	t.setUp(call, ctx, false, pl.policyFor(t.d, o), o, tokens)
	resp, err := t.d.provider.Chat(call, r)
	if err == nil && resp != nil {
		t.d.pipeline.Route(t.key).SettleTokens(call.Info.TokensDebited, resp.Usage.Total())
	}
	return resp, &call.Info, err
}

// Embed sends req along the fallback chain, as Chat does, skipping providers without
// embeddings.
func (c *Client) Embed(ctx context.Context, req *providers.EmbedRequest, opts ...CallOption) (*providers.EmbedResponse, error) {
	o := collect(opts)
	resp, err := c.embed(ctx, req, o)
	if err != nil {
		return nil, c.failed(o, err)
	}
	return resp, nil
}

func (c *Client) embed(ctx context.Context, req *providers.EmbedRequest, o *callOptions) (*providers.EmbedResponse, error) {
	if ctx == nil {
		return nil, errNilContext()
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	pl, err := c.planFor(o)
	if err != nil {
		return nil, err
	}
	ctx, dl := c.withDeadline(ctx, c.callTimeout(o, pl))
	defer dl.release()
	tokens := embedTokens(req)
	w := c.newWalk(ctx, nil, pl, ask{model: req.Model, need: providers.CapEmbeddings}).bounded(dl)
	ticket, err := c.admitEmbed(ctx, w, o, tokens)
	ctx, tr := c.begin(ctx, o, w.pl, OperationEmbeddings, false, req.Model, 0, nil, nil)
	if err != nil {
		return nil, endCall(tr, err)
	}
	pl = w.pl
	w.ctx, w.tr = ctx, tr
	resp, err := walkChain(w,
		func(ctx context.Context, t try) (*providers.EmbedResponse, *resilience.CallInfo, error) {
			call := new(resilience.Call)
			t.setUp(call, ctx, false, pl.policyFor(t.d, o), o, tokens)
			r := req
			if t.model != req.Model {
				cp := *req
				cp.Model = t.model
				r = &cp
			}
			resp, err := t.d.provider.Embed(call, r)
			if err == nil && resp != nil {
				t.d.pipeline.Route(t.key).SettleTokens(call.Info.TokensDebited, resp.Usage.Total())
			}
			return resp, &call.Info, err
		}, nil,
		func(resp *providers.EmbedResponse, d *deployment, model string, res *TryResult, acct Accounting) bool {
			resp.Provider, resp.Deployment = d.owner, d.name
			resp.FailedAttempts = acct.FailedAttempts
			served := resp.Model
			if resp.Model == "" {
				resp.Model = model
			}
			if o != nil {
				resp.ClientRequestID = o.requestID
			}
			var sc providers.CallCost
			if c.priced() {
				sc = c.servedCost(d.owner, model, served, resp.Usage, bill{input: tokens}, 0)
				resp.Cost = acct.Cost.Add(sc)
			}
			if res != nil {
				res.ResponseModel, res.Usage, res.Cost = resp.Model, resp.Usage, sc
			}
			return false
		})
	if ticket != nil {
		// Never downgraded, an embeddings call would have cost the same with every budget
		// enforced.
		total := w.acct.Cost.Total()
		if err == nil {
			total = resp.Cost.Total()
		}
		ticket.Settle(total, total)
	}
	return resp, err
}

// errNilContext is the failure of a call made with a nil context: the caller's mistake.
func errNilContext() *providers.Error {
	return &providers.Error{Kind: providers.KindBadRequest, Message: providers.NilContext}
}

// failed completes the failure err of a call with options o: the call's own ID on a failure
// raised before any provider was tried (a bad request, an option the client refused), as on
// every other, and the deferral decision in deferred mode.
func (c *Client) failed(o *callOptions, err error) error {
	if o == nil {
		return err
	}
	if o.requestID != "" {
		var pe *providers.Error
		if errors.As(err, &pe) && pe.ClientRequestID == "" {
			pe.ClientRequestID = o.requestID
		}
	}
	return c.deferred(o, err)
}

// begin starts a call with options o and plan pl: the context its providers see (carrying the
// options' HTTP changes, if any) and its telemetry tracker (nil without telemetry).
func (c *Client) begin(ctx context.Context, o *callOptions, pl plan, op Operation, stream bool, model string,
	maxTokens int, temperature, topP *float64) (context.Context, CallTracker) {
	if o.sendsExtras() {
		ctx = &callExtras{Context: ctx, o: o}
	}
	if c.telemetry == nil {
		return ctx, nil
	}
	return c.startCall(ctx, o, pl, op, stream, model, maxTokens, temperature, topP)
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

// endCall reports the failure err of a call to its tracker, if any, and returns err.
func endCall(tr CallTracker, err error) error {
	if tr != nil {
		tr.End(err)
	}
	return err
}

// classify completes the failure of one provider's try with what only the client knows: the
// number of attempts and why the pipeline gave up. Providers map the errors they see (the
// pipeline's rejections included) to *providers.Error where they first see them; an error a
// provider returned as it got it is mapped here the same way (providers.Classify). When the
// call's whole-call deadline caused the failure (it ran out, or a wait would have passed it)
// the failure is KindTimeout with GaveUp "deadline" (see deadline.go). Otherwise, when the
// caller's context ctx has ended the failure is KindCanceled whatever it looks like: the
// caller gave up, and neither the provider nor the pipeline is to blame.
func classify(ctx context.Context, provider string, err error, info *resilience.CallInfo) *providers.Error {
	var pe *providers.Error
	if errors.As(err, &pe) {
		cp := *pe
		pe = &cp
	} else {
		pe = providers.Classify(ctx, provider, err)
	}
	if pe.Provider == "" {
		pe.Provider = provider
	}
	if x, _ := ctx.Value(extrasKey{}).(*callExtras); x != nil {
		pe.ClientRequestID = x.o.requestID
	}
	byDeadline := false
	if d := deadlineOf(ctx); d != nil {
		var wait time.Duration
		if wait, byDeadline = d.explains(err, info); byDeadline {
			d.verdict(pe, wait)
		}
	}
	if !byDeadline && ctx.Err() != nil && pe.Kind != providers.KindCanceled {
		pe.Kind = providers.KindCanceled
		if !errors.Is(pe.Err, ctx.Err()) {
			pe.Err = errors.Join(ctx.Err(), pe.Err)
		}
	}
	if info != nil {
		if pe.Attempts == 0 {
			pe.Attempts = info.Attempts
		}
		if pe.GaveUp == "" && pe.Kind != providers.KindCanceled {
			pe.GaveUp = string(info.GaveUp)
		}
	}
	return pe
}

// canFallBack reports whether the next provider of the chain should be tried after err.
func canFallBack(ctx context.Context, err *providers.Error) bool {
	return ctx.Err() == nil && err.Kind.FallsBack()
}

// chainError returns the failure of a call whose chain found no answer: the one failure
// when only one provider was tried, else a *ChainError.
func chainError(failures []*providers.Error, skipped []string, stopped bool) error {
	if len(failures) == 1 {
		return failures[0]
	}
	return &ChainError{Cause: explain(failures, stopped), Failures: failures, Skipped: skipped}
}

// explain picks the failure that explains the outcome of a chain: the one that stopped it
// (a failure the request caused, or the caller's cancellation); else, when every provider
// failed, the first failure that may pass (so the error is Temporary exactly when trying the
// call again later may succeed); else the first.
func explain(failures []*providers.Error, stopped bool) *providers.Error {
	if stopped {
		return failures[len(failures)-1]
	}
	for _, f := range failures {
		if f.Temporary() {
			return f
		}
	}
	return failures[0]
}

// ChainError is returned when more than one provider of a fallback chain failed. It leads with
// Cause, the failure that explains the outcome, which errors.As finds first: the failure that
// stopped the chain, or, when every provider failed, the first that may pass (Temporary), else
// the first. Failures holds every provider's failure in chain order.
type ChainError struct {
	Cause    *providers.Error
	Failures []*providers.Error
	// Skipped names the providers of the chain that could not serve the call, with what they
	// lack, e.g. "claude (no embeddings)".
	Skipped []string
}

func (e *ChainError) Error() string {
	var b strings.Builder
	b.WriteString(e.Cause.Error())
	b.WriteString(" (every provider failed:")
	for i, f := range e.Failures {
		if i > 0 {
			b.WriteString(";")
		}
		b.WriteString(" ")
		b.WriteString(f.Error())
	}
	if len(e.Skipped) > 0 {
		b.WriteString("; skipped: ")
		b.WriteString(strings.Join(e.Skipped, ", "))
	}
	b.WriteString(")")
	return b.String()
}

// Temporary reports whether the call may succeed if tried again later: Cause's Temporary.
func (e *ChainError) Temporary() bool { return e.Cause.Temporary() }

// Unwrap returns Cause, then the other failures in chain order.
func (e *ChainError) Unwrap() []error {
	out := []error{e.Cause}
	for _, f := range e.Failures {
		if f != e.Cause {
			out = append(out, f)
		}
	}
	return out
}
