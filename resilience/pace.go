package resilience

import (
	"context"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/steadyllm/steady/internal/signals"
)

// pacer keeps a pipeline under its provider's rate limits instead of waiting for 429s: a
// requests-per-minute and a tokens-per-minute limit (token buckets of golang.org/x/time/rate
// that refill their whole limit each minute), configured (PaceRequestsPerMinute,
// PaceTokensPerMinute) and learnt from the rate-limit headers of the answers
// (PaceFromHeaders). A call debits one request and its token estimate (Call.Tokens) before
// it is sent; when a budget has no room, the call waits for it when the wait fits (as for a
// cooldown), else it is refused with a *CooldownError naming the budget.
//
// A pipeline that knows no limit pays one atomic load per call.
type pacer struct {
	ev    *emitter
	learn bool
	known atomic.Bool // a budget is known: pacing is on
	// req and tok are the budgets, nil while unknown. A budget whose limit changes is
	// replaced by a new bucket, so a learnt limit starts from what the server says remains.
	req, tok atomic.Pointer[rate.Limiter]
	// last is the latest time handed to the buckets (UnixNano). A bucket given an earlier
	// time than before moves its own clock back and refills the overlap twice; calls that read
	// the clock concurrently would do that, so every time passes through monotonic.
	last atomic.Int64
	// order is held from a reading of the clock to the change of a bucket made at it (at), so
	// that the buckets are changed in the order of their times: a call that read the clock
	// and was held back before its change would otherwise hand the bucket a time earlier than
	// the one a later call gave it.
	order sync.Mutex
	// gen changes after every change to the buckets, so a reading of what they hold left
	// (Pipeline.HeadroomAt) knows when it is out of date.
	gen atomic.Uint64
	// credit is tokens debited for calls that used fewer than their estimate (Settle), spent
	// by the next calls before the token bucket.
	credit atomic.Int64
	// ceilReq and ceilTok are the configured limits (PaceRequestsPerMinute,
	// PaceTokensPerMinute), 0 when none: the headers may lower a budget, never raise it above
	// them.
	ceilReq, ceilTok int
	// stated is set once an answer stated what remains of the tokens-per-minute limit: that count is the
	// truth from then on, so a call's unused estimate is never credited back (such servers,
	// OpenAI's among them, debit the most a call may use and never refund it).
	stated atomic.Bool
	// fleet, when the pipeline's shared state keeps budgets (SharedBudgets), debits every
	// call from the fleet's budgets as well, after the instance's own.
	fleet *fleet
	// reserve keeps the last of each budget from batch calls (see pace_priority.go).
	reserve budgetReserve
}

// at reads the pacer's clock and runs change, which changes the buckets at that time, in
// the order of those times (see order). What a bucket is only asked (TokensAt) needs no order.
func (p *pacer) at(change func(now time.Time)) {
	p.order.Lock()
	defer p.order.Unlock()
	now := p.monotonic()
	if h := testHookPaceRead.Load(); h != nil {
		(*h)() // a test holds the call up here, as the scheduler may
	}
	change(now)
}

// testHookPaceRead, when a test sets it, runs between a reading of the pacer's clock and the
// change of a budget made at it.
var testHookPaceRead atomic.Pointer[func()]

// monotonic returns the pacer's clock, never earlier than a time it returned before.
func (p *pacer) monotonic() time.Time {
	now := p.ev.clock.Now()
	n := now.UnixNano()
	for {
		last := p.last.Load()
		if n <= last {
			return time.Unix(0, last)
		}
		if p.last.CompareAndSwap(last, n) {
			return now
		}
	}
}

func (p *pacer) init(o Options, ev *emitter) {
	p.ev, p.learn = ev, o.PaceFromHeaders
	p.ceilReq, p.ceilTok = o.PaceRequestsPerMinute, o.PaceTokensPerMinute
	if o.PaceRequestsPerMinute > 0 {
		p.req.Store(perMinute(o.PaceRequestsPerMinute))
		p.known.Store(true)
	}
	if o.PaceTokensPerMinute > 0 {
		p.tok.Store(perMinute(o.PaceTokensPerMinute))
		p.known.Store(true)
	}
}

// perMinute returns a full bucket of n units that refills in a minute.
func perMinute(n int) *rate.Limiter { return rate.NewLimiter(rate.Limit(float64(n)/60), n) }

