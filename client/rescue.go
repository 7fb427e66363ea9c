package client

import (
	"sync"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/tokens"
)

// The rescue: a stream that fails after content, when its StreamRescue is "restart" or
// "continue" (or the call may start over because its stored answer is gone), goes on along
// what is left of its chain, from where its walk stood when the stream served, after the same
// decision a failure before content meets (decide.go). The stream that takes over serves the
// caller from then on: with the whole answer again after a restart, with the rest of it after
// a continuation (continue.go).

// rescuer restarts a stream that failed after content on the rest of its chain: the walk as
// it stood when the stream served (the call's operation with it).
type rescuer struct {
	w walk
}

// rescuers keeps the rescuers of streams that ended without needing one, so that a stream
// kept ready for a rescue (the default "continue", on a chain that can continue it) costs no
// allocation: a walk is 800 bytes. A rescuer goes back only from the goroutine that reads
// the stream, at its Done delta (see spare); one that served a rescue, or whose stream was
// closed early, is left to the collector.
var rescuers = sync.Pool{New: func() any { return new(rescuer) }}

// ready makes s ready for a rescue along the rest of the walk w.
func (s *Stream) ready(w *walk) {
	r := rescuers.Get().(*rescuer)
	r.w = *w
	s.rescue = r
}

// spare gives back the rescuer of a stream that completed without one: emptied, so that
// the pool holds nothing of the call.
func (s *Stream) spare() {
	if r := s.rescue; r != nil {
		s.rescue = nil
		r.w = walk{}
		rescuers.Put(r)
	}
}

// taken returns the stream that took over after a rescue, nil when none did.
func (s *Stream) taken() *Stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

// restart rescues the call after perr, a failure after content, when its StreamRescue is
// "restart" and the failure may go on (as before content: ErrorKind.FallsBack, or the kind's
// FallbackOn): it asks the rest of the chain for the whole answer and returns the stream that
// takes over, nil when there is none (the rescue's own failures are in the walk). The
// telemetry of the call ends with the rescue.
func (s *Stream) restart(perr *providers.Error) *Stream {
	r := s.rescue
	if r == nil || s.closed.Load() || (s.goneOnly && !providers.Gone(perr)) {
		s.tel.end(perr, providers.Delta{}, false, s.charged())
		s.settle()
		return nil
	}
	var k *continuation
	if s.continues && !providers.Gone(perr) {
		// An answer that is gone is asked for again whole (WithRestartIfGone); any other is
		// continued, or ends here when it cannot be.
		if k = s.continuation(); k == nil {
			s.tel.end(perr, providers.Delta{}, false, s.charged())
			s.settle()
			return nil
		}
	}
	s.rescue = nil
	w := &r.w
	if k != nil {
		// The continuation's prompt holds the answer so far: its routes' pacing counts it (each
		// try estimates the request it sends), and so do their context windows.
		w.op.cont = k
		w.carried, w.ncounted = tokens.Heuristic.Count(k.prefill), 0
	}
	w.failures = append(w.failures, perr)
	// The walk was copied before the route served: its retries of that route are in s.acct.
	w.acct = s.acct
	w.acct.FailedAttempts++ // the attempt that served, then failed
	if perr.Usage != nil {
		w.acct.AbandonedUsage = w.acct.AbandonedUsage.Add(*perr.Usage)
	}
	w.acct.Cost = w.acct.Cost.Add(s.charged())
	// As before content: one decision (decide) — go on along the rest of the chain, or to the
	// providers of the kind's own chain, or ask the route that lost a stored answer again.
	at := attempt{route: s.route}
	if v, to := w.decide(perr, &at); !w.follow(v, to, &at) {
		s.tel.end(perr, providers.Delta{}, false, s.charged())
		s.settle()
		return nil
	}
	s.tel.tryDone(perr, providers.Delta{}, false, s.charged()) // the call goes on: the rescue ends it
	_ = s.inner.Close()
	resp, err := w.run()
	if err != nil {
		// The walk ended the call's telemetry with its error; the budgets hear of every try.
		w.c.settle(s.ticket, w.acct.Cost, "", "", providers.Usage{}, s.bill)
		return nil
	}
	n := resp.(*Stream)
	if k != nil {
		n.join = newJoiner(k)
		if k.tool >= 0 {
			n.tools, n.toolIndex = 1, k.tool // the call that replaces the cut one is that one
		}
	}
	s.mu.Lock()
	s.next = n
	closed := s.closed.Load()
	s.mu.Unlock()
	if closed {
		_ = n.Close()
	}
	return n
}
