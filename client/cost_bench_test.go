package client_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
)

// What pricing and budgets add to client.Chat, over the in-memory transport of
// BenchmarkClientChat_Anthropic (compare with it: a client without prices or budgets):
//
//	BenchmarkClientChat_Priced     the call priced (WithPrices): ChatResponse.Cost
//	BenchmarkClientChat_Budgeted   priced, and admitted and settled by a tenant budget

func BenchmarkClientChat_Priced(b *testing.B) {
	benchCost(b, false)
}

func BenchmarkClientChat_Budgeted(b *testing.B) {
	benchCost(b, true)
}

func benchCost(b *testing.B, budgeted bool) {
	prices, err := cost.NewPrices("USD", []cost.Entry{{Provider: "llm", Model: "claude-haiku-4-5", Price: cost.PerMillion(1, 5)}})
	if err != nil {
		b.Fatal(err)
	}
	opts := []client.Option{client.WithProvider("llm", benchPolicy(), func(hc *http.Client) (providers.Provider, error) {
		return anthropic.New(anthropic.Config{Name: "llm", BaseURL: "http://127.0.0.1:1", APIKey: "sk-bench", HTTPClient: hc, Model: "claude-haiku-4-5"})
	}), client.WithBaseTransport(memTransport{[]byte(anthropicAnswer)}), client.WithPrices(prices)}
	var callOpts []client.CallOption
	if budgeted {
		opts = append(opts, client.WithBudgets(cost.LedgerOptions{},
			cost.Budget{Name: "t", Per: client.TenantDimension, Window: cost.Day, Limit: cost.MaxLimit}))
		callOpts = append(callOpts, client.WithTenant("acme"))
	}
	c, err := client.New(opts...)
	if err != nil {
		b.Fatal(err)
	}
	req := &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: "hello there"}}}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := c.Chat(ctx, req, callOpts...)
		if err != nil || resp.Cost.Serving == 0 {
			b.Fatal(resp, err)
		}
	}
}
