package health

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/steadyllm/steady/internal/redact"
)

// BudgetSet is implemented by anything that keeps cost budgets — the steady client built with
// client.WithBudgets — so that [Checker.AddSet] (or [Checker.AddBudgets]) shows them.
//
// Its types are aliases of unnamed struct types of standard fields (BudgetReading,
// BudgetKeyReading): an owner that declares the same fields, in the same order, satisfies the
// interface without importing this package (as the client does, which sits below health), the
// way CircuitGroups does with a plain map. BudgetReadings must be safe for concurrent use and
// must not block for long: every health request calls it.
type BudgetSet interface {
	// BudgetReadings returns the state of each budget now, in name order, with at most top of
	// its keys: those that spent the largest share of their limit, the largest first.
	BudgetReadings(top int) []BudgetReading
}

// BudgetReading is one budget's state in its current window, as a BudgetSet reads it.
type BudgetReading = struct {
	// Name is the budget's name, Per the dimension its keys are of ("" when it keeps one spend
	// for every call), Window its window (minute, hour, day, month), WindowEnd when the
	// current one ends and every key's spend starts again from 0, and EndsIn the time until
	// then, on the owner's clock.
	Name, Per, Window string
	WindowEnd         time.Time
	EndsIn            time.Duration
	// Shadow marks a budget in shadow mode: it decides and applies nothing.
	Shadow bool
	// Currency is the currency of the amounts; WarnAt, DowngradeAt and RefuseAt the tiers as
	// fractions of a key's limit, 0 for none.
	Currency                      string
	WarnAt, DowngradeAt, RefuseAt float64
	// Keys are the keys that spent the largest share of their limit (at most the top asked),
	// the largest first; Counted is how many keys spent in the window, Keys among them.
	Keys    []BudgetKeyReading
	Counted int
	// AtWarn, AtDowngrade and AtRefuse count the keys whose next call meets each tier, of all
	// Counted; Refused those that had a call refused in the window.
	AtWarn, AtDowngrade, AtRefuse, Refused int
	// Full reports that the budget had no room for a new key in this window: its calls go
	// uncounted, or are refused when FailClosed.
	Full bool
	// Fleet reports that a spend store shares the budget between instances, StoreDown that the
	// last request to it failed, FailClosed that calls the budgets cannot count are refused.
	Fleet, StoreDown, FailClosed bool
}

// BudgetKeyReading is one key's spend in its budget's current window.
type BudgetKeyReading = struct {
	// Key is the key (a tenant, a team: the application's, never a secret).
	Key string
	// Spent and Limit are amounts in the budget's currency, as decimal text ("0.25"); Share is
	// Spent / Limit.
	Spent, Limit string
	Share        float64
	// Tier is what the key's next call meets: allow, warn, downgrade or refuse.
	Tier string
	// Refused reports that a call of the key was refused in the window.
	Refused bool
}

// BudgetKeys is how many keys of each budget a report shows: those nearest their limit.
const BudgetKeys = 10

// maxBudgets bounds the budgets a report shows of one set, and maxText any text of a
// budget's, whatever the set hands over.
const (
	maxBudgets = 256
	maxText    = 128
)

// BudgetResult is one budget's state at the time of a check.
type BudgetResult struct {
	Reading BudgetReading
	// Status is pass below the warn tier, and warn once a key passed it or had a call refused —
	// for a budget in enforce mode; one in shadow mode passes whatever its keys would meet —
	// or when the budget has no room for new keys. Never fail: a tenant over its budget is
	// the application's policy working, not an outage.
	Status Status
	// Tier is the highest tier a key is at: allow, warn, downgrade or refuse.
	Tier string
}

// AddBudgets registers the budgets of set: each appears in the output as the check
// "<budget>:budget", and, when the budgets are shared through a spend store, the store as the
// check "spend:shared-state" (a warning while it is down, as AddSharedState). A budget that is
// not pass is at worst a warning of its own check: the overall status stays the circuits'
// (see BudgetResult) unless the budget has no room for new keys, or its store is down. AddSet
// calls it for a set that keeps budgets. A nil set panics; adding a set twice, or two sets
// with budgets of one name, shows each name once, the first added.
func (c *Checker) AddBudgets(set BudgetSet) {
	if set == nil {
		panic("health: AddBudgets with a nil set")
	}
	c.mu.Lock()
	c.budgets = append(c.budgets, set)
	c.mu.Unlock()
}

