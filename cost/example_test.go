package cost_test

import (
	"context"
	"fmt"

	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/providers"
)

// A price table and the cost of one answer's usage, exact to the nano-unit.
func ExamplePrices_Lookup() {
	mini := cost.PerMillion(0.15, 0.60) // $0.15 in, $0.60 out per million tokens
	mini.CachedInput = 75_000_000       // cached input at half: $0.075
	prices, err := cost.NewPrices("USD", []cost.Entry{
		{Provider: "openai", Model: "gpt-4o-mini*", Price: mini},
		{Provider: "claude", Model: "claude-sonnet-4-5", Price: cost.Price{Input: 3 * providers.Unit, CachedInput: 300_000_000,
			CacheWrite: 3_750_000_000, Output: 15 * providers.Unit, Reasoning: 15 * providers.Unit}},
	})
	if err != nil {
		panic(err)
	}
	p, _ := prices.Lookup("openai", "gpt-4o-mini-2024-07-18")
	fmt.Println(p.Of(providers.Usage{InputTokens: 1200, CachedInputTokens: 1024, OutputTokens: 300}, 0), prices.Currency())
	p, _ = prices.Lookup("claude", "claude-sonnet-4-5")
	fmt.Println(p.Of(providers.Usage{InputTokens: 10_000, CacheWriteInputTokens: 8_000, OutputTokens: 500}, 0), prices.Currency())
	// Output:
	// 0.0002832 USD
	// 0.0435 USD
}

// A budget per tenant: its tiers act from the call after the spend reached them, and a call
// that would cross the limit is refused before it is sent.
func ExampleLedger_Admit() {
	ledger, err := cost.NewLedger(cost.LedgerOptions{}, cost.Budget{
		Name: "tenant-daily", Per: "tenant", Window: cost.Day, Limit: providers.Unit,
		WarnAt: 0.5, DowngradeAt: 0.7, Downgrade: cost.Downgrade{Model: "gpt-4o-mini"},
	})
	if err != nil {
		panic(err)
	}
	for range 5 {
		t, err := ledger.Admit(context.Background(), cost.Call{
			Keys:     []cost.Key{{Dimension: "tenant", Key: "acme"}},
			Estimate: func(*cost.Downgrade) providers.Money { return 250_000_000 }, // 0.25
		})
		if err != nil {
			fmt.Println(err.(*providers.Error).Kind)
			continue
		}
		fmt.Println(t.Action)
		t.Settle(250_000_000, 250_000_000) // the call cost its estimate
	}
	// Output:
	// allow
	// allow
	// warn
	// downgrade
	// budget_exhausted
}

// What every budget spent, for a health check or a status page: the keys that spent the
// largest share of their limit, and the tier their next call meets.
func ExampleLedger_Snapshot() {
	ledger, err := cost.NewLedger(cost.LedgerOptions{}, cost.Budget{
		Name: "tenant-daily", Per: "tenant", Window: cost.Day, Limit: providers.Unit, WarnAt: 0.5,
	})
	if err != nil {
		panic(err)
	}
	for _, spend := range []struct {
		tenant string
		amount providers.Money
	}{{"acme", 600_000_000}, {"globex", 200_000_000}, {"initech", 100_000_000}} {
		t, err := ledger.Admit(context.Background(), cost.Call{Keys: []cost.Key{{Dimension: "tenant", Key: spend.tenant}}})
		if err != nil {
			panic(err)
		}
		t.Settle(spend.amount, spend.amount)
	}
	// docs:begin snapshot
	s := ledger.Snapshot(2) // the 2 keys of each budget nearest their limit
	for _, b := range s.Budgets {
		fmt.Printf("%s: %d keys, %d at warn, %d more not listed; the %s ends at %s\n", b.Name, b.Counted,
			b.AtTier[cost.ActionWarn], b.More(), b.Window, b.End.Format("15:04"))
		for _, k := range b.Keys {
			fmt.Printf("  %s: %s of %s %s (%.0f%%), next call: %s\n", k.Key, k.Spent, k.Limit, s.Currency, 100*k.Share(), k.Tier)
		}
	}
	// docs:end snapshot
	// Output:
	// tenant-daily: 3 keys, 1 at warn, 1 more not listed; the day ends at 00:00
	//   acme: 0.6 of 1 USD (60%), next call: warn
	//   globex: 0.2 of 1 USD (20%), next call: allow
}
