package resilience

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// cooldown pauses a pipeline after a rate limit: a 429 from the server (not an exhausted
// quota) means every call sent before the server's hint runs out would be refused too, so the
// pipeline stops sending until then instead of spending attempts and the provider's patience.
// It is not an outage: the circuit breaker does not count it. Under an adaptive limit, a 429
// that signals too many calls at once rather than a spent budget starts no pause: the limit
// shrinks instead (overload.go).
//
// The pause is kept as the end of the pause on the pipeline's time line (emitter.now), 0 when
// none, so a call that finds no pause pays one atomic load and no clock read.
//
// No pause lasts longer than RateLimitMaxPauseSeconds, whatever the server asks: a 429 that says
// "retry after a day" pauses the pipeline for the maximum, and when that ends one call goes
// through as a probe while the others still find the pipeline paused. The probe's answer
// decides: anything but a 429 ends the pause, a 429 starts the next one.
type cooldown struct {
	ev       *emitter
	pol      *Policy // the pipeline's, for calls that bring none
	on       bool    // Options.RateLimitCooldown
	maxPause time.Duration
	// until is the end of the pause, read without a lock on every call; it, capped and
	// probeAt change together under mu (the slow path), so that a 429 arriving as a probe is
	// answered cannot leave a cut pause without its probe.
	until atomic.Int64
	mu    sync.Mutex
	// capped is set while the pause that holds (or just ended) was cut at maxPause: its end
	// admits one probe. Only a probe's answer (or Reset) clears it. probeAt is when the probe
	// was let through (emitter time, UnixNano), 0 while none is out; probeHold is how long a
	// probe may stay out before another call may take its place (the call's answer never came:
	// the call was turned away further down).
	capped    atomic.Bool
	probeAt   int64
	probeHold time.Duration
	pace      *pacer              // the pipeline's budgets, debited after the pause
	share     func(end time.Time) // tells the other instances (WithSharedState); nil: none
}

func (c *cooldown) init(o Options, pol *Policy, ev *emitter) {
	c.ev, c.pol, c.on = ev, pol, o.RateLimitCooldown
	c.maxPause = seconds(o.RateLimitMaxPauseSeconds)
	c.probeHold = max(seconds(o.TimeoutSeconds), time.Second)
	if o.TimeoutSeconds <= 0 {
		c.probeHold = 30 * time.Second
	}
}

// extend pauses the pipeline until now+d, unless it is paused longer already, and reports the
// pause when it grew. A d above the maximum pause is cut to it, and the pause's end then lets
// one probe through (see cooldown). The other instances hear the server's own end, which each
// cuts at its own maximum, so that each also sends one probe rather than a burst.
func (c *cooldown) extend(ctx context.Context, now time.Time, d time.Duration, fromServer bool) {
	if !c.on || d <= 0 {
		return
	}
	full := d
	cut := d > c.maxPause
	if cut {
		d = c.maxPause
	}
	if !c.set(now.Add(d).UnixNano(), cut, false) {
		return
	}
	if c.share != nil {
		c.share(now.Add(full))
	}
	c.ev.emit(Event{Type: EventCooldownStarted, Delay: d, ServerHint: fromServer, Context: ctx})
}

// set makes the pause end at end unless it ends later already, and reports whether it grew. A
// pause the server's own answer started (adopted false) says whether it was cut; an adopted
// one can only add a cut: clearing it is a probe's business.
func (c *cooldown) set(end int64, cut, adopted bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.until.Load() >= end {
		if cut && !c.capped.Load() && end > c.ev.now().UnixNano() {
			c.capped.Store(true) // as long already, but the server asked for longer still
		}
		return false
	}
	c.until.Store(end)
	if cut || !adopted {
		c.capped.Store(cut)
	}
	c.probeAt = 0
	return true
}

// shorten ends the pause at end (0: now) when it still ends at was: another instance's advice
// that set it was taken back.
func (c *cooldown) shorten(was, end int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.until.CompareAndSwap(was, end) {
		return false
	}
	if end == 0 {
		c.capped.Store(false)
		c.probeAt = 0
	}
	return true
}

// end ends the pause at once, probe included (Pipeline.Reset).
func (c *cooldown) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.until.Store(0)
	c.capped.Store(false)
	c.probeAt = 0
}

// answered tells a capped pause what an attempt sent meanwhile got: any answer but a 429 says
// the server takes calls again and ends the probing; a failure without an answer frees the
// probe for another call. A 429 is left to extend, which starts the next pause.
func (c *cooldown) answered(resp *http.Response, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err != nil:
		c.probeAt = 0
	case resp.StatusCode != http.StatusTooManyRequests && c.until.Load() <= c.ev.now().UnixNano():
		c.capped.Store(false)
		c.probeAt = 0
	}
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

// gate lets req through a paused pipeline: at once when there is no pause; after the pause
// when the wait fits the call (see maxWait); else not at all, with a *CooldownError. Then it
// debits the call from the pipeline's budgets (see pacer).
func (c *cooldown) gate(req *http.Request) error {
	err := c.pause(req)
	if err == nil {
		err = c.budget(req.Context())
	}
	if ce, ok := err.(*CooldownError); ok {
		c.blame(req.Context(), ce)
	}
	return err
}

// blame sets ce.Deadline when the deadline of ctx is why the call could not wait: the wait
// fits the call's other limits (its policy's RetryMaxDelaySeconds, its Call.MaxWait) and ends
// past the deadline.
func (c *cooldown) blame(ctx context.Context, ce *CooldownError) {
	dl, ok := ctx.Deadline()
	if !ok || ce.probing {
		return
	}
	limit := c.policyWait(ctx)
	if ce.RetryAfter <= limit && c.ev.clock.Now().Add(ce.RetryAfter).After(dl) {
		ce.Deadline = dl
	}
}

// budget debits a call (or a retry of it) made with ctx from the pipeline's per-minute limits,
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
		if c.capped.Load() {
			return c.probe(req)
		}
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

// probe lets req through as the one call that tries a provider whose pause was cut at the
// maximum, or refuses it while another call is that probe.
func (c *cooldown) probe(req *http.Request) error {
	now := c.ev.now().UnixNano()
	c.mu.Lock()
	at := c.probeAt
	mine := at == 0 || now-at >= int64(c.probeHold)
	if mine {
		c.probeAt = max(now, 1)
	}
	c.mu.Unlock()
	if mine {
		return nil
	}
	left := max(time.Duration(int64(c.probeHold)-(now-at)), time.Millisecond)
	ctx := req.Context()
	c.ev.emit(Event{Type: EventCooldownRejected, Delay: left, Reason: "probing after the longest pause", Context: ctx})
	return &CooldownError{Pipeline: c.ev.name, RetryAfter: left, probing: true}
}

// maxWait is the longest a call made with ctx may wait for the pause to end: its policy's
// RetryMaxDelaySeconds, less when the caller's deadline is nearer or the caller set a shorter
// Call.MaxWait (a client that can send the call elsewhere at once), 0 for a Call that must
// never wait.
func (c *cooldown) maxWait(ctx context.Context) time.Duration {
	limit := c.policyWait(ctx)
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

// policyWait is the longest a call made with ctx may wait for a pause by its policy and its
// Call.MaxWait, its deadline aside.
func (c *cooldown) policyWait(ctx context.Context) time.Duration {
	_, _, pol := callers(ctx)
	if pol == nil {
		pol = c.pol
	}
	limit := pol.max
	if w, set := maxWaitOf(ctx); set {
		limit = min(limit, w)
	}
	return limit
}
