package cost

// Action is what budgets do with a call: the tiers of a budget, in rising order of severity.
type Action uint8

// The actions, least severe first: a call's decision is the most severe of its budgets'.
const (
	// ActionAllow: the call goes as asked.
	ActionAllow Action = iota
	// ActionWarn: the key's spend passed the warn tier; the call goes as asked.
	ActionWarn
	// ActionDowngrade: the key's spend passed the downgrade tier; the call goes to the
	// budget's Downgrade (a cheaper model, other providers, another policy).
	ActionDowngrade
	// ActionRefuse: the call would cross the budget's limit; it is not sent (a
	// *providers.Error of kind budget_exhausted).
	ActionRefuse
)

// String returns the action's name: allow, warn, downgrade, refuse.
func (a Action) String() string {
	switch a {
	case ActionAllow:
		return "allow"
	case ActionWarn:
		return "warn"
	case ActionDowngrade:
		return "downgrade"
	case ActionRefuse:
		return "refuse"
	}
	return "unknown"
}
