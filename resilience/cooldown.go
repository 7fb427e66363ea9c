package resilience

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"
)

// cooldown pauses a pipeline after a rate limit: a 429 from the server (not an exhausted
// quota) means every call sent before the server's hint runs out would be refused too, so the
// pipeline stops sending until then instead of spending attempts and the provider's patience.
// It is not an outage: the circuit breaker does not count it.
//
// The pause is kept as the end of the pause on the pipeline's time line (emitter.now), 0 when
// none, so a call that finds no pause pays one atomic load and no clock read.
type cooldown struct {
	ev    *emitter
	pol   *Policy // the pipeline's, for calls that bring none
	on    bool    // Options.RateLimitCooldown
	until atomic.Int64
	pace  *pacer              // the pipeline's budgets, debited after the pause
	share func(end time.Time) // tells the other instances (WithSharedState); nil: none
}

func (c *cooldown) init(o Options, pol *Policy, ev *emitter) {
	c.ev, c.pol, c.on = ev, pol, o.RateLimitCooldown
}

// extend pauses the pipeline until now+d, unless it is paused longer already, and reports the
// pause when it grew.
func (c *cooldown) extend(ctx context.Context, now time.Time, d time.Duration, fromServer bool) {
	if !c.on || d <= 0 {
		return
	}
	if !c.raise(now.Add(d).UnixNano()) {
		return
	}
	if c.share != nil {
		c.share(now.Add(d))
	}
	c.ev.emit(Event{Type: EventCooldownStarted, Delay: d, ServerHint: fromServer, Context: ctx})
}

// remaining returns how long the pipeline stays paused, 0 when it is not.
func (c *cooldown) remaining() time.Duration {
	end := c.until.Load()
	if end == 0 {
		return 0
	}
	left := time.Duration(end - c.ev.now().UnixNano())
	if left <= 0 {
		c.until.CompareAndSwap(end, 0)
		return 0
	}
	return left
}

// raise makes the pause end at end (UnixNano) unless it ends later already, and reports
// whether it grew.
func (c *cooldown) raise(end int64) bool {
	for {
		cur := c.until.Load()
		if cur >= end {
			return false
		}
		if c.until.CompareAndSwap(cur, end) {
			return true
		}
	}
}

// gate lets req through a paused pipeline: at once when there is no pause; after the pause
// when the wait fits the call (see maxWait); else not at all, with a *CooldownError. Then it
// debits the call from the pipeline's budgets (see pacer).
func (c *cooldown) gate(req *http.Request) error {
	if err := c.pause(req); err != nil {
		return err
	}
	return c.budget(req.Context())
}

// budget debits a call (or a retry of it) made with ctx from the pipeline's per-minute budgets,
// waiting for room as the call allows (see maxWait); nil at once when no budget is known.
func (c *cooldown) budget(ctx context.Context) error {
	if c.pace == nil || !c.pace.known.Load() {
		return nil
	}
	return c.pace.admit(ctx, tokensOf(ctx), func() time.Duration { return c.maxWait(ctx) })
}

// pause waits for the end of a pause, or refuses req.
func (c *cooldown) pause(req *http.Request) error {
	left := c.remaining()
	if left <= 0 {
		return nil
	}
	ctx := req.Context()
	limit := c.maxWait(ctx)
	if left > limit {
		c.ev.emit(Event{Type: EventCooldownRejected, Delay: left, Context: ctx})
		return &CooldownError{Pipeline: c.ev.name, RetryAfter: left}
	}
	c.ev.emit(Event{Type: EventCooldownWaited, Delay: left, Context: ctx})
	return sleep(ctx, c.ev.clock, left)
}

// maxWait is the longest a call made with ctx may wait for the pause to end: its policy's
// RetryMaxDelaySeconds, less when the caller's deadline is nearer or the caller set a shorter
// Call.MaxWait (a client that can send the call elsewhere at once), 0 for a Call that must
// never wait.
func (c *cooldown) maxWait(ctx context.Context) time.Duration {
	_, _, pol := callers(ctx)
	if pol == nil {
		pol = c.pol
	}
	limit := pol.max
	if w, set := maxWaitOf(ctx); set {
		limit = min(limit, w)
	}
	if dl, ok := ctx.Deadline(); ok {
		limit = min(limit, dl.Sub(c.ev.clock.Now()))
	}
	return max(limit, 0)
}

// maxWaitOf returns the wait limit the innermost Call of ctx sets (Call.MaxWait), and whether
// it sets one.
func maxWaitOf(ctx context.Context) (time.Duration, bool) {
	c, _ := ctx.Value(callKey{}).(*Call)
	switch {
	case c == nil || c.MaxWait == 0:
		return 0, false
	case c.MaxWait < 0:
		return 0, true
	}
	return c.MaxWait, true
}
