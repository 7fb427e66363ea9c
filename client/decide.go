package client

import (
	"errors"
	"slices"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// The decision: what a call does after a failure, in one function (decide) that the walk asks
// after a try failed and a stream's rescue asks after a failure after content. It is one of
// four: stop; go on to the next route that may serve the call; redirect what is left of the
// chain to the providers the client's FallbackOn names for the failure's kind; or ask the same
// route again, in the two cases that call for it (a stored answer that is gone, when the call
// may start over; a first-token limit that ran out when no other route can serve now). follow
// applies it to the walk. A new retry decision goes in decide.

// verb is what a call does after a failure.
type verb uint8

// The verbs of a decision.
const (
	stop     verb = iota // the call ends with its failures
	goOn                 // the next route that may serve the call
	redirect             // the providers of the failure's kind (FallbackOn) instead of the rest of the chain
	again                // the route that failed, once more
)

// decide is what the call does after perr, the failure of attempt a (a hedge's, or the walk's
// own): see verb. It raises the walk's smallest context window for a prompt too long; for a
// redirect it returns the providers to go to (those not tried yet).
func (w *walk) decide(perr *providers.Error, a *attempt) (verb, []string) {
	if w.ctx.Err() != nil {
		return stop, nil // the caller gave up, or the call's deadline ended it
	}
	if providers.Gone(perr) {
		// The stored answer was produced, and billed, where it is gone: asking again is the
		// caller's decision (see providers.CodeResponseGone). The route is well, only the
		// answer was lost: it is asked first, once.
		switch {
		case !w.restartsGone():
			return stop, nil
		case !slices.Contains(w.retried, a.d):
			return again, nil
		}
		return goOn, nil
	}
	if to, ok := w.c.fallbackOn[perr.Kind]; ok {
		var left []string
		for _, name := range to {
			if !w.triedProvider(name) {
				left = append(left, name)
			}
		}
		if len(left) == 0 {
			return stop, nil
		}
		return redirect, left
	}
	if perr.Kind == providers.KindContextTooLong {
		// Only a route that declares a larger window can hold it.
		stated := 0
		if perr.Overflow != nil {
			stated = perr.Overflow.Window
		}
		w.minWindow = max(w.minWindow, w.c.windowOf(a.e.name, a.key), stated, 1)
		return goOn, nil
	}
	if !perr.Kind.FallsBack() {
		return stop, nil
	}
	if firstTokenTimeout(perr) && !a.hedge && !slices.Contains(w.retried, a.d) && !w.elsewhere() && w.retries(a.d) > 0 {
		// Silent routes go to the next route first; the same route again only when no other
		// route can serve now (once: a route silent twice is down), and only when the call's
		// policy allows a retry at all.
		return again, nil
	}
	return goOn, nil
}

// follow applies the decision v (with the providers to, for a redirect) taken after the failure
// of attempt a, and reports whether the call goes on. The next route the call is sent to
// counts a failover of a's (DeploymentInfo.Failovers).
func (w *walk) follow(v verb, to []string, a *attempt) bool {
	if v == stop {
		return false
	}
	w.leaving = a.d
	cur := &w.cur
	switch v {
	case again:
		w.retried = append(w.retried, a.d)
		cur.retry, cur.retrying = a.route, true
	case redirect:
		// The kind's own chain replaces what was left after the provider that failed, whose
		// other deployments are not asked.
		pos := cur.i
		if j := slices.Index(cur.chain[min(cur.i, len(cur.chain)):], a.e.name); j >= 0 {
			pos = cur.i + j
		}
		cur.chain = append(slices.Clone(cur.chain[:pos+1]), to...)
		cur.i, cur.e, cur.deps, cur.inOrder, cur.k = pos, a.e, nil, 0, 0
	}
	return true
}

// restartsGone reports whether the call starts over when its stored answer is gone: only when
// it opted in (WithRestartIfGone) and continues from no stored state.
func (w *walk) restartsGone() bool {
	return w.op.o != nil && w.op.o.restartGone && !w.pinned
}

// firstTokenTimeout reports whether perr is a route's first-token limit running out.
func firstTokenTimeout(perr *providers.Error) bool {
	var te *resilience.TimeoutError
	return perr.Kind == providers.KindTimeout && errors.As(perr, &te) && te.Limit == resilience.TimeoutFirstToken
}

// retries returns how many retries the call's policy allows on route d (RetryCount): a route
// abandoned at its first-token limit is asked again only when it allows one.
func (w *walk) retries(d *deployment) int {
	pol := w.op.pl.policyFor(d, w.op.o)
	if pol == nil {
		pol = d.pipeline.Policy()
	}
	return pol.Retries()
}
