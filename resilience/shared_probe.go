package resilience

import (
	"context"
	"net/http"
	"time"
)

// scopedElection is a pipeline's view of its store's probe elections: under the name the
// pipeline shares under (see SetSharedScope), and none once it stopped sharing.
type scopedElection struct {
	pe ProbeElection
	p  *Pipeline
}

func (e scopedElection) ClaimProbe(ctx context.Context, _ string, hold time.Duration) (bool, time.Duration, error) {
	e.p.settleShared()
	if e.p.sh.left.Load() {
		return false, 0, errNotSharing
	}
	return e.pe.ClaimProbe(ctx, e.p.sh.name, hold)
}

func (e scopedElection) EndProbe(string) {
	e.p.settleShared()
	if !e.p.sh.left.Load() {
		e.pe.EndProbe(e.p.sh.name)
	}
}

// giveBack returns the half-open probe slot of tk unused: the call was not sent.
func (cb *circuit) giveBack(tk ticket) {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	if s, gen := cb.load(); s == CircuitHalfOpen && gen == tk.generation && cb.probes > 0 {
		cb.probes--
	}
}

// elected decides whether a call admitted as a half-open probe (tk) may go, when the fleet
// elects its probes (ProbeElection): it may when this instance holds the probe, or when the
// store cannot tell; otherwise it gives the slot back and rejects the call, and asks the
// store again only after the holder's time (at most a second, at least a millisecond: a store
// that answers 0 does not make the instance ask in a loop) has passed.
func (b *breaker) elected(req *http.Request, tk ticket) error {
	if ok, retry := b.claim(req.Context()); !ok {
		b.c.giveBack(tk)
		return b.reject(req, rejection{state: CircuitHalfOpen, retryAfter: retry})
	}
	return nil
}

// claim asks the fleet for the probe, for a caller's call or the active probe (ctx): it
// reports whether this instance may probe, else how long until it may ask again.
func (b *breaker) claim(ctx context.Context) (bool, time.Duration) {
	if left := b.elsewhere.Load() - b.c.now(); left > 0 {
		return false, time.Duration(left)
	}
	mine, retry, err := b.elect.ClaimProbe(ctx, b.ev.name, b.hold)
	switch {
	case err != nil:
		return true, 0 // the store cannot tell (its watcher reports why): probe on our own
	case mine:
		b.won.Add(1)
		b.probing.Store(true)
		return true, 0
	}
	retry = min(max(retry, time.Millisecond), storeRetry)
	b.elsewhere.Store(b.c.now() + int64(retry))
	return false, retry
}

// probeFinished tells the fleet that this instance's probe ended with change ch. A probe that
// failed (or told nothing) gives the election back at once, so that the next may go. One that
// closed the circuit shares the closing (see announce) and keeps the election for keepClosing
// more: another instance whose break ends meanwhile is refused the probe and looks again a
// moment later, by when its store has brought it the closing. Given back at once, the
// election went to an instance that had not heard of the closing yet, which probed a provider
// the fleet already knew well. A new win of this instance's meanwhile keeps it longer.
func (b *breaker) probeFinished(ch change) {
	if ch.from != CircuitHalfOpen || !b.probing.Load() {
		return
	}
	if ch.ok && ch.to == CircuitClosed {
		won := b.won.Load()
		b.ev.clock.AfterFunc(keepClosing, func() {
			if b.won.Load() == won && b.probing.CompareAndSwap(true, false) {
				b.elect.EndProbe(b.ev.name)
			}
		})
		return
	}
	if b.probing.CompareAndSwap(true, false) {
		b.elect.EndProbe(b.ev.name)
	}
}

// keepClosing is how long an instance whose probe closed the circuit keeps the fleet's
// election (probeFinished): twice the longest an instance refused it waits before it looks
// again, time for a store that refreshes what it knows within a second (the Redis store:
// every 250 ms by default) to bring the closing to every instance first.
const keepClosing = 2 * storeRetry
