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
