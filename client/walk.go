package client

import (
	"context"
	"slices"
	"strings"

	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// walk is one call's way along its chain of routes — each deployment of each provider of the
// plan's chain, for the model the provider is asked for — and what it learnt on the way.
type walk struct {
	c      *Client
	ctx    context.Context
	tr     CallTracker
	o      *callOptions // nil for none
	stream bool         // a ChatStream
	// hedgeable: a chat call, which may be hedged (embeddings are not).
	hedgeable bool
	pl        plan
	// ask is what the call asks of the routes (pick.go), cur where the walk stands on its
	// chain.
	ask
	cur cursor
	// tried holds the routes tried so far, which a rescue does not try again (the first
	// ntried, then triedMore: a call that does not fail allocates nothing for it); retried
	// those asked a second time after a first-token timeout.
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
	// pinned to (see holds).
	pinSkips int

	failures []*providers.Error
	skipped  []string
	acct     Accounting
	// dl is the call's whole-call deadline, nil for none (see deadline.go).
	dl *callDeadline
	// bill is what prices the tries whose usage no server reported (see abandonedCost);
	// ticket is what the call holds in the client's budgets, nil when none.
	bill   bill
	ticket *cost.Ticket
	// prior is the count of the prompt made for the call's budgets, nil when none was made
	// (see countForBudgets).
	prior *priorCount
	// leaving is the route the call failed on last and goes on from: the next route it is
	// sent to counts a failover of it (DeploymentInfo.Failovers).
	leaving *deployment
}

// tryFunc makes one try of a call on one route (see try). walkChain runs it on the walk's
// goroutine; a hedged call runs its tries on goroutines of their own, with the tryFunc its
// maker returns, so that a call that is not hedged never allocates one on the heap.
type tryFunc[R any] func(ctx context.Context, t try) (R, *resilience.CallInfo, error)

// Accounting is what a call cost beyond the answer it returns: the HTTP attempts that failed
// before the one that served (retries of the serving route included), and the usage the
// servers reported for attempts that were abandoned (a stream cut after its usage was known),
// which they may bill.
type Accounting struct {
	FailedAttempts int
	AbandonedUsage providers.Usage
	// Hedges is the number of hedges the call sent (resilience.Options.HedgeAfterSeconds,
	// WithHedge): tries beyond the first, sent because none had first content after the
	// hedge delay. HedgeWon reports that a hedge served the answer; HedgesRefused counts the
	// hedges the retry budget did not allow. A cancelled try may still be billed by its
	// provider for the prompt it had read; the servers do not say, so AbandonedUsage cannot.
	Hedges        int
	HedgeWon      bool
	HedgesRefused int
	// Cost is the cost of the attempts abandoned (CallCost.Abandoned, Estimated and Unpriced;
	// the serving attempt's is the answer's), at the client's prices (WithPrices).
	Cost providers.CallCost
}

// newWalk starts the walk of a call made with ctx (the context its providers see) along pl,
// asking a of its routes.
func (c *Client) newWalk(ctx context.Context, tr CallTracker, pl plan, a ask) *walk {
	return &walk{c: c, ctx: ctx, tr: tr, pl: pl, ask: a, cur: cursor{chain: pl.chain}}
}

// billing gives w what prices the tries whose usage no server reported.
func (w *walk) billing(b bill) *walk {
	w.bill = b
	return w
}

// bounded makes w the walk of a call under the whole-call deadline dl (nil: none).
func (w *walk) bounded(dl *callDeadline) *walk {
	w.dl = dl
	return w
}

// hedging makes w, a chat call's walk with options o, one that may be hedged (see hedgeOf).
func (w *walk) hedging(o *callOptions, stream bool) *walk {
	w.o, w.stream, w.hedgeable = o, stream, true
	return w
}

// starting makes w, when background is set, the walk of a call that starts work its provider
// keeps (ChatRequest.Background): never hedged, since a hedge would start that work twice.
func (w *walk) starting(background bool) *walk {
	if background {
		w.hedgeable = false
	}
	return w
}

// walkChain asks the routes of w's chain in order until one answers or a failure must not go
// on: the providers of the chain, each for its own model, and within a provider of several
// deployments the deployments in the order its strategy routes them (pick.go). A failure that
// falls back (ErrorKind.FallsBack) moves to the next route; one the client's FallbackOn names
// moves to the providers it lists; a prompt too long moves to the routes that declare a larger
// context window; anything else stops the call. call makes one try; served completes an answer
// (res is nil without telemetry) and returns true when the call goes on after walkChain returns
// (a stream), which then reports its own end.
func walkChain[R any](w *walk, call tryFunc[R], async func() tryFunc[R],
	served func(resp R, d *deployment, model string, res *TryResult, acct Accounting) (open bool)) (R, error) {
	var zero R
	c, ctx, tr := w.c, w.ctx, w.tr
	if err := w.preflight(); err != nil {
		return zero, endCall(tr, err)
	}
	for {
		r, ok := w.pick()
		if !ok {
			break
		}
		if w.dl != nil && len(w.failures) > 0 && w.dl.expired() {
			// The call's deadline passed since the last failure: no route is started that
			// could not answer in time.
			return zero, endCall(tr, w.outcome(true))
		}
		w.markTried(r.d)
		if w.leaving != nil && w.leaving != r.d {
			w.leaving.failovers.Add(1)
		}
		w.leaving = nil
		wait := w.waitFor()
		if w.pinned {
			wait = 0 // no other route holds the stored answer: waiting here is the only way
		}
		t := try{route: r, maxWait: wait, elsewhere: wait != 0}
		// at is the attempt whose try ended: this one, or with hedging the one that served (or
		// failed last).
		at := attempt{route: r, start: c.now()}
		var (
			resp R
			info *resilience.CallInfo
			err  error
		)
		if h := w.hedgeOf(r.d); h.After > 0 && async != nil {
			resp, info, err, at = hedged(w, async(), h, at, t)
		} else {
			resp, info, err = call(ctx, t)
		}
		if err == nil {
			took := w.observe(at.d, at.key, at.start, resp, nil)
			if at.d.outs.Load() != 0 {
				at.d.outs.Store(0) // back in service: the next take-out starts from the first break
			}
			if info != nil {
				w.acct.FailedAttempts += max(info.Attempts-1, 0)
			}
			if tr == nil {
				served(resp, at.d, at.key, nil, w.acct)
				return resp, nil
			}
			res := tryResult(at.e, at.d, at.model, took, info, nil)
			res.Hedge = at.hedge
			if !served(resp, at.d, at.key, &res, w.acct) {
				tr.TryDone(res)
				tr.End(nil)
			}
			return resp, nil
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
			return zero, endCall(tr, w.outcome(true))
		}
	}
	if len(w.failures) == 0 {
		return zero, endCall(tr, &providers.Error{Kind: providers.KindBadRequest,
			Message: "no provider of the chain can serve this call: " + strings.Join(w.skipped, ", ")})
	}
	if w.pinSkips > 0 && len(w.failures) == 1 {
		// One failure is the call's error as it is: say why the chain did not go on.
		f := w.failures[0]
		f.Message += "; not sent elsewhere: the call continues from " + w.pin.What +
			", which only " + f.Provider + " holds"
	}
	return zero, endCall(tr, w.outcome(false))
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
