package client

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/steadyllm/steady/resilience"
)

// Hedging: a call without first content after a delay is sent again, unchanged, to the next
// route that can serve it at once; the first try to deliver content serves the call and the
// others are cancelled (see resilience.Options.HedgeAfterSeconds).

// errHedgeLost is the cause with which a hedged try that lost is cancelled. The pipeline reads
// a cancelled context as the caller's doing, so a loser never counts against its circuit.
var errHedgeLost = errors.New("client: another try of the hedged call delivered first")

// WithHedge hedges this call after delay: a try without first content by then is sent again
// to the next route that can serve it at once, up to max hedges (1 to 3), whatever the
// policy says — also for a call that sends extra body fields, which the client otherwise never
// hedges (they may turn on tools that act on the world on the provider's side). delay must be
// above 0 and at most 600 s.
func WithHedge(delay time.Duration, max int) CallOption {
	return func(o *callOptions) {
		o.hedge = &resilience.Hedge{After: delay, Max: max}
	}
}

// WithoutHedge never hedges this call, whatever the policy says: for a call that acts on the
// world when the provider runs it (a server-side tool, a connector), which must not run twice.
func WithoutHedge() CallOption {
	return func(o *callOptions) { o.hedge = &resilience.Hedge{} }
}

// HedgeTracker is a CallTracker that also hears of the hedges the retry budget refused
// (*observe.Telemetry's trackers are).
type HedgeTracker interface {
	HedgeRefused(provider string)
}

// hedgeOf is the hedging of a call with options o on deployment d: the call's own (WithHedge,
// WithoutHedge), else its policy's — except for a call that sends extra body fields, which may
// act on the world and is hedged only when the caller says so, and a stream in buffer mode.
func (w *walk) hedgeOf(d *deployment) resilience.Hedge {
	o := w.op.o
	if !w.op.hedgeable {
		return resilience.Hedge{}
	}
	if o != nil && o.hedge != nil {
		return *o.hedge
	}
	if o != nil && o.fields != nil {
		return resilience.Hedge{}
	}
	pol := w.op.pl.policyFor(d, o)
	if pol == nil {
		pol = d.pipeline.Policy()
	}
	if w.op.stream && (o != nil && o.rescue == resilience.RescueBuffer || (o == nil || o.rescue == "") && pol.Rescue() == resilience.RescueBuffer) {
		// A buffered stream delivers nothing before its whole answer: its "first content"
		// would be its last, and a hedge would race an answer that is well under way.
		return resilience.Hedge{}
	}
	return pol.Hedge()
}

// raced is how one try of a hedged call ended.
type raced struct {
	resp any
	info *resilience.CallInfo
	err  error
	n    int // the index of its route
}

