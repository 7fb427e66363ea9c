package client

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// The attempt: one try of a call on one route — sent alone, or raced against its hedges
// (hedge.go) — and the one record of how it ended. Every try is set up the same way (setUp:
// the resilience.Call its provider sends under), and every try that failed is recorded the same
// way (lost: what it taught of its route's speed, the failure among the call's, what it cost,
// the deployment taken out for a failure that will not pass by itself) and reported the same
// way (report: the telemetry's TryResult), whether the walk or a hedge race sent it. A new cost
// rule or a new record of a failed try goes in lost.

// try is one try of a call on one route, waiting at most maxWait there (see
// resilience.Call.MaxWait).
type try struct {
	route
	maxWait time.Duration
	// elsewhere: another route can serve the call at once (resilience.Call.Elsewhere), so a
	// silent attempt is not retried on this one.
	elsewhere bool
	// noContinue: no route after this one could continue a stream's answer, so a stream in
	// "continue-or-buffer" is buffered.
	noContinue bool
}

// setUp makes call the resilience.Call of try t of a call with options o, made with ctx, under
// policy pol (nil: the pipeline's), debiting tokens from the route's per-minute limits; with
// reports, the caller reports the call's failures after its headers (a stream's). The client
// reports every call's outcome itself (it may go on elsewhere).
func (t try) setUp(call *resilience.Call, ctx context.Context, reports bool, pol *resilience.Policy, o *callOptions, tokens int) {
	call.Init(ctx, reports)
	call.Policy, call.MaxWait, call.Tokens = pol, o.maxWait(t.maxWait), tokens
	call.OutcomeReported, call.Route, call.Elsewhere = true, t.key, t.elsewhere
	call.Priority = o.priorityOf()
}

// attempt is a try the walk sent on its route, from start: its own, or a hedge of it.
type attempt struct {
	route
	start time.Time
	hedge bool // a hedge, not the walk's own try on this step
	// raced, above 0, is how long after its start the try still had no first content when its
	// call sent another try (a hedge): resilience.LatencySample.Raced.
	raced time.Duration
	// wrote, for a hedge, is set once its request went out (net/http wrote it): a hedge
	// cancelled before then never reached the wire (Accounting.HedgesUnsent).
	wrote *atomic.Bool
	// done and cancel are a hedge race's: the try has ended, and what cancels it.
	done   bool
	cancel context.CancelCauseFunc
}

// lost records the failure err of attempt a, whose try returned resp and info: what it taught
// of its route's speed (observe), the failure among the walk's (failed, which takes a
// deployment out for a refused key or a spent quota) and what it cost (chargeFailure). It
// returns the failure, how long the try took, and its cost.
func (w *walk) lost(a *attempt, resp any, info *resilience.CallInfo, err error) (*providers.Error, time.Duration, providers.CallCost) {
	took := w.observe(a, resp, err)
	perr := w.failed(a.e, a.d, err, info)
	if perr.Kind.Misconfigured() && w.ctx.Err() == nil {
		noteFailing(a.route, perr)
	}
	return perr, took, w.chargeFailure(a.route, perr)
}

// noteFailing marks route r failing (resilience.Pipeline.NoteFailing) after perr, a failure of
// its configuration (providers.ErrorKind.Misconfigured): a model the server does not have
// fails that model's route; a refused key or a base URL that redirects, every model of the
// deployment. Its circuit does not count it, yet health, Deployments and the status page show
// the route not serving, with why, until a call of it succeeds.
func noteFailing(r route, perr *providers.Error) {
	reason := string(perr.Kind)
	if perr.StatusCode != 0 {
		reason += fmt.Sprintf(" (HTTP %d)", perr.StatusCode)
	}
	if perr.Message != "" {
		reason += ": " + perr.Message // scrubbed of the key where the provider made it
	}
	p := r.d.pipeline
	if perr.Kind == providers.KindNotFound {
		p = p.Route(r.key)
	}
	p.NoteFailing(reason)
}

// report tells the call's telemetry, if any, how attempt a ended: after took, with info, failing
// with perr (nil: served) at a cost of spent, the walk going on to next ("" for none).
func (w *walk) report(a *attempt, took time.Duration, info *resilience.CallInfo, perr *providers.Error,
	spent providers.CallCost, next string) {
	tr := w.op.tr
	if tr == nil {
		return
	}
	res := tryResult(a.e, a.d, a.model, took, info, perr)
	res.Hedge, res.Cost, res.Next = a.hedge, spent, next
	tr.TryDone(res)
}
