package deferral_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/deferral"
	"github.com/steadyllm/steady/providers"
)

// A call a budget refused retries when the budget's window ends, and the decision's reason
// names the budget — it is the budget's time, not a server's hint.
func TestDecide_ABudgetRefusalWaitsForTheBudgetsWindowAndNamesIt(t *testing.T) {
	now := time.Date(2027, 1, 15, 8, 20, 0, 0, time.UTC)
	limit, _ := providers.ParseMoney("0.001")
	l, err := cost.NewLedger(cost.LedgerOptions{Now: func() time.Time { return now }},
		cost.Budget{Name: "hourly", Window: cost.Hour, Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Admit(context.Background(), cost.Call{Estimate: func(*cost.Downgrade) providers.Money { return 2 * limit }})
	var r *cost.Refusal
	if !errors.As(err, &r) || r.Budget != "hourly" || r.Window != cost.Hour {
		t.Fatalf("refusal %v", err)
	}
	dec := deferral.Decider{Now: func() time.Time { return now }}.Decide(err, 3)
	if !dec.Retry || dec.Delay != 40*time.Minute || dec.Source != deferral.SourceHint || dec.Kind != providers.KindBudgetExhausted ||
		dec.Reason != `budget "hourly" has room again: the end of its hour` {
		t.Fatalf("decision %+v", dec)
	}
	// A budget_exhausted error that says no budget (not a ledger's) still says what it waits for.
	dec = deferral.Decider{Now: func() time.Time { return now }}.Decide(&providers.Error{Kind: providers.KindBudgetExhausted, RetryAfter: time.Minute}, 1)
	if !dec.Retry || dec.Delay != time.Minute || strings.Contains(dec.Reason, "server") {
		t.Fatalf("decision %+v", dec)
	}
}
