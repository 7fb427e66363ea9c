package cost

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/steadyllm/steady/providers"
)

// SpendStore keeps budgets' spend for a fleet: the instances of an application that share it
// keep one budget together, not one each (github.com/steadyllm/steady/state/redis is a store on
// Redis). An instance leases slices of a budget's room and spends them locally, so a call meets
// the store only when its instance's slice runs dry — and the next slice is taken in the
// background before it does.
//
// The store keeps, per budget, key and window, what it granted and what the instances said
// they spent. Both only grow within a window, and every instance knows lower bounds of both —
// the totals of the last answer it had — which it sends with each request as floors
// (SpendRequest.FloorGranted, FloorSpent). A store keeps its totals at or above the floors of
// every request, which changes nothing while it is sound: its totals are never below what an
// instance heard. It trusts nothing it reads back: a total that is not a whole number from 0
// to its bound (the ceiling for what was granted, MaxStoredMoney for what was spent), a key of
// another type, and a window lost before its end (evicted, flushed) are rebuilt from the
// request's floors. A rebuilt window is never above the truth, so the damage refuses no call;
// it is below it by what was granted since the rebuilding instance last heard, and each later
// request brings it back up to what its instance heard — the fleet's overspend after a repair
// is bounded by what was granted between an instance's last answer before the damage and its
// next request after it (docs/cost.md, "Fleet-wide budgets").
type SpendStore interface {
	// LeaseSpend adds r.Spent to the spend of r's window and grants up to r.Want more of its
	// room below r.Ceiling, at once, keeping both totals at or above r's floors. It returns
	// what it granted (0 to Want) and the window's totals after the change. It may block for
	// the store's own short timeout.
	LeaseSpend(ctx context.Context, r SpendRequest) (SpendLease, error)
}

// SpendRequest is an instance's request to a SpendStore for one budget's key in one window.
type SpendRequest struct {
	// Budget and Key name the account, Start and End its window: [Start, End).
	Budget, Key string
	Start, End  time.Time
	// Ceiling is the most the fleet may be granted of the window; Want is how much more of it
	// the instance asks for, Spent what the instance spent in the window since it last said
	// (0 or more).
	Ceiling, Want, Spent providers.Money
	// FloorGranted and FloorSpent are what the instance knows the window's totals to be at
	// least, before Spent is added: the totals of its last answer in the window, 0 before
	// any. FloorGranted is at most Ceiling; a store cuts both to its own bounds all the same.
	FloorGranted, FloorSpent providers.Money
}

// SpendLease is a store's answer to LeaseSpend.
type SpendLease struct {
	// Granted is what the call was granted; FleetGranted and FleetSpent the window's totals,
	// over every instance.
	Granted, FleetGranted, FleetSpent providers.Money
}

// MaxStoredMoney bounds what a store keeps of one budget's key and window: 2⁵³ micro-units
// (about 9 billion units), which a double — the number of Redis's scripts — holds exactly.
// Ceilings above it are cut to it.
const MaxStoredMoney = providers.Money(1<<53) * (providers.Unit / 1_000_000)

// storeRetry is how long after the store failed a call goes on without asking it again (as
// the configuration says: open or closed).
const storeRetry = time.Second

// FleetRefresh is how old the fleet's totals an instance holds may grow while it makes calls:
// a call made after that asks the store for them again, in the background. An instance tells
// the store what it spent with each refill — each time its lease runs low, and at least every
// FleetRefresh while it makes calls — so another instance's spend reaches this one's tiers
// (warn, downgrade) within FleetRefresh plus one slice of that instance's spend (a few calls'
// estimates) that it has not told yet.
const FleetRefresh = time.Second

// FleetRecheck is how long an instance remembers that the store had no room left for an
// account. Once a lease of the account was granted less than it asked (the store's room is
// then all granted), the account's calls that need more than the instance holds are refused
// without asking the store, until the window ends or FleetRecheck has passed since the store
// said so; the next such call asks again. A tenant over its budget calling in a loop thus costs
// the store one request per FleetRecheck per instance, not one per call. Calls the instance's
// lease still covers go on, and the lease is still told to the store at least every
// FleetRefresh while they do.
const FleetRecheck = 5 * time.Second

// fleet is a ledger's share of the fleet's budgets: one lease per account.
type fleet struct {
	l     *Ledger
	store SpendStore

	mu     sync.Mutex
	down   bool
	downAt time.Time
	wg     sync.WaitGroup // the refills under way
}

