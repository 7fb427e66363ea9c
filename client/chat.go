package client

import (
	"context"
	"errors"
	"time"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// Chat sends req along the fallback chain and returns the first answer. The response's
// Provider field names the provider that served it. A failure is a *providers.Error; when
// every provider of the chain failed, it is the last provider's error, joined with the
// earlier ones (errors.As finds the last; errors.Is searches all).
//
// The chain moves on only when a provider is unavailable to this request — circuit open,
// overloaded, unavailable, timed out, out of quota, rate limited, bulkhead full — never for an
// error the request itself caused (bad request, auth, context too long, content filter) and
// never once the caller's context has ended.
func (c *Client) Chat(ctx context.Context, req *providers.ChatRequest) (*providers.ChatResponse, error) {
	var tr providers.CallTracker
	if c.telemetry != nil {
		ctx, tr = c.startCall(ctx, providers.OperationChat, false, req.Model, req.MaxTokens, req.Temperature, req.TopP)
	}
	return walkChain(c, ctx, tr, req.Model,
		func(ctx context.Context, e *entry, model string, _ *resilience.CallInfo) (*providers.ChatResponse, error) {
			r := *req
			r.Model = model
			return e.provider.Chat(ctx, &r)
		},
		func(resp *providers.ChatResponse, name string, res *providers.TryResult, _ time.Time) bool {
			resp.Provider = name
			if res != nil {
				res.ResponseModel, res.ResponseID = resp.Model, resp.ID
				res.FinishReason, res.Usage = resp.FinishReason, resp.Usage
			}
			return false
		})
}

// Embed sends req along the fallback chain, as Chat does.
func (c *Client) Embed(ctx context.Context, req *providers.EmbedRequest) (*providers.EmbedResponse, error) {
	var tr providers.CallTracker
	if c.telemetry != nil {
		ctx, tr = c.startCall(ctx, providers.OperationEmbeddings, false, req.Model, 0, nil, nil)
	}
	return walkChain(c, ctx, tr, req.Model,
		func(ctx context.Context, e *entry, model string, _ *resilience.CallInfo) (*providers.EmbedResponse, error) {
			r := *req
			r.Model = model
			return e.provider.Embed(ctx, &r)
		},
		func(resp *providers.EmbedResponse, name string, res *providers.TryResult, _ time.Time) bool {
			resp.Provider = name
			if res != nil {
				res.ResponseModel, res.Usage = resp.Model, resp.Usage
			}
			return false
		})
}

// walkChain asks the providers of the chain in order, each for its own model, until one
// answers or a failure must not fall back. call makes one provider's try; info counts its
// attempts. served completes the answer of provider name and, when telemetry is on (res !=
// nil), what the tracker learns about the try that began at start; it returns true when the
// call goes on after walkChain returns (a stream), which then reports its own end. tr may be
// nil.
func walkChain[R any](c *Client, ctx context.Context, tr providers.CallTracker, model string,
	call func(ctx context.Context, e *entry, model string, info *resilience.CallInfo) (R, error),
	served func(resp R, name string, res *providers.TryResult, start time.Time) (open bool)) (R, error) {
	var zero R
	var failures []error
	for i, name := range c.chain {
		e := c.entries[name]
		m := c.modelFor(e, model, i == 0)
		var start time.Time
		if tr != nil {
			start = time.Now()
		}
		callCtx, info := resilience.WithCallInfo(ctx)
		resp, err := call(callCtx, e, m, info)
		if err == nil {
			if tr == nil {
				served(resp, name, nil, start)
				return resp, nil
			}
			res := tryResult(e, m, start, info, nil)
			if !served(resp, name, &res, start) {
				tr.TryDone(res)
				tr.End(nil)
			}
			return resp, nil
		}
		perr := classify(ctx, name, err, info)
		failures = append(failures, perr)
		next := canFallBack(ctx, perr)
		if tr != nil {
			res := tryResult(e, m, start, info, perr)
			if next {
				res.Next = c.nextAfter(i)
			}
			tr.TryDone(res)
		}
		if !next {
			break
		}
	}
	return zero, endCall(tr, chainError(failures))
}

// endCall reports the failure err of a call to its tracker, if any, and returns err.
func endCall(tr providers.CallTracker, err error) error {
	if tr != nil {
		tr.End(err)
	}
	return err
}

// classify turns any failure into a *providers.Error, filling in what only the client knows:
// the pipeline's rejections, timeouts and refused redirects, and the number of attempts. When
// the caller's context ctx has ended, the failure is KindCanceled whatever else it looks like:
// the caller gave up, and neither the provider nor the pipeline is to blame.
func classify(ctx context.Context, provider string, err error, info *resilience.CallInfo) *providers.Error {
	var pe *providers.Error
	if !errors.As(err, &pe) {
		pe = &providers.Error{Provider: provider, Kind: providers.KindUnknown, Err: err}
	} else {
		cp := *pe
		pe = &cp
	}
	if pe.Provider == "" {
		pe.Provider = provider
	}
	var (
		coe *resilience.CircuitOpenError
		re  *resilience.RedirectError
	)
	switch {
	case ctx.Err() != nil:
		pe.Kind = providers.KindCanceled
		if !errors.Is(pe.Err, ctx.Err()) {
			pe.Err = errors.Join(ctx.Err(), pe.Err)
		}
	case errors.As(err, &coe):
		pe.Kind = providers.KindCircuitOpen
		pe.RetryAfter = coe.RetryAfter
	case errors.Is(err, resilience.ErrBulkheadRejected):
		pe.Kind = providers.KindBulkheadFull
	case errors.Is(err, resilience.ErrTimeout):
		pe.Kind = providers.KindTimeout
	case errors.As(err, &re):
		pe.Kind, pe.StatusCode = providers.KindRedirected, re.StatusCode
		pe.Message = re.Error()
	case errors.Is(err, context.Canceled):
		pe.Kind = providers.KindCanceled
	case errors.Is(err, context.DeadlineExceeded) && pe.StatusCode == 0:
		pe.Kind = providers.KindCanceled // the caller's own deadline
	case pe.Kind == providers.KindUnknown && pe.StatusCode == 0:
		pe.Kind = providers.KindUnavailable
	}
	if info != nil && pe.Attempts == 0 {
		pe.Attempts = info.Attempts
	}
	return pe
}

// canFallBack reports whether the next provider of the chain should be tried after err.
func canFallBack(ctx context.Context, err *providers.Error) bool {
	if ctx.Err() != nil {
		return false
	}
	switch err.Kind {
	case providers.KindCircuitOpen, providers.KindOverloaded, providers.KindUnavailable,
		providers.KindTimeout, providers.KindQuotaExhausted, providers.KindRateLimited,
		providers.KindBulkheadFull, providers.KindStreamTruncated, providers.KindRedirected:
		return true
	}
	return false
}

// chainError returns the last failure, with the earlier ones attached.
func chainError(failures []error) error {
	last := failures[len(failures)-1].(*providers.Error)
	if len(failures) == 1 {
		return last
	}
	return &ChainError{Last: last, Earlier: failures[:len(failures)-1]}
}

// ChainError is returned when every provider of a fallback chain failed. errors.As with a
// *providers.Error finds the last provider's error; Earlier holds the others in chain order.
type ChainError struct {
	Last    *providers.Error
	Earlier []error
}

func (e *ChainError) Error() string {
	msg := "all providers failed: " + e.Last.Error()
	for _, err := range e.Earlier {
		msg += "; " + err.Error()
	}
	return msg
}

// Unwrap returns every provider's error, last first.
func (e *ChainError) Unwrap() []error { return append([]error{e.Last}, e.Earlier...) }
