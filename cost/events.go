package cost

import (
	"time"

	"github.com/steadyllm/steady/providers"
)

// EventType says what the cost accounting noticed.
type EventType int

// The events of cost accounting. Each is reported once for what it is about — a model, a
// budget's key in one window, a change of the store — never once per call, except
// EventDecision.
const (
	// EventUnpriced: a call used Model at Provider, which has no price: its cost is not
	// counted (CallCost.Unpriced). Reported once per provider and model for the life of the
	// client.
	EventUnpriced EventType = iota + 1
	// EventWarn: Key's spend in Budget reached its warn tier (Spent of Limit, until
	// WindowEnd). Once per key and window.
	EventWarn
	// EventDowngrade: Key's spend in Budget reached its downgrade tier: from the next call on,
	// calls go to the budget's downgrade. Once per key and window.
	EventDowngrade
	// EventExhausted: a call for Key would have crossed Budget's limit (Estimate on top of
	// Spent) and was refused, or, in shadow mode, would have been. Once per key and window.
	EventExhausted
	// EventDecision: what the budgets decided for one call (Action; Shadow when a budget in
	// shadow mode would have decided it). Reported for every call that a budget applies to.
	EventDecision
	// EventStoreFailed: the spend store (the fleet's) stopped answering; Err says why. Calls
	// go on as the configuration says (fail open or closed).
	EventStoreFailed
	// EventStoreRecovered: the spend store answers again.
	EventStoreRecovered
	// EventKeysFull: Budget keeps MaxKeys keys in the current windows and a call named a new
	// one (Key). Once per budget and window.
	EventKeysFull
)

// String returns a stable snake_case name, fit for a metric label or a log attribute.
func (t EventType) String() string {
	switch t {
	case EventUnpriced:
		return "unpriced"
	case EventWarn:
		return "budget_warn"
	case EventDowngrade:
		return "budget_downgrade"
	case EventExhausted:
		return "budget_exhausted"
	case EventDecision:
		return "budget_decision"
	case EventStoreFailed:
		return "spend_store_failed"
	case EventStoreRecovered:
		return "spend_store_recovered"
	case EventKeysFull:
		return "budget_keys_full"
	}
	return "unknown"
}

// Event is one thing the cost accounting noticed. It carries names and amounts, never a
// prompt, an answer or a credential. Key is the caller's budget key as given (bounded by
// MaxKeyBytes, printable): log it only if your keys may be logged.
type Event struct {
	Type EventType
	Time time.Time
	// Provider and Model: the model without a price (EventUnpriced).
	Provider, Model string
	// Budget, Dimension and Key: the budget, what it is kept per, and the key whose spend the
	// event is about ("" for a budget kept for every call, or a call that named no key).
	Budget, Dimension, Key string
	// Action is the budgets' decision (EventDecision: the decision applied, or in shadow
	// mode the one that would have been), and the tier an event reports.
	Action Action
	// Shadow reports a decision of a budget in shadow mode: recorded, not applied.
	Shadow bool
	// Spent is the key's spend in the window before the call (what the decision saw),
	// Estimate the call's pre-flight estimate, Limit the budget's limit for the key.
	Spent, Estimate, Limit providers.Money
	// Currency is the currency of the amounts.
	Currency string
	// WindowEnd is when the key's window ends (and its spend starts again from 0).
	WindowEnd time.Time
	// Err is the store's error (EventStoreFailed).
	Err error
}

// Observer receives events. It must be quick and safe for concurrent use: it runs on the
// goroutine of the call.
type Observer func(Event)
