package cost

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
}

// budgetState is a budget and the accounts of its keys.
type budgetState struct {
	Budget
	owner    *Ledger
	mu       sync.Mutex
	accounts map[string]*account
	fullTold time.Time // the window whose EventKeysFull was reported
}

// account is one key's spend in its current window.
type account struct {
	key        string
	start, end time.Time
	spent      providers.Money // settled: what calls cost (or, in shadow mode, would have)
	reserved   providers.Money // the pre-flight estimates of the calls in flight
	told       uint8           // the tiers reported in this window (1 << Action)
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

// Ticket is the ledger's decision for one call, and the spend it holds for the call until
// Settle: Action and Downgrade are what to do (ActionAllow, ActionWarn or ActionDowngrade; a refusal is Admit's
// error), WouldBe and WouldDowngrade what would be done were every budget enforced — the same,
// without budgets in shadow mode.
type Ticket struct {
	Action         Action
	Downgrade      *Downgrade
	WouldBe        Action
	WouldDowngrade *Downgrade

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
		a = &account{key: key}
		b.accounts[key] = a
	}
	if a.end.IsZero() || !now.Before(a.end) || now.Before(a.start) {
		a.start, a.end = b.Window.Bounds(now, l.loc)
		a.spent, a.reserved, a.told = 0, 0, 0
	}
	return a, nil
}

// sweep forgets the accounts whose window ended. Callers hold b.mu.
func (b *budgetState) sweep(now time.Time) {
	for k, a := range b.accounts {
		if !now.Before(a.end) {
			delete(b.accounts, k)
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
		Message: fmt.Sprintf("budget %q keeps %d keys in this %s and cannot count the new key %q: not sent (FailClosed)",
			b.Name, l.maxKeys, b.Window, clip(key))}
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

// spentOf is a's spend as the budget sees it. Callers hold b.mu.
func (b *budgetState) spentOf(a *account) providers.Money {
	return a.spent
}

// reserve holds d.amount in d's account when it fits under the refuse tier, and reports
// whether it did. A store that cannot be reached is an error when the ledger fails closed.
func (l *Ledger) reserve(ctx context.Context, d *decision, now time.Time) (bool, error) {
	b, a := d.b, d.a
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.NeverRefuse && a.spent.Add(a.reserved).Add(d.amount) > tierOf(b.limitOf(a.key), b.refuseAt()) {
		return false, nil
	}
	a.reserved = a.reserved.Add(d.amount)
	return true, nil
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
	return &providers.Error{Kind: providers.KindBudgetExhausted, RetryAfter: end.Sub(now),
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

// give ends the hold h, charging charge to its account.
func (h hold) give(now time.Time, charge providers.Money) []Event {
	b, a := h.b, h.a
	b.mu.Lock()
	defer b.mu.Unlock()
	if a.start.Equal(h.start) {
		a.reserved = max(a.reserved-h.reserved, 0)
	}
	if charge <= 0 {
		return nil
	}
	a.spent = a.spent.Add(charge)
	return b.tell(b.owner, a, b.tierOf(a), now)
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
