package client

import (
	"context"
	"slices"
	"strings"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// The walk: one call's way along its chain of routes, in three stages a step — pick the next
// route that may serve the call (pick.go), make the attempt there, alone or raced against its
// hedges (attempt.go, hedge.go), and decide after a failure whether and where the call goes on
// (decide.go) — and what it learnt on the way: the routes it tried, its failures, what they
// cost.

// walk is one call's way along its chain, and what it learnt on the way.
type walk struct {
	c   *Client
	ctx context.Context // the context the call's providers see
	// op is the call: what it asks, what its tries read (a copy of the operation as its
	// prologue left it, so that the walk, which a stream's rescue copies, holds no pointer to
	// where its caller made it).
	op operation
	// ask is what the call asks of the routes (pick.go), cur where the walk stands on its
	// chain.
	ask
	cur cursor
	// tried holds the routes tried so far, which a rescue does not try again (the first
	// ntried, then triedMore: a call that does not fail allocates nothing for it); retried
	// those asked again after a failure that called for it (decide).
	tried     [4]*deployment
	ntried    int
	triedMore []*deployment
	retried   []*deployment
	// order is the room for the order in which a provider's deployments are tried
	// (entry.order), so that routing allocates nothing for up to this many.
	order [routeRoom]*deployment
	// minWindow, once a route answered that the prompt exceeds its context window, is that
	// window: only routes that declare a larger one are tried after it.
	minWindow int
	// pinSkips counts the routes skipped because they do not hold the state the call is
	// pinned to (see holds); windowSkips those skipped because their context window was too
	// small (fits), after which the chain may widen once (see widen).
	pinSkips    int
	windowSkips int
	widened     bool
	// counted are the call's estimates on the routes whose context windows it was checked
	// against (needs), the first ncounted of them.
	counted  [4]routeCount
	ncounted int
	// carried is what a continuation carries of the answer so far, in tokens, which the
	// context windows must hold too (see rescue).
	carried int

	failures []*providers.Error
	skipped  []string
	acct     Accounting
	// leaving is the route the call failed on last and goes on from: the next route it is
	// sent to counts a failover of it (DeploymentInfo.Failovers).
	leaving *deployment
}

// Accounting is what a call cost beyond the answer it returns: the HTTP attempts that failed
// before the one that served (retries of the serving route included), and the usage the
// servers reported for attempts that were abandoned (a stream cut after its usage was known),
// which they may bill.
type Accounting struct {
	FailedAttempts int
	AbandonedUsage providers.Usage
	// Hedges is the number of hedges the call sent (resilience.Options.HedgeAfterSeconds,
	// WithHedge) that reached the wire: tries beyond the first, sent because none had first
	// content after the hedge delay, whose request went out (net/http wrote it), or that
	// ended on their own after the pipeline sent an attempt (so too over a transport that
	// reports no trace, whose hedges cancelled while out count as unsent). HedgesUnsent counts
	// the hedges the call started but cancelled before their request went out — typically
	// because another try delivered as the hedge started — and those a route turned away
	// unsent (its bulkhead full); no server saw them. HedgeWon reports that a hedge served the
	// answer; HedgesRefused counts the hedges the retry budget did not allow. A cancelled try
	// may still be billed by its provider for the prompt it had read; the servers do not say,
	// so AbandonedUsage cannot.
	Hedges        int
	HedgesUnsent  int
	HedgeWon      bool
	HedgesRefused int
	// Cost is the cost of the attempts abandoned (CallCost.Abandoned, Estimated and Unpriced;
	// the serving attempt's is the answer's), at the client's prices (WithPrices).
	Cost providers.CallCost
}

// run walks the chain until a route answers or a failure must not go on: it picks the next
// route that may serve the call, makes the attempt there, and after a failure decides whether
// and where the call goes on. It returns the answer (the operation's serve completed it), or
// the call's failure, having ended the call's telemetry unless the answer is a stream (which
// reports its own end).
func (w *walk) run() (any, error) {
	op := &w.op
	if err := w.preflight(); err != nil {
		return nil, endCall(op.tr, err)
	}
	for {
		r, ok := w.pick()
		if !ok && w.widen() {
			r, ok = w.pick()
		}
		if !ok {
			return nil, endCall(op.tr, w.exhausted())
		}
		if op.dl != nil && len(w.failures) > 0 && op.dl.expired() {
			// The call's deadline passed since the last failure: no route is started that
			// could not answer in time.
			return nil, endCall(op.tr, w.outcome(true))
		}
		w.markTried(r.d)
		if w.leaving != nil && w.leaving != r.d {
			w.leaving.failovers.Add(1)
		}
		w.leaving = nil
		wait := w.waitFor()
		t := try{route: r, maxWait: wait, elsewhere: wait != 0}
		if op.stream && op.rescueMode(r.d) == resilience.RescueContinueOrBuffer {
			t.noContinue = !w.continuable()
		}
		// at is the attempt whose try ended: this one, or with hedging the one that served
		// (or failed last).
		at := attempt{route: r, start: w.c.now()}
		var (
			resp any
			info *resilience.CallInfo
			err  error
		)
		if h := w.hedgeOf(r.d); h.After > 0 {
			resp, info, err, at = w.hedged(h, at, t)
		} else {
			resp, info, err = op.try(w.ctx, t)
		}
		if err == nil {
			return w.served(resp, &at, info), nil
		}
		perr, took, spent := w.lost(&at, resp, info, err)
		v, to := w.decide(perr, &at)
		next := w.follow(v, to, &at)
		nextName := ""
		if next {
			nextName = w.nextName()
		}
		w.report(&at, took, info, perr, spent, nextName)
		if !next {
			return nil, endCall(op.tr, w.outcome(true))
		}
	}
}

// served completes the answer resp of attempt at, whose try ended with info, and reports the
// try and, unless the answer is a stream, the call to the telemetry.
func (w *walk) served(resp any, at *attempt, info *resilience.CallInfo) any {
	op := &w.op
	took := w.observe(at, resp, nil)
	if at.d.outs.Load() != 0 {
		at.d.outs.Store(0) // back in service: the next take-out starts from the first break
	}
	if info != nil {
		w.acct.FailedAttempts += max(info.Attempts-1, 0)
	}
	if op.tr == nil {
		op.serve(w, resp, at, nil)
		return resp
	}
	res := tryResult(at.e, at.d, at.model, took, info, nil)
	res.Hedge = at.hedge
	if !op.serve(w, resp, at, &res) {
		op.tr.TryDone(res)
		op.tr.End(nil)
	}
	return resp
}

// exhausted is the failure of a walk whose chain has no route left: the request's fault when
// no route could serve it at all, else what the routes tried failed with.
func (w *walk) exhausted() error {
	if len(w.failures) == 0 {
		return &providers.Error{Kind: providers.KindBadRequest,
			Message: "no provider of the chain can serve this call: " + strings.Join(w.skipped, ", ")}
	}
	if w.pinSkips > 0 && len(w.failures) == 1 {
		// One failure is the call's error as it is: say why the chain did not go on.
		f := w.failures[0]
		f.Message += "; not sent elsewhere: the call continues from " + w.pin.What +
			", which only " + f.Provider + " holds"
	}
	return w.outcome(false)
}

// failed records the failure err of the try of deployment d of provider e.
func (w *walk) failed(e *entry, d *deployment, err error, info *resilience.CallInfo) *providers.Error {
	perr := classify(w.ctx, d.name, err, info)
	if len(e.deps) > 1 {
		perr.Provider = d.name // which deployment failed
	}
	w.failures = append(w.failures, perr)
	if info != nil {
		w.acct.FailedAttempts += info.Attempts
	}
	if perr.Usage != nil {
		w.acct.AbandonedUsage = w.acct.AbandonedUsage.Add(*perr.Usage)
	}
	w.c.takeOut(e, d, perr)
	return perr
}

// triedProvider reports whether every deployment of provider name was tried.
func (w *walk) triedProvider(name string) bool {
	e := w.c.entries[name]
	for _, d := range e.deps {
		if !w.isTried(d) {
			return false
		}
	}
	return true
}

// isTried reports whether route d was tried.
func (w *walk) isTried(d *deployment) bool {
	return slices.Contains(w.tried[:w.ntried], d) || slices.Contains(w.triedMore, d)
}

// markTried records that route d was tried. The first few go in an array of the walk's own
// (no pointer into itself, so a walk that stays on the stack keeps doing so).
func (w *walk) markTried(d *deployment) {
	switch {
	case w.isTried(d):
	case w.ntried < len(w.tried):
		w.tried[w.ntried] = d
		w.ntried++
	default:
		w.triedMore = append(w.triedMore, d)
	}
}
