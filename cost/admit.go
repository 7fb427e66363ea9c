package cost

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/steadyllm/steady/providers"
)

// Key is one budget key of a call: the key of the dimension a budget is kept per.
type Key struct {
	Dimension, Key string
}

// Call is what Admit needs of a call: its keys, and its pre-flight cost.
type Call struct {
	// Keys are the call's keys, at most one per dimension.
	Keys []Key
	// Estimate returns the call's pre-flight cost sent as it is asked (d nil) or changed by
	// the downgrade d: the most it may cost, priced from its token estimate. It may be called
	// twice (for what is done and what a budget in shadow mode would have done).
	Estimate func(d *Downgrade) providers.Money
}

// Ticket is the ledger's decision for one call, and the spend it holds for the call until
// Settle: Action and Downgrade are what to do (ActionAllow, ActionWarn or ActionDowngrade; a
// refusal is Admit's error), WouldBe and WouldDowngrade what would be done were every budget
// enforced — the same, without budgets in shadow mode.
type Ticket struct {
	Action         Action
	Downgrade      *Downgrade
	WouldBe        Action
	WouldDowngrade *Downgrade
	// Enforced and Shadowed report that budgets in enforce mode, and in shadow mode, counted
	// the call; neither for a call no budget counts.
	Enforced, Shadowed bool

	l            *Ledger
	holds        []hold
	wouldRefused bool
	settled      atomic.Bool
}

// hold is what a ticket holds in one budget: the estimate reserved in an account's window.
type hold struct {
	b        *budgetState
	a        *account
	start    time.Time
	reserved providers.Money
}

// decision is one budget's view of a call.
type decision struct {
	b      *budgetState
	a      *account // nil: the budget does not count the call (keys full, fail open)
	tier   Action
	amount providers.Money // what it would reserve
}

