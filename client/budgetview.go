package client

import (
	"time"

	"github.com/steadyllm/steady/cost"
)

// budgetReading and budgetKeyReading are the types of health.BudgetReading and
// health.BudgetKeyReading — unnamed struct types, so the client satisfies health.BudgetSet
// without importing health, which sits above it. Their fields must stay those of health's, in
// the same order: the assertion in budgetview_test.go fails to compile otherwise.
type (
	budgetReading = struct {
		Name, Per, Window                      string
		WindowEnd                              time.Time
		EndsIn                                 time.Duration
		Shadow                                 bool
		Currency                               string
		WarnAt, DowngradeAt, RefuseAt          float64
		Keys                                   []budgetKeyReading
		Counted                                int
		AtWarn, AtDowngrade, AtRefuse, Refused int
		Full                                   bool
		Fleet, StoreDown, FailClosed           bool
	}
	budgetKeyReading = struct {
		Key          string
		Spent, Limit string
		Share        float64
		Tier         string
		Refused      bool
	}
)

// BudgetReadings returns the state of the client's budgets (WithBudgets) for a health check,
// in the shape of health.BudgetReading, so that health.Checker.AddSet shows them: per budget,
// by name, its top keys (those that spent the largest share of their limit, at most top and at
// most cost.MaxSnapshotKeys), how many keys are at each tier, when the window ends and the
// spend store's state. Nil when the client keeps no budgets. It reads Ledger().Snapshot(top),
// which has the same figures typed.
func (c *Client) BudgetReadings(top int) []budgetReading {
	l := c.Ledger()
	if l == nil {
		return nil
	}
	s := l.Snapshot(top)
	out := make([]budgetReading, 0, len(s.Budgets))
	for _, b := range s.Budgets {
		r := budgetReading{Name: b.Name, Per: b.Per, Window: b.Window.String(), WindowEnd: b.End, EndsIn: b.End.Sub(s.Time), Shadow: b.Shadow,
			Currency: s.Currency, WarnAt: b.WarnAt, DowngradeAt: b.DowngradeAt, RefuseAt: b.RefuseAt,
			Keys: make([]budgetKeyReading, 0, len(b.Keys)), Counted: b.Counted, AtWarn: b.AtTier[cost.ActionWarn],
			AtDowngrade: b.AtTier[cost.ActionDowngrade], AtRefuse: b.AtTier[cost.ActionRefuse], Refused: b.Refused,
			Full: b.Full, Fleet: b.Fleet, StoreDown: s.Store != nil && s.Store.Down, FailClosed: s.FailClosed}
		for _, k := range b.Keys {
			r.Keys = append(r.Keys, budgetKeyReading{Key: k.Key, Spent: k.Spent.String(), Limit: k.Limit.String(),
				Share: k.Share(), Tier: k.Tier.String(), Refused: k.Refused})
		}
		out = append(out, r)
	}
	return out
}