// admit debits one request and tokens (at most a whole budget) for a call made with ctx,
// waiting when a budget has no room and the wait fits limit; it returns the *CooldownError of
// the budget that has no room in time. What it debited of the tokens-per-minute limit, credit included,
// is recorded on the call's CallInfo (TokensDebited), so that the call settles on what it was
// debited, never on its estimate (see settle).
func (p *pacer) admit(ctx context.Context, tokens int, limit func() time.Duration) error {
	info := infoOf(ctx)
	if info != nil {
		info.TokensDebited = 0 // this attempt's debit, not an earlier one's
	}
	if !p.known.Load() {
		return nil
	}
	defer p.gen.Add(1)
	req, tok := p.req.Load(), p.tok.Load()
	if tokens <= 0 {
		tok = nil
	}
	n := 0
	if tok != nil {
		// A call larger than the whole budget waits for all of it, and what it uses beyond
		// is a debt the next calls wait for (settle).
		n = min(tokens, tok.Burst())
	}
	if p.reserve.percent > 0 && p.reserve.short(p.monotonic(), req, tok, n) {
		// Only the reserve is left: the call's class decides whether it may take from it.
		if err := p.holdBack(ctx, req, tok, n, limit); err != nil {
			return err
		}
	}
	allowed := true
	if req != nil {
		p.at(func(t time.Time) { allowed = req.AllowN(t, 1) })
	}
	if !allowed {
		if err := p.slow(ctx, req, tok, n, limit()); err != nil {
			return err
		}
		return p.debited(info, n, p.fleetAdmit(ctx, req, tok, n, limit))
	}
	credit := 0
	if tok != nil {
		credit = p.takeCredit(n)
	}
	if tok != nil && n > credit {
		p.at(func(t time.Time) { allowed = tok.AllowN(t, n-credit) })
	}
	if !allowed {
		// The request is debited already; if the call ends up refused, that request is lost
		// to the budget: the pacer errs on the side of sending less.
		if err := p.slow(ctx, nil, tok, n-credit, limit()); err != nil {
			p.credit.Add(int64(credit)) // not spent: the call was not sent
			return err
		}
	}
	return p.debited(info, n, p.fleetAdmit(ctx, req, tok, n-credit, limit))
}

// debited records on info (nil: none) that the call was debited n tokens, unless err refused
// it, and returns err.
func (p *pacer) debited(info *CallInfo, n int, err error) error {
	if info != nil && err == nil {
		info.TokensDebited = n
	}
	return err
}

// fleetAdmit debits the call from the fleet's budgets (see SharedBudgets), nil at once for a
// pipeline that does not share them.
func (p *pacer) fleetAdmit(ctx context.Context, req, tok *rate.Limiter, n int, limit func() time.Duration) error {
	f := p.fleet
	if f == nil {
		return nil
	}
	if req != nil {
		if err := f.take(ctx, &f.req, "requests", int64(req.Burst()), 1, limit); err != nil {
			return err
		}
	}
	if tok != nil && n > 0 {
		return f.take(ctx, &f.tok, "tokens", int64(tok.Burst()), int64(n), limit)
	}
	return nil
}

// slow reserves room in the budgets that lacked it (req for one request, tok for n tokens;
// nil for a budget not to reserve) and waits for it, or cancels and refuses the call.
func (p *pacer) slow(ctx context.Context, req, tok *rate.Limiter, n int, limit time.Duration) error {
	var rs [2]*rate.Reservation
	var wait time.Duration
	budget := "requests"
	p.order.Lock() // see at
	now := p.monotonic()
	if req != nil {
		rs[0] = req.ReserveN(now, 1)
		wait = delayOf(rs[0], now)
	}
	if tok != nil {
		rs[1] = tok.ReserveN(now, n)
		if d := delayOf(rs[1], now); d > wait {
			wait, budget = d, "tokens"
		}
	}
	p.order.Unlock()
	cancel := func() {
		p.order.Lock()
		defer p.order.Unlock()
		now := p.monotonic()
		for _, r := range rs {
			if r != nil {
				r.CancelAt(now)
			}
		}
	}
	if wait > limit {
		cancel()
		p.ev.emit(Event{Type: EventCooldownRejected, Delay: wait, Reason: budget + " per minute", Context: ctx})
		return &CooldownError{Pipeline: p.ev.name, RetryAfter: wait, Budget: budget}
	}
	p.ev.emit(Event{Type: EventCooldownWaited, Delay: wait, Reason: budget + " per minute", Context: ctx})
	if err := sleep(ctx, p.ev.clock, wait); err != nil {
		cancel()
		return err
	}
	return nil
}

// delayOf is how long r makes its holder wait; forever for a reservation that cannot be made.
func delayOf(r *rate.Reservation, now time.Time) time.Duration {
	if !r.OK() {
		return time.Duration(math.MaxInt64)
	}
	return r.DelayFrom(now)
}

