// Command budget shows a tenant budget with a downgrade: each tenant may spend $0.00018 a day;
// past 60 % of it, its calls go to a cheaper model from the next call on; a call that would
// take it past the limit is refused before it is sent, until the day ends. Every answer says
// what it cost. It runs against the embedded fake server: no API key needed.
//
//	go run ./examples/budget
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "budget:", err)
		os.Exit(1)
	}
}

// run runs the demonstration, writing what happens to out; opts are added to the client's (the
// test gives it a clock of its own, so that no day ends in the middle).
func run(ctx context.Context, out io.Writer, opts ...client.Option) error {
	server := mocks.NewServer(mocks.WithReply("Here is a short answer."))
	defer server.Close()

	// docs:begin budget
	prices, err := cost.NewPrices("USD", []cost.Entry{
		{Provider: "openai", Model: "gpt-4o", Price: cost.PerMillion(2.50, 10)},
		{Provider: "openai", Model: "gpt-4o-mini", Price: cost.PerMillion(0.15, 0.60)},
	})
	if err != nil {
		return err
	}
	limit, _ := providers.ParseMoney("0.00018")
	perTenant := cost.Budget{
		Name: "tenant-daily", Per: client.TenantDimension, Window: cost.Day, Limit: limit,
		WarnAt: 0.4, DowngradeAt: 0.6, Downgrade: cost.Downgrade{Model: "gpt-4o-mini"},
	}
	c, err := client.New(append([]client.Option{
		client.WithProvider("openai", resilience.DefaultOptions(), func(hc *http.Client) (providers.Provider, error) {
			return openai.New(openai.Config{Name: "openai", Dialect: openai.Compatible, BaseURL: server.OpenAIBaseURL(),
				APIKey: "sk-demo", HTTPClient: hc})
		}),
		client.WithPrices(prices),
		client.WithBudgets(cost.LedgerOptions{}, perTenant),
		client.WithCostObserver(func(e cost.Event) {
			switch e.Type {
			case cost.EventWarn, cost.EventDowngrade, cost.EventExhausted:
				fmt.Fprintf(out, "  event: %s for %s %q (%s of %s USD spent)\n", e.Type, e.Dimension, e.Key, e.Spent, e.Limit)
			}
		}),
	}, opts...)...) // opts: the test's clock
	// docs:end budget
	if err != nil {
		return err
	}
	defer c.Close()

	// docs:begin ask
	ask := func(tenant string) {
		resp, err := c.Chat(ctx, &providers.ChatRequest{Model: "gpt-4o", MaxTokens: 8,
			Messages: []providers.Message{{Role: providers.RoleUser, Content: "Summarise our plan in one line."}}},
			client.WithTenant(tenant))
		var pe *providers.Error
		switch {
		case errors.As(err, &pe) && pe.Kind == providers.KindBudgetExhausted:
			fmt.Fprintf(out, "%s: refused (%s), not sent; the budget starts again when the day ends, in %s\n",
				tenant, pe.Kind, pe.RetryAfter.Round(time.Minute))
		case err != nil:
			fmt.Fprintf(out, "%s: %v\n", tenant, err)
		default:
			sp, _ := c.Ledger().Spend(perTenant.Name, tenant)
			fmt.Fprintf(out, "%s: %s answered for %s USD; %s of %s spent today\n", tenant, resp.Model, resp.Cost.Total(), sp.Spent, sp.Limit)
		}
	}
	// docs:end ask
	for range 7 {
		ask("acme")
	}
	ask("globex") // another tenant has its own budget
	return nil
}
