package resilience

import (
	"context"
	"time"
)

// SharedState shares what one instance of an application learns about a provider with its
// other instances: that the provider's circuit opened, until when, and that a 429 paused it,
// until when. Each instance keeps its own pipeline; the shared state is advice it adopts — an
// instance that hears "open until T" opens its circuit until T without paying its own threshold
// of failed calls, and one that hears "paused until T" pauses too.
//
// Implementations (github.com/steadyllm/steady/state/redis) must never put I/O on a call's
// path: Advice reads a local copy, refreshed in the background, and Advise sends in the
// background. Times are wall-clock times, comparable between machines.
type SharedState interface {
	// Advise shares advice about the pipeline named name. It must not block.
	Advise(name string, a Advice)
	// Advice returns the latest advice about the pipeline named name that this instance
	// knows, zero when none. It must not block.
	Advice(name string) Advice
}

// Advice is what instances tell each other about a provider. A zero time means none.
type Advice struct {
	// OpenUntil: the provider's circuit opened somewhere; no calls before this time.
	OpenUntil time.Time
	// CoolUntil: a 429 paused the provider somewhere; no calls before this time.
	CoolUntil time.Time
}

// WithSharedState shares the pipeline's circuit openings and rate-limit pauses through s,
// under the pipeline's name (WithName), and adopts the others'.
func WithSharedState(s SharedState) Option { return func(p *Pipeline) { p.shared = s } }

// adoptShared applies the shared advice about the pipeline before a call: a pause or an open
// circuit another instance reported holds here too. A pipeline without shared state, or with
// no advice, pays a nil check and a map read.
func (p *Pipeline) adoptShared(ctx context.Context) {
	a := p.shared.Advice(p.name)
	if a.OpenUntil.IsZero() && a.CoolUntil.IsZero() {
		return
	}
	now := p.ev.now()
	if a.CoolUntil.After(now) {
		p.cool.adopt(ctx, a.CoolUntil)
	}
	if a.OpenUntil.After(now) {
		// Reported without announce, which would share the opening back.
		if ch := p.breaker.c.adopt(p.breaker.c.sinceEpoch(a.OpenUntil)); ch.ok {
			p.ev.emit(Event{Type: EventBreakerStateChanged, From: ch.from, To: ch.to, Reason: "shared", Context: ctx})
		}
	}
}

// adopt pauses the pipeline until end, as another instance reported, without reporting it
// back.
func (c *cooldown) adopt(ctx context.Context, end time.Time) {
	if c.raise(end.UnixNano()) {
		c.ev.emit(Event{Type: EventCooldownStarted, Delay: time.Until(end), Reason: "shared", Context: ctx})
	}
}

// sinceEpoch converts a wall-clock time to the circuit's time line.
func (cb *circuit) sinceEpoch(t time.Time) int64 { return int64(t.Sub(cb.epoch)) }

// adopt opens a closed or half-open circuit until until (on the circuit's time line), as
// another instance reported; an open circuit's break is made longer if needed; an isolated
// one is left alone.
func (cb *circuit) adopt(until int64) change {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	ch := cb.advance()
	switch cb.st() {
	case CircuitIsolated:
		return ch
	case CircuitOpen:
		if cb.until.Load() < until {
			cb.until.Store(until)
		}
		return ch
	}
	ch = cb.enter(CircuitOpen)
	cb.until.Store(until)
	return ch
}
