package steady

import (
	"fmt"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/config"
	"github.com/steadyllm/steady/cost"
)

// costOptions returns the client options of LLM.Cost: its prices (client.WithPrices) and its
// budgets (client.WithBudgets). A configuration without LLM.Cost prices nothing.
func costOptions(c *config.Cost) ([]client.Option, error) {
	if c == nil {
		return nil, nil
	}
	prices, err := cost.NewPrices(c.Currency, c.Prices)
	if err != nil {
		return nil, fmt.Errorf("steady: LLM.Cost: %w", err)
	}
	opts := []client.Option{client.WithPrices(prices)}
	if len(c.Budgets) > 0 {
		opts = append(opts, client.WithBudgets(cost.LedgerOptions{Currency: c.Currency, Location: c.Location,
			MaxKeys: c.MaxKeys, FailClosed: c.FailClosed}, c.Budgets...))
	}
	return opts, nil
}