// lease is an instance's share of one account's window in the fleet.
type lease struct {
	// have is what the instance was granted and has not reserved or spent; below 0 after
	// calls cost more than their estimates, or were let through while the store was down.
	have providers.Money
	// unreported is what the instance spent and has not told the store; reporting what a
	// refill under way is telling it.
	unreported, reporting providers.Money
	// fleetGranted and fleetSpent are the window's totals as the store last said, at heard.
	fleetGranted, fleetSpent providers.Money
	heard                    time.Time
	// slice is the size of a refill: sixteen of the largest estimate seen, at most a
	// sixteenth of the ceiling (or the estimate itself, when larger). A refill starts in the
	// background once less than a quarter of a slice is left.
	slice   providers.Money
	filling chan struct{} // closed when the refill under way ends; nil when none
	// dry is when the store last granted less than was asked — no room left — zero when its
	// last answer granted all; see FleetRecheck.
	dry time.Time
}

func newFleet(l *Ledger, s SpendStore) *fleet { return &fleet{l: l, store: s} }

// ceiling is the most the fleet may be granted of key's window in b.
func ceiling(b *budgetState, key string) providers.Money {
	if b.NeverRefuse {
		return MaxStoredMoney
	}
	return min(tierOf(b.limitOf(key), b.refuseAt()), MaxStoredMoney)
}

// dryAt reports whether the store said, within FleetRecheck of now, that it had no room left.
// A clock that stepped back by more than FleetRecheck ends it too, rather than holding it
// for as long as the step. Callers hold the budget's lock.
func (ls *lease) dryAt(now time.Time) bool {
	if ls.dry.IsZero() {
		return false
	}
	d := now.Sub(ls.dry)
	return d < FleetRecheck && d > -FleetRecheck
}

// spent is the account's spend as the fleet knows it. Callers hold the budget's lock.
func (ls *lease) spent() providers.Money {
	return ls.fleetSpent.Add(ls.reporting).Add(ls.unreported)
}

// reserve holds d.amount of d's account from its lease, refilling it from the store when it
// is short, and reports whether the fleet had the room. Within FleetRecheck of the store
// saying it had no room left, a call the lease cannot cover is refused without asking it. When
// the store cannot be reached the call is let through (counted here, and told to the store
// later) as long as it fits under the refuse tier with what this instance knows the window
// spent, or, failing closed, refused with a budget_exhausted error whose Code is
// CodeStoreUnavailable.
func (f *fleet) reserve(ctx context.Context, d *decision, now time.Time) (bool, error) {
	b, a, amount := d.b, d.a, d.amount
	b.mu.Lock()
	defer b.mu.Unlock()
	ls, start := a.lease, a.start
	if amount > 0 {
		ls.slice = min(max(ls.slice, 16*amount), max(ceiling(b, a.key)/16, amount))
	}
	asked := false
	for {
		if a.lease != ls || !a.start.Equal(start) {
			return false, nil // the window turned while the call waited: it is asked again
		}
		if ls.have >= amount {
			ls.have -= amount
			a.reserved = a.reserved.Add(amount)
			f.refillIfLow(b, a, now)
			return true, nil
		}
		if f.isDown(now) {
			if f.l.closed {
				return false, f.unavailable(b, now)
			}
			// Fail open: the call is counted here and told to the store once it answers, but
			// only within what this instance knows the window spent — its own calls and the
			// fleet's spend as it last heard — so a fleet whose store is down spends at most
			// the limit per instance, never without bound.
			if !b.NeverRefuse && ls.spent().Add(a.reserved).Add(amount) > tierOf(b.limitOf(a.key), b.refuseAt()) {
				return false, nil
			}
			ls.have -= amount
			a.reserved = a.reserved.Add(amount)
			return true, nil
		}
		if asked && ls.filling == nil {
			return false, nil // the store granted what it had: not enough
		}
		if ls.filling == nil && ls.dryAt(now) {
			return false, nil // the store had no room a moment ago: it is not asked again so soon
		}
		done := ls.filling
		if done == nil {
			done = f.refill(b, a, max(amount-ls.have, ls.slice))
			asked = true
		}
		b.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			b.mu.Lock()
			return false, ctx.Err()
		}
		b.mu.Lock()
	}
}

// refillIfLow starts a refill in the background when the lease runs low (unless the store
// said within FleetRecheck that it had no room left) or the fleet's totals are older than
// FleetRefresh; each refill tells the store what was spent since the last. Callers hold the
// budget's lock.
func (f *fleet) refillIfLow(b *budgetState, a *account, now time.Time) {
	ls := a.lease
	if ls.filling != nil || f.isDown(now) || ls.slice == 0 {
		return
	}
	if ls.have < ls.slice/4 && !ls.dryAt(now) || now.Sub(ls.heard) >= FleetRefresh {
		f.refill(b, a, max(ls.slice-ls.have, 0))
	}
}