// Admit decides what the call c may do, reserves its pre-flight estimate in every budget
// that counts it, and returns the ticket to Settle when the call has ended. A call that would
// take a budget in enforce mode past its refuse tier is refused: a *providers.Error of kind
// budget_exhausted whose RetryAfter is the time until that budget's window ends. A key that
// is not a valid key (CheckKey), or of a dimension no budget is kept per, is a bad_request.
// A call no budget counts gets a ticket with nothing to hold (Admit never returns nil without
// an error).
func (l *Ledger) Admit(ctx context.Context, c Call) (*Ticket, error) {
	if err := l.checkKeys(c.Keys); err != nil {
		return nil, err
	}
	now := l.now()
	var evs []Event
	var refusal *providers.Error
	ds := make([]decision, 0, len(l.budgets))
	for _, b := range l.budgets {
		key := keyOf(b.Per, c.Keys)
		b.mu.Lock()
		a, ev := b.account(l, key, now)
		var tier Action
		if a != nil {
			tier = b.tierOf(a)
			ev = append(ev, b.tell(l, a, tier, now)...)
		} else if l.closed {
			refusal = l.keysFull(b, key, now)
		}
		b.mu.Unlock()
		evs = append(evs, ev...)
		if refusal != nil {
			l.emit(evs)
			return nil, refusal
		}
		ds = append(ds, decision{b: b, a: a, tier: tier})
	}
	t := &Ticket{l: l}
	var enforced, shadow bool
	var decider, wouldDecider *budgetState
	for _, d := range ds {
		if d.a == nil {
			continue
		}
		if !d.b.Shadow {
			enforced = true
			if decider == nil || d.tier > t.Action {
				t.Action, decider = d.tier, d.b
			}
			if d.tier == ActionDowngrade && t.Downgrade == nil {
				t.Downgrade = &d.b.Downgrade
			}
		} else {
			shadow = true
		}
		if wouldDecider == nil || d.tier > t.WouldBe {
			t.WouldBe, wouldDecider = d.tier, d.b
		}
		if d.tier == ActionDowngrade && t.WouldDowngrade == nil {
			t.WouldDowngrade = &d.b.Downgrade
		}
	}
	t.Enforced, t.Shadowed = enforced, shadow
	if !enforced && !shadow {
		l.emit(evs)
		return t, nil
	}
	var sent, would providers.Money
	if c.Estimate != nil {
		sent = c.Estimate(t.Downgrade)
		would = sent
		if t.WouldDowngrade != t.Downgrade {
			would = c.Estimate(t.WouldDowngrade)
		}
	}
	// Reserve: enforce budgets the estimate of what is sent, shadow ones of what would be.
	var refusedBy, wouldRefusedBy *decision
	for i := range ds {
		d := &ds[i]
		if d.a == nil {
			continue
		}
		d.amount = sent
		if d.b.Shadow {
			d.amount = would
		}
		if d.b.Shadow && wouldRefusedBy != nil {
			continue // the call would not have been sent: no shadow budget holds anything
		}
		ok, err := l.reserve(ctx, d, now)
		if err != nil {
			t.release(now)
			l.emit(evs)
			return nil, err
		}
		switch {
		case ok:
			t.holds = append(t.holds, hold{b: d.b, a: d.a, start: d.a.start, reserved: d.amount})
		case !d.b.Shadow:
			refusedBy = d
		default:
			wouldRefusedBy = d
			t.releaseShadow(now)
		}
		if refusedBy != nil {
			break
		}
	}
	if wouldRefusedBy != nil {
		t.wouldRefused, t.WouldBe, wouldDecider, t.WouldDowngrade = true, ActionRefuse, wouldRefusedBy.b, nil
		evs = append(evs, l.exhausted(wouldRefusedBy, sent, would, now)...)
	}
	if refusedBy != nil {
		t.release(now)
		t.Action, decider, t.WouldBe, wouldDecider = ActionRefuse, refusedBy.b, ActionRefuse, refusedBy.b
		evs = append(evs, l.exhausted(refusedBy, sent, would, now)...)
	}
	if enforced {
		evs = append(evs, Event{Type: EventDecision, Time: now, Budget: decider.Name, Dimension: decider.Per,
			Key: keyOf(decider.Per, c.Keys), Action: t.Action, Estimate: sent, Currency: l.currency})
	}
	if shadow {
		evs = append(evs, Event{Type: EventDecision, Time: now, Budget: wouldDecider.Name, Dimension: wouldDecider.Per,
			Key: keyOf(wouldDecider.Per, c.Keys), Action: t.WouldBe, Shadow: true, Estimate: would, Currency: l.currency})
	}
	l.emit(evs)
	if refusedBy != nil {
		return nil, l.refusal(refusedBy, sent, now)
	}
	return t, nil
}

// keyOf returns the key of dimension per among keys; "" for a budget kept for every call or
// a call that names no key of per.
func keyOf(per string, keys []Key) string {
	if per == "" {
		return ""
	}
	for _, k := range keys {
		if k.Dimension == per {
			return k.Key
		}
	}
	return ""
}

// checkKeys refuses, as a bad_request, keys that are malformed, of a dimension no budget is
// kept per, or given twice.
func (l *Ledger) checkKeys(keys []Key) error {
	if len(keys) > MaxCallKeys {
		return badKey(fmt.Sprintf("%d budget keys: at most %d", len(keys), MaxCallKeys))
	}
	for i, k := range keys {
		if !l.Keeps(k.Dimension) {
			have := "none"
			if len(l.dims) > 0 {
				have = strings.Join(l.dims, ", ")
			}
			return badKey(fmt.Sprintf("budget key of %q: no budget is kept per %q (budgets are kept per: %s)",
				clip(k.Dimension), clip(k.Dimension), have))
		}
		if msg := CheckKey(k.Key); msg != "" {
			return badKey(fmt.Sprintf("budget key of %q %q: %s", k.Dimension, clip(k.Key), msg))
		}
		for _, j := range keys[:i] {
			if j.Dimension == k.Dimension && j.Key != k.Key {
				return badKey(fmt.Sprintf("two budget keys of %q: %q and %q", k.Dimension, clip(j.Key), clip(k.Key)))
			}
		}
	}
	return nil
}

// MaxCallKeys bounds the budget keys of one call.
const MaxCallKeys = 8

func badKey(msg string) *providers.Error {
	return &providers.Error{Kind: providers.KindBadRequest, Message: msg}
}

