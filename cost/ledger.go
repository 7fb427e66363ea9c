package cost

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/steadyllm/steady/providers"
)

// LedgerOptions configure a Ledger.
type LedgerOptions struct {
	// Currency is the currency of the amounts, for events and errors ("USD" when empty).
	Currency string
	// Location is the time zone of the windows (nil: UTC): a day ends at its midnight, a
	// month on its first.
	Location *time.Location
	// MaxKeys bounds the keys each budget keeps in its current windows (0: DefaultMaxKeys;
	// at most MaxMaxKeys). Keys whose window ended make room; past the bound a call with a new
	// key is refused when FailClosed, else not counted by that budget (EventKeysFull, once per
	// window).
	MaxKeys int
	// FailClosed refuses calls the ledger cannot account for — a new key past MaxKeys, the
	// spend store unreachable when an instance needs more budget from it — instead of letting
	// them go uncounted (or counted by this instance alone).
	FailClosed bool
	// Store shares the budgets' spend with the fleet's other instances (see SpendStore); nil
	// keeps it in this instance alone.
	Store SpendStore
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Observer receives the ledger's events, nil for none.
	Observer Observer
}

// Bounds of a ledger's keys.
const (
	DefaultMaxKeys = 100_000
	MaxMaxKeys     = 10_000_000
)

// Ledger keeps the spend of budgets and decides what each call may do. It is safe for
// concurrent use.
type Ledger struct {
	budgets  []*budgetState // sorted by name
	dims     []string       // the dimensions of the budgets, sorted
	currency string
	loc      *time.Location
	maxKeys  int
	closed   bool // FailClosed
	now      func() time.Time
	observer Observer
	fleet    *fleet // nil: this instance alone
	// betweenChunks, when set by a test, runs each time Snapshot gives a budget's lock back
	// between two chunks of its accounts.
	betweenChunks func()
}

// NewLedger checks the budgets (Validate, names unique, at most MaxBudgets) and options, and
// returns a ledger keeping them.
func NewLedger(o LedgerOptions, budgets ...Budget) (*Ledger, error) {
	var errs []error
	if len(budgets) > MaxBudgets {
		errs = append(errs, fmt.Errorf("cost: %d budgets: at most %d", len(budgets), MaxBudgets))
	}
	if o.MaxKeys < 0 || o.MaxKeys > MaxMaxKeys {
		errs = append(errs, fmt.Errorf("cost: MaxKeys %d: must be between 0 (the default, %d) and %d", o.MaxKeys, DefaultMaxKeys, MaxMaxKeys))
	}
	if o.Currency == "" {
		o.Currency = "USD"
	}
	if !validCurrency(o.Currency) {
		errs = append(errs, fmt.Errorf("cost: currency %q: must be a code of 3 to 8 capital letters", o.Currency))
	}
	l := &Ledger{currency: o.Currency, loc: o.Location, maxKeys: o.MaxKeys, closed: o.FailClosed, now: o.Now, observer: o.Observer}
	if l.loc == nil {
		l.loc = time.UTC
	}
	if l.maxKeys == 0 {
		l.maxKeys = DefaultMaxKeys
	}
	if l.now == nil {
		l.now = time.Now
	}
	seen := map[string]bool{}
	for _, b := range budgets {
		if err := b.Validate(); err != nil {
			errs = append(errs, err)
			continue
		}
		if seen[b.Name] {
			errs = append(errs, fmt.Errorf("cost: budget %q: given twice", b.Name))
			continue
		}
		seen[b.Name] = true
		b.Limits = cloneLimits(b.Limits)
		b.Downgrade.Providers = slices.Clone(b.Downgrade.Providers)
		l.budgets = append(l.budgets, &budgetState{Budget: b, owner: l, accounts: map[string]*account{}})
		if b.Per != "" && !slices.Contains(l.dims, b.Per) {
			l.dims = append(l.dims, b.Per)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	slices.SortFunc(l.budgets, func(a, b *budgetState) int { return strings.Compare(a.Name, b.Name) })
	slices.Sort(l.dims)
	if o.Store != nil {
		l.fleet = newFleet(l, o.Store)
	}
	return l, nil
}

func cloneLimits(m map[string]providers.Money) map[string]providers.Money {
	if m == nil {
		return nil
	}
	out := make(map[string]providers.Money, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Dimensions returns the dimensions the budgets are kept per, sorted.
func (l *Ledger) Dimensions() []string { return slices.Clone(l.dims) }

// Keeps reports whether a budget is kept per dimension dim.
func (l *Ledger) Keeps(dim string) bool { return slices.Contains(l.dims, dim) }

// Budgets returns the ledger's budgets, sorted by name.
func (l *Ledger) Budgets() []Budget {
	out := make([]Budget, len(l.budgets))
	for i, b := range l.budgets {
		out[i] = b.Budget
		out[i].Limits = cloneLimits(b.Limits)
		out[i].Downgrade.Providers = slices.Clone(b.Downgrade.Providers)
	}
	return out
}

// Currency returns the currency of the ledger's amounts.
func (l *Ledger) Currency() string { return l.currency }

// Close waits for what the ledger does in the background (refills of the fleet's leases) to
// end. What the instance holds of the fleet's windows and did not spend lapses with them.
func (l *Ledger) Close() error {
	if l.fleet != nil {
		l.fleet.close()
	}
	return nil
}

func (l *Ledger) emit(evs []Event) {
	if l.observer == nil {
		return
	}
	for _, e := range evs {
		l.observer(e)
	}
}

// Spend is a key's spend in a budget's current window.
type Spend struct {
	Budget, Dimension, Key string
	// Spent is what the settled calls cost (the fleet's, as this instance last heard, with a
	// store), Reserved the estimates of the calls in flight here, Limit the key's limit.
	Spent, Reserved, Limit providers.Money
	Currency               string
	Start, End             time.Time
	Shadow                 bool
}

// Spend returns key's spend in the named budget's current window; ok is false for a budget
// the ledger does not keep. A key no call named yet has spent nothing.
func (l *Ledger) Spend(budget, key string) (s Spend, ok bool) {
	now := l.now()
	for _, b := range l.budgets {
		if b.Name != budget {
			continue
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		start, end := b.Window.Bounds(now, l.loc)
		s = Spend{Budget: b.Name, Dimension: b.Per, Key: key, Limit: b.limitOf(key), Currency: l.currency, Start: start, End: end, Shadow: b.Shadow}
		if a := b.accounts[key]; a != nil && a.start.Equal(start) {
			s.Spent, s.Reserved = b.spentOf(a), a.reserved
		}
		return s, true
	}
	return Spend{}, false
}