// hedged makes the try t of route first under hedging h: after h's delay without first
// content it sends the call to the next route that may serve it and is ready (walk.nextReady;
// at most h.Max times, each a delay after
// the last, each spending first's retry budget), and returns the first try that succeeds, with
// its route; the others are cancelled. A try that fails while another is out is recorded as
// the walk's failure there; the failure it returns, when every try failed, is the last and is
// not recorded yet (the walk records it, as an unhedged try's).
func (w *walk) hedged(h resilience.Hedge, first attempt, t try) (any, *resilience.CallInfo, error, attempt) {
	// The tries run on goroutines of their own, reading a copy of the call's operation: the
	// operation of a call that is not hedged stays where its caller made it.
	op := w.op
	source := first.d.pipeline.Route(first.key)
	results := make(chan raced, h.Max+1)
	routes := make([]attempt, 0, h.Max+1)
	launch := func(r attempt, t try) {
		ctx, cancel := context.WithCancelCause(w.ctx)
		r.cancel, r.start = cancel, w.c.now()
		n := len(routes)
		routes = append(routes, r)
		go func() {
			resp, info, err := op.try(ctx, t)
			results <- raced{resp: resp, info: info, err: err, n: n}
		}()
	}
	launch(first, t)
	fire := make(chan struct{}, 1)
	arm := func() resilience.Timer {
		return w.c.afterFunc(h.Delay(source), func() { fire <- struct{}{} })
	}
	timer := arm()
	defer timer.Stop()
	pending := 1
	for {
		select {
		case <-fire:
			if len(routes) > h.Max || w.ctx.Err() != nil {
				continue // no hedge once the call's deadline (or the caller) ended it
			}
			nr, ok := w.nextReady()
			r := attempt{route: nr, hedge: true}
			// A hedge never waits there (MaxWait -1): it must not queue ahead of the route's own
			// calls.
			rt := try{route: nr, maxWait: -1, elsewhere: true}
			switch {
			case !ok:
				continue // nowhere to hedge to: the tries out go on alone
			case !source.TryHedge():
				w.acct.HedgesRefused++
				if ht, ok := w.op.tr.(HedgeTracker); ok {
					ht.HedgeRefused(first.e.name)
				}
				continue
			}
			w.markTried(r.d)
			r.d.hedges.Add(1)
			launch(r, rt)
			pending++
			w.acct.Hedges++
			if len(routes) <= h.Max {
				timer = arm()
			}
		case res := <-results:
			pending--
			routes[res.n].done = true
			r := routes[res.n]
			if res.err == nil {
				w.acct.HedgeWon = r.hedge
				if r.hedge {
					r.d.hedgesWon.Add(1)
				}
				cancelLosers(w, routes, res.n, pending, results)
				if k, ok := res.resp.(interface{ hold(func()) }); ok {
					k.hold(func() { r.cancel(nil) }) // the stream's reads go on under its context
				} else {
					r.cancel(nil)
				}
				return res.resp, res.info, nil, r
			}
			if pending == 0 {
				r.cancel(nil)
				return res.resp, res.info, res.err, r
			}
			if !classify(w.ctx, r.d.name, res.err, res.info).Kind.FallsBack() {
				// The request's own fault, or the caller gave up: every other try would end the
				// same way. The walk records this failure and stops.
				r.cancel(nil)
				cancelLosers(w, routes, -1, pending, results)
				return res.resp, res.info, res.err, r
			}
			// Another try is out: this failure is the walk's, and the call waits for the other.
			perr, took, spent := w.lost(&routes[res.n], res.resp, res.info, res.err)
			w.report(&routes[res.n], took, res.info, perr, spent, "")
			r.cancel(nil)
		}
	}
}

// cancelLosers cancels every try of routes still out but the one that won (-1: none won),
// reports each as lost, records on its route the time it had waited (a lower bound of its time
// to first content: a hedge that wins often still teaches the route its tail), and leaves the
// pending ends to a goroutine, which closes a try that succeeded meanwhile.
func cancelLosers(w *walk, routes []attempt, won, pending int, results <-chan raced) {
	now := w.c.now()
	for i := range routes {
		r := &routes[i]
		if i == won || r.done {
			continue
		}
		r.cancel(errHedgeLost)
		waited := now.Sub(r.start)
		r.d.pipeline.Route(r.key).ObserveLatency(resilience.LatencySample{FirstContent: waited, Stream: w.op.stream, Censored: true})
		if tr := w.op.tr; tr != nil {
			res := tryResult(r.e, r.d, r.model, waited, nil, nil)
			res.Hedge, res.Lost = r.hedge, true
			tr.TryDone(res)
		}
	}
	if pending == 0 {
		return
	}
	go func() {
		for range pending {
			if res := <-results; res.err == nil {
				if c, ok := res.resp.(io.Closer); ok {
					_ = c.Close()
				}
			}
		}
	}()
}

// afterFunc runs f after d on the client's clock (WithClock), the wall clock by default.
func (c *Client) afterFunc(d time.Duration, f func()) resilience.Timer {
	if c.clock != nil {
		return c.clock.AfterFunc(d, f)
	}
	return time.AfterFunc(d, f)
}
