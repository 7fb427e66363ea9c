package cost

import (
	"slices"
	"time"

	"github.com/steadyllm/steady/providers"
)

// MaxSnapshotKeys bounds the keys a snapshot lists of each budget (Ledger.Snapshot's top).
const MaxSnapshotKeys = 100

// snapshotChunk is how many accounts a snapshot reads each time it holds a budget's lock: about
// 11 µs on a shared 2-core machine (BenchmarkSnapshot), whatever the number of keys.
const snapshotChunk = 128

// LedgerSnapshot is the state of a ledger's budgets at one moment (Ledger.Snapshot): what is
// spent against each limit, for a health check or a status page.
type LedgerSnapshot struct {
	// Time is when it was read, on the ledger's clock.
	Time time.Time
	// Currency is the currency of every amount.
	Currency string
	// FailClosed reports LedgerOptions.FailClosed: calls the ledger cannot count (a new key of a
	// full budget, the store down when a lease runs dry) are refused rather than let through.
	FailClosed bool
	// Store is the spend store's state as this instance last heard it; nil when the budgets
	// are this instance's alone.
	Store *StoreSnapshot
	// Budgets are the budgets, by name.
	Budgets []BudgetSnapshot
}

// StoreSnapshot is a spend store's state as an instance last heard it.
type StoreSnapshot struct {
	// Down reports that the instance's last request to the store failed, at DownAt, and no
	// request has succeeded since: calls that need more than their instance's lease go on
	// counted here (fail open) or are refused (FailClosed). It stays so until a call asks the
	// store again and it answers; an instance that makes no calls does not ask.
	Down   bool
	DownAt time.Time
}

// BudgetSnapshot is one budget's state in its current window.
type BudgetSnapshot struct {
	// Name, Per, Window and Shadow are the budget's (see Budget).
	Name, Per string
	Window    Window
	Shadow    bool
	// Start and End bound the current window: every key's spend starts again from 0 at End.
	Start, End time.Time
	// Limit is a key's limit, unless Limits gives it its own (KeySnapshot.Limit says).
	Limit providers.Money
	// WarnAt, DowngradeAt and RefuseAt are the tiers as fractions of each key's limit, 0 for
	// none: RefuseAt is 1 when the budget says 0, and 0 when it never refuses (NeverRefuse).
	WarnAt, DowngradeAt, RefuseAt float64
	// Fleet reports that a spend store shares the budget with the fleet (LedgerOptions.Store):
	// the spends are then the fleet's as this instance last heard them.
	Fleet bool
	// Keys are the keys that have spent the largest share of their limit in the window, at most
	// the top asked, the largest share first (by key between equal shares).
	Keys []KeySnapshot
	// Counted is how many keys the budget counts in the window — every key a call named since
	// it began, Keys among them — and AtTier how many of them are at each tier (indexed by
	// Action: AtTier[ActionWarn] are the keys whose next call would meet the warn tier).
	// Refused is how many had a call refused in the window (in shadow mode: would have had).
	Counted int
	AtTier  [ActionRefuse + 1]int
	Refused int
	// Full reports that in this window a call named a new key the budget had no room for
	// (LedgerOptions.MaxKeys, EventKeysFull): the key's calls go uncounted by it, or are refused
	// when the ledger fails closed.
	Full bool
}

// More is how many keys the budget counts in the window beyond those in Keys.
func (b BudgetSnapshot) More() int { return max(b.Counted-len(b.Keys), 0) }

// KeySnapshot is one key's spend in its budget's current window.
type KeySnapshot struct {
	Key string
	// Spent is what the key's settled calls cost in the window — in a fleet, what the fleet
	// spent as this instance last heard (at Heard) and what this instance spent since —
	// Reserved the estimates of its calls in flight here, and Limit its limit.
	Spent, Reserved, Limit providers.Money
	// Tier is what the key's next call would meet now: ActionAllow below the warn tier,
	// ActionWarn or ActionDowngrade past them, ActionRefuse when a call of any cost would be
	// refused (the spend and the calls in flight reached the refuse tier, or, in a fleet, the
	// store said it had no room left within FleetRecheck and the lease is spent). A budget in
	// shadow mode applies none of it.
	Tier Action
	// Refused reports that a call of the key was refused in the window (in shadow mode: would
	// have been), even one whose estimate alone would have crossed the limit.
	Refused bool
	// Heard is when this instance last heard the fleet's totals for the key, zero alone or
	// before the first answer.
	Heard time.Time
}

// Share is the share of its limit the key spent: 0.5 for half, above 1 once calls cost more
// than their estimates at the end of the window.
func (k KeySnapshot) Share() float64 { return share(k.Spent, k.Limit) }

func share(spent, limit providers.Money) float64 {
	if limit <= 0 {
		return 0
	}
	return float64(spent) / float64(limit)
}

