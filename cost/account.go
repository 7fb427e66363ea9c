package cost

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/steadyllm/steady/providers"
)

// budgetState is a budget and the accounts of its keys.
type budgetState struct {
	Budget
	owner    *Ledger
	mu       sync.Mutex
	accounts map[string]*account
	// order holds the same accounts as accounts, for Ledger.Snapshot to read a few at a time:
	// a map cannot be walked in parts with its lock given back in between.
	order    []*account
	fullTold time.Time // the window whose EventKeysFull was reported
}

// account is one key's spend in its current window.
type account struct {
	key        string
	start, end time.Time
	spent      providers.Money // settled: what calls cost (or, in shadow mode, would have)
	reserved   providers.Money // the pre-flight estimates of the calls in flight
	told       uint8           // the tiers reported in this window (1 << Action)
	lease      *lease          // the instance's share of the fleet's window, nil alone
	at         int             // its index in the budget's order
}

// account returns key's account in its current window, opened or rolled over as needed; nil
// when the budget keeps MaxKeys keys and none has ended. Callers hold b.mu.
func (b *budgetState) account(l *Ledger, key string, now time.Time) (*account, []Event) {
	a := b.accounts[key]
	if a == nil {
		if len(b.accounts) >= l.maxKeys {
			b.sweep(now)
		}
		if len(b.accounts) >= l.maxKeys {
			return nil, l.keysFullEvent(b, key, now)
		}
		a = &account{key: key, at: len(b.order)}
		b.accounts[key] = a
		b.order = append(b.order, a)
	}
	if a.end.IsZero() || !now.Before(a.end) || now.Before(a.start) {
		a.start, a.end = b.Window.Bounds(now, l.loc)
		a.spent, a.reserved, a.told = 0, 0, 0
		if l.fleet != nil {
			a.lease = &lease{}
		}
	}
	return a, nil
}

// sweep forgets the accounts whose window ended. Callers hold b.mu.
func (b *budgetState) sweep(now time.Time) {
	for k, a := range b.accounts {
		if !now.Before(a.end) {
			delete(b.accounts, k)
			last := b.order[len(b.order)-1]
			b.order[a.at], last.at = last, a.at
			b.order[len(b.order)-1] = nil
			b.order = b.order[:len(b.order)-1]
		}
	}
}

// keysFullEvent reports, once per window, that the budget is full of keys. Callers hold b.mu.
func (l *Ledger) keysFullEvent(b *budgetState, key string, now time.Time) []Event {
	start, end := b.Window.Bounds(now, l.loc)
	if b.fullTold.Equal(start) {
		return nil
	}
	b.fullTold = start
	return []Event{{Type: EventKeysFull, Time: now, Budget: b.Name, Dimension: b.Per, Key: key, WindowEnd: end, Currency: l.currency}}
}

// keysFull is the refusal of a call with a new key of budget b when b is full and the ledger
// fails closed.
func (l *Ledger) keysFull(b *budgetState, key string, now time.Time) *providers.Error {
	_, end := b.Window.Bounds(now, l.loc)
	return &providers.Error{Kind: providers.KindBudgetExhausted, Code: CodeKeysFull, RetryAfter: end.Sub(now),
		Err: &Refusal{Budget: b.Name, Window: b.Window, Code: CodeKeysFull},
		Message: fmt.Sprintf("budget %q keeps %d keys in this %s and cannot count the new key %q: not sent (FailClosed)",
			b.Name, l.maxKeys, b.Window, clip(key))}
}

// Refusal is the cause (providers.Error.Err) of every budget_exhausted error a Ledger
// returns: the budget that refused the call, its window and the error's Code. It lets a job
// queue's deferral name the budget it waits for (deferral.Decider) without reading the
// message.
type Refusal struct {
	Budget string
	Window Window
	// Code is "" for the limit itself, else CodeKeysFull or CodeStoreUnavailable.
	Code string
}

func (r *Refusal) Error() string {
	switch r.Code {
	case CodeKeysFull:
		return fmt.Sprintf("budget %q keeps as many keys as it may this %s", r.Budget, r.Window)
	case CodeStoreUnavailable:
		return fmt.Sprintf("budget %q: the spend store cannot be reached", r.Budget)
	}
	return fmt.Sprintf("budget %q is spent this %s", r.Budget, r.Window)
}

// The Codes of the budget_exhausted errors that are not the limit itself.
const (
	// CodeKeysFull: the budget keeps as many keys as it may, and fails closed.
	CodeKeysFull = "budget_keys_full"
	// CodeStoreUnavailable: the spend store cannot be reached, and the ledger fails closed.
	CodeStoreUnavailable = "budget_store_unavailable"
)

// tierOf returns the tier a's settled spend has reached. Callers hold b.mu.
func (b *budgetState) tierOf(a *account) Action {
	limit, spent := b.limitOf(a.key), b.spentOf(a)
	switch {
	case b.DowngradeAt > 0 && spent >= tierOf(limit, b.DowngradeAt):
		return ActionDowngrade
	case b.WarnAt > 0 && spent >= tierOf(limit, b.WarnAt):
		return ActionWarn
	}
	return ActionAllow
}

// tell returns the events of the tiers up to tier not reported yet in a's window, and marks
// them reported. Callers hold b.mu.
func (b *budgetState) tell(l *Ledger, a *account, tier Action, now time.Time) []Event {
	var evs []Event
	for _, x := range [2]Action{ActionWarn, ActionDowngrade} {
		if x > tier || a.told&(1<<x) != 0 {
			continue
		}
		if x == ActionWarn && b.WarnAt == 0 || x == ActionDowngrade && b.DowngradeAt == 0 {
			continue
		}
		a.told |= 1 << x
		typ := EventWarn
		if x == ActionDowngrade {
			typ = EventDowngrade
		}
		evs = append(evs, Event{Type: typ, Time: now, Budget: b.Name, Dimension: b.Per, Key: a.key, Action: x, Shadow: b.Shadow,
			Spent: b.spentOf(a), Limit: b.limitOf(a.key), Currency: l.currency, WindowEnd: a.end})
	}
	return evs
}

// spentOf is a's spend as the budget sees it: its own, or the fleet's. Callers hold b.mu.
func (b *budgetState) spentOf(a *account) providers.Money {
	if a.lease != nil {
		return a.lease.spent()
	}
	return a.spent
}

// reserve holds d.amount in d's account when it fits under the refuse tier, and reports
// whether it did. A store that cannot be reached is an error when the ledger fails closed.
func (l *Ledger) reserve(ctx context.Context, d *decision, now time.Time) (bool, error) {
	b, a := d.b, d.a
	if l.fleet != nil && a.lease != nil {
		return l.fleet.reserve(ctx, d, now)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.NeverRefuse && a.spent.Add(a.reserved).Add(d.amount) > tierOf(b.limitOf(a.key), b.refuseAt()) {
		return false, nil
	}
	a.reserved = a.reserved.Add(d.amount)
	return true, nil
}