// exhausted returns EventExhausted for the refusal (or, in shadow mode, the would-be refusal)
// of a call by d, once per key and window.
func (l *Ledger) exhausted(d *decision, sent, would providers.Money, now time.Time) []Event {
	b, a := d.b, d.a
	b.mu.Lock()
	defer b.mu.Unlock()
	if a.told&(1<<ActionRefuse) != 0 {
		return nil
	}
	a.told |= 1 << ActionRefuse
	est := sent
	if b.Shadow {
		est = would
	}
	return []Event{{Type: EventExhausted, Time: now, Budget: b.Name, Dimension: b.Per, Key: a.key, Action: ActionRefuse, Shadow: b.Shadow,
		Spent: b.spentOf(a), Estimate: est, Limit: b.limitOf(a.key), Currency: l.currency, WindowEnd: a.end}}
}

// refusal is the error of a call refused by d.
func (l *Ledger) refusal(d *decision, estimate providers.Money, now time.Time) *providers.Error {
	b, a := d.b, d.a
	b.mu.Lock()
	spent, end := b.spentOf(a), a.end
	b.mu.Unlock()
	who := "every call"
	if b.Per != "" {
		who = fmt.Sprintf("%s %q", b.Per, clip(a.key))
	}
	return &providers.Error{Kind: providers.KindBudgetExhausted, RetryAfter: end.Sub(now), Err: &Refusal{Budget: b.Name, Window: b.Window},
		Message: fmt.Sprintf("budget %q of %s: %s of %s %s spent this %s, and the call's estimate of %s would cross it: not sent",
			b.Name, who, spent, tierOf(b.limitOf(a.key), b.refuseAt()), l.currency, b.Window, estimate)}
}

// release gives back everything t holds, as a call that was never sent.
func (t *Ticket) release(now time.Time) {
	for _, h := range t.holds {
		h.give(now, 0)
	}
	t.holds = t.holds[:0]
}

// releaseShadow gives back what t holds in budgets in shadow mode.
func (t *Ticket) releaseShadow(now time.Time) {
	kept := t.holds[:0]
	for _, h := range t.holds {
		if h.b.Shadow {
			h.give(now, 0)
			continue
		}
		kept = append(kept, h)
	}
	t.holds = kept
}

// give ends the hold h, charging charge to its key's account in the window the call ends in:
// the hold is released from the window it was taken in, and a call that outlived that window
// is charged to the current one, which it opens if no call did yet.
func (h hold) give(now time.Time, charge providers.Money) []Event {
	b, a := h.b, h.a
	b.mu.Lock()
	defer b.mu.Unlock()
	if a.start.Equal(h.start) {
		a.reserved = max(a.reserved-h.reserved, 0)
		if a.lease != nil {
			b.owner.fleet.settle(b, a, h.reserved, 0, now)
		}
	} // else the window turned: the estimate was held in the one that ended
	if charge <= 0 {
		return nil
	}
	cur, evs := b.account(b.owner, a.key, now)
	if cur == nil {
		return evs // the budget keeps as many keys as it may: the charge is not counted
	}
	cur.spent = cur.spent.Add(charge)
	if cur.lease != nil {
		b.owner.fleet.settle(b, cur, 0, charge, now)
	}
	return append(evs, b.tell(b.owner, cur, b.tierOf(cur), now)...)
}

// Settle ends the call: actual is what it cost (providers.CallCost.Total), charged to the
// budgets in enforce mode; wouldBe what it would have cost had every budget been enforced (the
// served usage at the downgrade's price, for a call a budget in shadow mode would have
// downgraded; actual otherwise), charged to the budgets in shadow mode. A call that failed
// before anything was sent settles with 0. Only the first Settle counts; a nil ticket does
// nothing.
func (t *Ticket) Settle(actual, wouldBe providers.Money) {
	if t == nil || !t.settled.CompareAndSwap(false, true) {
		return
	}
	l := t.l
	now := l.now()
	var evs []Event
	for _, h := range t.holds {
		charge := actual
		if h.b.Shadow {
			charge = wouldBe
		}
		evs = append(evs, h.give(now, max(charge, 0))...)
	}
	l.emit(evs)
}
