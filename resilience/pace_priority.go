package resilience

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// The classes of calls (see Priority) in the per-minute limits: the last
// PriorityReservePercent of each budget is kept from batch calls. While a budget holds more, a
// call of any class debits it as before; once only the reserve is left, an interactive or
// default call debits it (or waits for room, in arrival order, as before), and a batch call
// waits politely — it reserves nothing ahead, so the calls of the higher classes that come
// after it are not queued behind it — until the budget holds its share again, if the wait fits
// the call (its deadline, RetryMaxDelaySeconds, Call.MaxWait). A batch call that cannot wait
// that long is refused at once with a *CooldownError whose RetryAfter is the time until the
// budget is out of the reserve: the shedding of the lowest class, honest about when to come
// back, which a job queue honours (package deferral; a deferred call never waits).
//
// No starvation: while batch calls wait, each call of a higher class served from the reserve
// earns them credit (PriorityMinSharePercent), and a waiting batch call with a whole credit
// is served from the reserve too.
//
// A budget above its reserve costs nothing more; below it, a call looks up its class.

// budgetReserve is a pacer's part for the classes of calls.
type budgetReserve struct {
	pol     *Policy // the pipeline's, for the class of calls that name none
	percent float64 // PriorityReservePercent
	credit  float64 // shareCredit(PriorityMinSharePercent)
	waiting atomic.Int64
	mu      sync.Mutex
	owed    float64 // what the waiting batch calls have earned
}

func (r *budgetReserve) init(o Options, pol *Policy) {
	r.pol, r.percent, r.credit = pol, o.PriorityReservePercent, shareCredit(o.PriorityMinSharePercent)
}

// short reports whether taking one request from req and n tokens from tok at now would leave
// less than the reserve of either.
func (r *budgetReserve) short(now time.Time, req, tok *rate.Limiter, n int) bool {
	return r.need(now, req, 1) > 0 || r.need(now, tok, n) > 0
}

// need is how many units lim lacks at now for n units to leave its reserve whole; 0 for a nil
// lim or no units.
func (r *budgetReserve) need(now time.Time, lim *rate.Limiter, n int) float64 {
	if lim == nil || n <= 0 {
		return 0
	}
	burst := float64(lim.Burst())
	return max(min(burst*r.percent/100+float64(n), burst)-lim.TokensAt(now), 0)
}

// until is how long until req and tok hold the reserve plus a request and n tokens.
func (r *budgetReserve) until(now time.Time, req, tok *rate.Limiter, n int) (time.Duration, string) {
	var wait time.Duration
	budget := "requests"
	for i, lim := range [2]*rate.Limiter{req, tok} {
		units := 1
		if i == 1 {
			units = n
		}
		need := r.need(now, lim, units)
		if need <= 0 {
			continue
		}
		d := time.Duration(need / float64(lim.Limit()) * float64(time.Second))
		if d > wait {
			wait = d
			if i == 1 {
				budget = "tokens"
			}
		}
	}
	return max(wait, time.Millisecond), budget
}

// holdBack is the reserve's say on a call made with ctx when only the reserve is left of req
// or tok (n tokens): nil at once for a call of a higher class (which earns the waiting batch
// calls their credit); for a batch call, nil once the budgets are out of the reserve or the
// call is owed a turn, after waiting politely as far as limit allows, else a *CooldownError.
func (p *pacer) holdBack(ctx context.Context, req, tok *rate.Limiter, n int, limit func() time.Duration) error {
	r := &p.reserve
	cls := classOf(ctx, r.pol)
	if cls != classBatch {
		if r.waiting.Load() > 0 {
			r.mu.Lock()
			r.owed += r.credit
			r.mu.Unlock()
		}
		return nil
	}
	r.waiting.Add(1)
	defer func() {
		if r.waiting.Add(-1) == 0 {
			r.mu.Lock()
			r.owed = 0 // credit is for waiting, not to be saved up
			r.mu.Unlock()
		}
	}()
	allowed := limit()
	var waited time.Duration
	for {
		now := p.monotonic()
		if !r.short(now, req, tok, n) || r.takeTurn() {
			return nil
		}
		wait, budget := r.until(now, req, tok, n)
		if waited+wait > allowed {
			p.ev.emit(Event{Type: EventCooldownRejected, Delay: wait, Priority: PriorityBatch,
				Reason: budget + " per minute, the rest kept for higher classes", Context: ctx})
			return &CooldownError{Pipeline: p.ev.name, RetryAfter: wait, Budget: budget}
		}
		p.ev.emit(Event{Type: EventCooldownWaited, Delay: wait, Priority: PriorityBatch,
			Reason: budget + " per minute, the rest kept for higher classes", Context: ctx})
		if err := sleep(ctx, p.ev.clock, wait); err != nil {
			return err
		}
		waited += wait
	}
}

// takeTurn spends a whole credit of the waiting batch calls, if they have one.
func (r *budgetReserve) takeTurn() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.owed < 1 {
		return false
	}
	r.owed--
	return true
}