// readBudgets reads every budget set now: the budgets' results, sorted by name, and the spend
// store's, when a budget is shared through one.
func readBudgets(sets []BudgetSet) ([]BudgetResult, []SharedStateResult) {
	var out []BudgetResult
	var store *SharedStateResult
	seen := map[string]bool{}
	for _, set := range sets {
		readings := set.BudgetReadings(BudgetKeys)
		for _, r := range readings[:min(len(readings), maxBudgets)] {
			if seen[r.Name] {
				continue
			}
			seen[r.Name] = true
			if len(r.Keys) > BudgetKeys {
				r.Keys = r.Keys[:BudgetKeys]
			}
			out = append(out, judgeBudget(r))
			if r.Fleet {
				if store == nil {
					store = &SharedStateResult{Name: "spend", Up: true, Status: StatusPass}
				}
				if r.StoreDown {
					store.Up, store.Status = false, StatusWarn
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b BudgetResult) int { return strings.Compare(a.Reading.Name, b.Reading.Name) })
	if store == nil {
		return out, nil
	}
	return out, []SharedStateResult{*store}
}

// tiers are the tiers' names, in rising order.
var tiers = []string{"allow", "warn", "downgrade", "refuse"}

// judgeBudget gives r its status and its highest tier.
func judgeBudget(r BudgetReading) BudgetResult {
	top := 0
	for i, n := range []int{0, r.AtWarn, r.AtDowngrade, r.AtRefuse} {
		if n > 0 {
			top = i
		}
	}
	for _, k := range r.Keys {
		// A tier this package does not know ranks as refuse: nonsense never looks fine.
		if i := slices.Index(tiers, k.Tier); i < 0 {
			top = len(tiers) - 1
		} else {
			top = max(top, i)
		}
	}
	res := BudgetResult{Reading: r, Status: StatusPass, Tier: tiers[top]}
	if r.Full || !r.Shadow && (top > 0 || r.Refused > 0) {
		res.Status = StatusWarn
	}
	return res
}

// budgetStatus raises the overall status s for what the budgets say: a warning when one has
// no room for new keys. A key's tier is its budget's check alone.
func budgetStatus(s Status, budgets []BudgetResult) Status {
	for _, b := range budgets {
		if b.Reading.Full && s.rank() < StatusWarn.rank() {
			s = StatusWarn
		}
	}
	return s
}

// budgetFields are the fields a budget's check adds to the draft's (see MarshalJSON).
type budgetFields struct {
	Mode        string         `json:"mode"`
	Per         string         `json:"per,omitempty"`
	Window      string         `json:"window"`
	WindowEnd   string         `json:"windowEnd"`
	EndsIn      string         `json:"endsIn"`
	Currency    string         `json:"currency"`
	Keys        []budgetKey    `json:"keys"`
	MoreKeys    int            `json:"moreKeys"`
	KeysAtTier  map[string]int `json:"keysAtTier,omitempty"`
	KeysRefused int            `json:"keysRefused,omitempty"`
	KeysFull    bool           `json:"keysFull,omitempty"`
	Fleet       bool           `json:"fleet,omitempty"`
}

type budgetKey struct {
	Key     string `json:"key"`
	Spent   string `json:"spent"`
	Limit   string `json:"limit"`
	Share   string `json:"share"`
	Tier    string `json:"tier"`
	Refused bool   `json:"refused,omitempty"`
}

// budgetChecks adds to checks one check per budget, "<budget>:budget", read at stamp.
func budgetChecks(checks map[string][]check, budgets []BudgetResult, stamp string) {
	for _, b := range budgets {
		r := b.Reading
		f := &budgetFields{Mode: "enforce", Per: shown(r.Per), Window: shown(r.Window),
			WindowEnd: r.WindowEnd.UTC().Format(time.RFC3339), EndsIn: formatProbe(max(r.EndsIn, 0)), Currency: shown(r.Currency), Keys: make([]budgetKey, 0, len(r.Keys)),
			MoreKeys: max(r.Counted-len(r.Keys), 0), KeysRefused: max(r.Refused, 0), KeysFull: r.Full, Fleet: r.Fleet}
		if r.Shadow {
			f.Mode = "shadow"
		}
		for i, n := range []int{r.AtWarn, r.AtDowngrade, r.AtRefuse} {
			if n > 0 {
				if f.KeysAtTier == nil {
					f.KeysAtTier = map[string]int{}
				}
				f.KeysAtTier[tiers[i+1]] = n
			}
		}
		for _, k := range r.Keys {
			f.Keys = append(f.Keys, budgetKey{Key: shown(k.Key), Spent: shown(k.Spent), Limit: shown(k.Limit),
				Share: strconv.FormatFloat(k.Share, 'f', 2, 64), Tier: shown(k.Tier), Refused: k.Refused})
		}
		checks[shown(r.Name)+":budget"] = []check{{ComponentType: "budget", ObservedValue: b.Tier, Status: b.Status, Time: stamp,
			budgetFields: f}}
	}
}

// shown bounds and escapes a text of a budget for the output: credential shapes masked,
// control characters escaped, at most maxText bytes. Budget keys are the application's and
// never secret, but they are the callers', and bounded as every text the output shows.
func shown(s string) string { return redact.Safe(redact.Scrubber{}.Redact(s), maxText) }