// Snapshot reads what every budget spent in its current window: for each, the top keys (0 to
// MaxSnapshotKeys; beyond is cut to it) that spent the largest share of their limit, how many
// keys it counts and at which tier, and whether it ran out of room for keys; and the spend
// store's state. It does no I/O.
//
// Reading costs calls nothing until it is asked for, and then holds each budget's lock for
// snapshotChunk (128) accounts at a time, giving it back in between, so a call never waits
// behind more than that (about 11 µs) whatever the budget keeps (up to MaxKeys); a whole
// reading takes about 90 ns per key kept (9 ms for DefaultMaxKeys). The reading of a budget is
// thus not one instant: each key's figures are, but a call that lands in between moves only
// the keys it touches. While a full budget forgets the keys whose window ended (to make room
// for a new one), a key moved in its order may be missed by a reading under way.
func (l *Ledger) Snapshot(top int) LedgerSnapshot {
	top = min(max(top, 0), MaxSnapshotKeys)
	now := l.now()
	s := LedgerSnapshot{Time: now, Currency: l.currency, FailClosed: l.closed, Budgets: make([]BudgetSnapshot, 0, len(l.budgets))}
	if f := l.fleet; f != nil {
		f.mu.Lock()
		s.Store = &StoreSnapshot{Down: f.down, DownAt: f.downAt}
		f.mu.Unlock()
	}
	for _, b := range l.budgets {
		s.Budgets = append(s.Budgets, b.snapshot(l, now, top))
	}
	return s
}

// snapshot reads b in chunks of snapshotChunk accounts, each under b's lock.
func (b *budgetState) snapshot(l *Ledger, now time.Time, top int) BudgetSnapshot {
	start, end := b.Window.Bounds(now, l.loc)
	s := BudgetSnapshot{Name: b.Name, Per: b.Per, Window: b.Window, Shadow: b.Shadow, Start: start, End: end, Limit: b.Limit,
		WarnAt: b.WarnAt, DowngradeAt: b.DowngradeAt, Fleet: l.fleet != nil}
	if !b.NeverRefuse {
		s.RefuseAt = b.refuseAt()
	}
	best := ranking{keys: make([]KeySnapshot, 0, min(top, 16))}
	for i := 0; ; {
		b.mu.Lock()
		if i == 0 {
			s.Full = b.fullTold.Equal(start)
		}
		stop := min(i+snapshotChunk, len(b.order))
		for _, a := range b.order[min(i, stop):stop] {
			if !a.start.Equal(start) {
				continue // a window that ended: the key has spent nothing in this one yet
			}
			k := b.keyOf(a, now)
			s.Counted++
			s.AtTier[k.Tier]++
			if k.Refused {
				s.Refused++
			}
			best.offer(k, top)
		}
		b.mu.Unlock()
		if stop <= i {
			break
		}
		i = stop
		if l.betweenChunks != nil {
			l.betweenChunks()
		}
	}
	s.Keys = best.sorted()
	return s
}

// keyOf reads a's spend and tier. Callers hold b.mu.
func (b *budgetState) keyOf(a *account, now time.Time) KeySnapshot {
	k := KeySnapshot{Key: a.key, Spent: b.spentOf(a), Reserved: a.reserved, Limit: b.limitOf(a.key), Tier: b.tierOf(a),
		Refused: a.told&(1<<ActionRefuse) != 0}
	if ls := a.lease; ls != nil {
		k.Heard = ls.heard
	}
	if !b.NeverRefuse {
		full := k.Spent.Add(k.Reserved) >= tierOf(k.Limit, b.refuseAt())
		dry := a.lease != nil && a.lease.have <= 0 && a.lease.dryAt(now)
		if full || dry {
			k.Tier = ActionRefuse
		}
	}
	return k
}

// ranking keeps the top keys offered to it: once full, a min-heap whose root is the weakest
// kept, so a key that beats it costs a replacement and log(top) comparisons.
type ranking struct{ keys []KeySnapshot }

// offer keeps k when fewer than top keys are kept or it beats the weakest.
func (r *ranking) offer(k KeySnapshot, top int) {
	switch {
	case top == 0:
	case len(r.keys) < top:
		r.keys = append(r.keys, k)
		if len(r.keys) == top {
			for i := top/2 - 1; i >= 0; i-- {
				r.down(i)
			}
		}
	case weaker(r.keys[0], k):
		r.keys[0] = k
		r.down(0)
	}
}

// down moves the key at i down the heap until neither child is weaker.
func (r *ranking) down(i int) {
	n := len(r.keys)
	for {
		least, left, right := i, 2*i+1, 2*i+2
		if left < n && weaker(r.keys[left], r.keys[least]) {
			least = left
		}
		if right < n && weaker(r.keys[right], r.keys[least]) {
			least = right
		}
		if least == i {
			return
		}
		r.keys[i], r.keys[least] = r.keys[least], r.keys[i]
		i = least
	}
}

// sorted returns the keys kept, the strongest first.
func (r *ranking) sorted() []KeySnapshot {
	slices.SortFunc(r.keys, func(a, b KeySnapshot) int {
		switch {
		case weaker(b, a):
			return -1
		case weaker(a, b):
			return 1
		}
		return 0
	})
	return r.keys
}

// weaker reports whether a ranks below b: a smaller share, or the same and a later key.
func weaker(a, b KeySnapshot) bool {
	sa, sb := a.Share(), b.Share()
	if sa != sb {
		return sa < sb
	}
	return a.Key > b.Key
}