// observe learns the budgets from the rate-limit headers of an answer: the limits, and what
// the server says remains, which the buckets never exceed.
func (p *pacer) observe(h http.Header) {
	if !p.learn || (len(h["X-Ratelimit-Limit-Requests"]) == 0 && len(h["X-Ratelimit-Remaining-Requests"]) == 0 &&
		len(h["Anthropic-Ratelimit-Requests-Limit"]) == 0 && len(h["X-Ratelimit-Limit-Tokens"]) == 0 &&
		len(h["Anthropic-Ratelimit-Tokens-Limit"]) == 0) {
		return // the common case of a server without these headers: a few map lookups
	}
	now := p.monotonic()
	rl, ok := signals.ParseRateLimits(h, now)
	if !ok {
		return
	}
	tokens := rl.Tokens
	if !tokens.HasLimit && rl.InputTokens.HasLimit {
		tokens = rl.InputTokens
	}
	p.align(&p.req, rl.Requests, p.ceilReq)
	p.align(&p.tok, tokens, p.ceilTok)
	if tokens.HasRemaining {
		// The server states its budget: that, not our estimates, is the truth.
		if !p.stated.Load() {
			p.stated.Store(true)
		}
		p.credit.Store(0)
	}
}

// align makes the budget at slot agree with the budget b the server stated: a new limit
// starts a new bucket, and the bucket never holds more than the server says remains. A
// configured limit ceil (0: none) is a ceiling: a stated limit above it counts as ceil.
func (p *pacer) align(slot *atomic.Pointer[rate.Limiter], b signals.Budget, ceil int) {
	defer p.gen.Add(1)
	lim := slot.Load()
	limit := b.Limit
	if ceil > 0 && limit > ceil {
		limit = ceil
	}
	if b.HasLimit && limit > 0 && (lim == nil || lim.Burst() != limit) {
		lim = perMinute(limit)
		slot.Store(lim)
		p.known.Store(true)
	}
	if lim != nil && b.HasRemaining {
		p.at(func(now time.Time) {
			if over := lim.TokensAt(now) - float64(b.Remaining); over >= 1 {
				lim.AllowN(now, int(over)) // the server has spent more than we counted
			}
		})
	}
}

// headroom returns the share of a budget left now (0..1), -1 when the budget is not known,
// and the budget (lim's burst, 0 without one). Each read of a limiter takes its lock: routers
// ask on every call, so it reads the burst once.
func headroom(lim *rate.Limiter, now time.Time) (share float64, burst int) {
	if lim == nil {
		return -1, 0
	}
	burst = lim.Burst()
	if burst <= 0 {
		return -1, burst
	}
	return math.Max(0, math.Min(1, lim.TokensAt(now)/float64(burst))), burst
}

// takeCredit spends up to n tokens of credit and returns how many it spent.
func (p *pacer) takeCredit(n int) int {
	for {
		c := p.credit.Load()
		if c <= 0 {
			return 0
		}
		take := min(c, int64(n))
		if p.credit.CompareAndSwap(c, c-take) {
			return int(take)
		}
	}
}

// settle corrects the tokens-per-minute limit once a call's real usage is known, for servers that do not
// state what remains of it: debited is what admit debited the call (CallInfo.TokensDebited:
// at most a whole budget, credit included; 0 when no tokens-per-minute limit was known as it was sent),
// and used were spent. An overestimate becomes credit for the next calls — at most what was
// debited, never more than one budget; an underestimate is debited now as a debt the next
// calls wait for (the bucket may go below zero, by at most one budget), so a call that used
// more than the whole budget holds the next ones back for as long as its usage takes to refill.
// Once an answer has stated the budget left, the server's count is the truth for the
// instance's own budget: servers that state it (OpenAI's) debit the most a call may use and
// never refund it, so a credit would send calls the server refuses. A fleet-wide per-minute limit
// (SharedBudgets) is debited an underestimate whatever the headers say: nothing else tells the
// store.
func (p *pacer) settle(debited, used int) {
	tok := p.tok.Load()
	if tok == nil || used <= 0 {
		return
	}
	defer p.gen.Add(1)
	debited = min(max(debited, 0), tok.Burst())
	if used > debited && p.fleet != nil {
		// The fleet's budget in the store hears no header: it is debited the rest whatever the
		// server says of the instance's own.
		p.fleet.tok.debit(int64(used - debited))
	}
	if used == debited || p.stated.Load() {
		return
	}
	if used > debited {
		// A reservation that is never waited for or cancelled: the bucket owes the rest.
		p.at(func(now time.Time) { tok.ReserveN(now, min(used-debited, tok.Burst())) })
		return
	}
	limit := int64(tok.Burst())
	for {
		c := p.credit.Load()
		next := min(c+int64(debited-used), limit)
		if p.credit.CompareAndSwap(c, next) {
			return
		}
	}
}