// refill asks the store, in the background, for want more of a's window and tells it what was
// spent since, with the totals the instance last heard as floors; it returns a channel closed
// when the answer is in. Callers hold the budget's lock.
func (f *fleet) refill(b *budgetState, a *account, want providers.Money) chan struct{} {
	ls := a.lease
	done := make(chan struct{})
	ls.filling = done
	report := ls.unreported
	ls.unreported, ls.reporting = 0, ls.reporting.Add(report)
	ceil := ceiling(b, a.key)
	req := SpendRequest{Budget: b.Name, Key: a.key, Start: a.start, End: a.end, Ceiling: ceil, Want: want, Spent: report,
		FloorGranted: min(ls.fleetGranted, ceil), FloorSpent: ls.fleetSpent}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		res, err := f.store.LeaseSpend(context.Background(), req)
		if err == nil {
			err = checkLease(res, want)
		}
		now := f.l.now()
		// The store's state is recorded, and told, before any waiting call wakes: a call that
		// asked sees the store down (and fails open or closed) rather than "granted nothing",
		// and an observer hears of the failure before the refusal it causes.
		f.l.emit(f.note(err, now))
		b.mu.Lock()
		ls.reporting -= report
		if err != nil {
			ls.unreported = ls.unreported.Add(report)
		} else {
			ls.have = ls.have.Add(res.Granted)
			// The totals only grow within a window: an answer below what was heard before
			// (a store that lost them and does not keep floors) lowers no floor.
			ls.fleetGranted, ls.fleetSpent, ls.heard = max(ls.fleetGranted, res.FleetGranted), max(ls.fleetSpent, res.FleetSpent), now
			ls.dry = time.Time{}
			if res.Granted < want {
				ls.dry = now
			}
		}
		ls.filling = nil
		close(done)
		b.mu.Unlock()
	}()
	return done
}

// checkLease refuses an answer no store could give to a request for want: a grant beyond it
// or below 0, totals below 0 or beyond what a store keeps.
func checkLease(r SpendLease, want providers.Money) error {
	if r.Granted < 0 || r.Granted > want || r.FleetGranted < 0 || r.FleetGranted > MaxStoredMoney ||
		r.FleetSpent < 0 || r.FleetSpent > MaxStoredMoney {
		return fmt.Errorf("cost: the spend store answered %+v to a request for %s: not believed", r, want)
	}
	return nil
}

// settle ends a hold of reserved in the lease, charging charge. Callers hold the budget's
// lock.
func (f *fleet) settle(b *budgetState, a *account, reserved, charge providers.Money, now time.Time) {
	ls := a.lease
	if ls.slice == 0 && charge > 0 {
		// The window's first charge came before any call reserved in it (a call that outlived
		// the window it was admitted in): size the lease so the charge is told to the store.
		ls.slice = min(16*charge, max(ceiling(b, a.key)/16, charge))
	}
	ls.have = ls.have.Add(reserved).Add(-charge)
	ls.unreported = ls.unreported.Add(charge)
	f.refillIfLow(b, a, now)
}

// isDown reports whether the store failed within storeRetry.
func (f *fleet) isDown(now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.down && now.Sub(f.downAt) < storeRetry
}

// note records the outcome of a call to the store and returns the event of a change.
func (f *fleet) note(err error, now time.Time) []Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case err != nil:
		f.downAt = now
		if !f.down {
			f.down = true
			return []Event{{Type: EventStoreFailed, Time: now, Err: err, Currency: f.l.currency}}
		}
	case f.down:
		f.down = false
		return []Event{{Type: EventStoreRecovered, Time: now, Currency: f.l.currency}}
	}
	return nil
}

// unavailable is the refusal of a call that needs the store while it is down, failing closed.
func (f *fleet) unavailable(b *budgetState, now time.Time) *providers.Error {
	return &providers.Error{Kind: providers.KindBudgetExhausted, Code: CodeStoreUnavailable, RetryAfter: storeRetry,
		Err:     &Refusal{Budget: b.Name, Window: b.Window, Code: CodeStoreUnavailable},
		Message: fmt.Sprintf("budget %q: the spend store cannot be reached and the budgets fail closed: not sent", b.Name)}
}

// close waits for the refills under way.
func (f *fleet) close() { f.wg.Wait() }

// Micro converts an amount to whole micro-units, rounding up (what a store keeps: see
// MaxStoredMoney); FromMicro converts back. Stores use them so that every instance rounds
// alike.
func Micro(m providers.Money) int64 {
	if m <= 0 {
		return 0
	}
	return int64((m + 999) / 1000)
}

// FromMicro converts whole micro-units to Money, bounding them to [0, MaxStoredMoney].
func FromMicro(n int64) providers.Money {
	if n <= 0 {
		return 0
	}
	if n > math.MaxInt64/1000 || providers.Money(n)*1000 > MaxStoredMoney {
		return MaxStoredMoney
	}
	return providers.Money(n) * 1000
}
