package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
)

// A call with an Anthropic server tool can be served by Anthropic alone. When Anthropic answers
// 429 with a short hint, the call waits it out — as it does with Anthropic alone in the chain —
// since no other provider of the chain can take it: adding a provider that cannot serve the
// call must not make it fail. (The fail-over wait once asked "can another provider serve this at
// once?" without the raw-tools rule, and gave up with wait_too_long.)
func TestPick_AProviderThatCannotServeTheCallDoesNotCutTheWait(t *testing.T) {
	for _, chain := range [][]string{{"claude"}, {"claude", "openai"}} {
		claude := mocks.NewServer(mocks.WithScript(mocks.RateLimited(400*time.Millisecond), mocks.OK()))
		gpt := mocks.NewServer()
		req := hello()
		req.Tools = []providers.Tool{webSearchTool}
		c := newClient(t, anthropicProvider("claude", claude, policy()), openAIProvider("openai", gpt, policy()),
			client.WithFallback(chain...), client.WithFailoverAfter(100*time.Millisecond))
		resp, err := c.Chat(context.Background(), req)
		claude.Close()
		gpt.Close()
		if err != nil || resp.Provider != "claude" {
			t.Fatalf("chain %v: %v, want claude's answer after its 400 ms hint", chain, err)
		}
		if gpt.Journal().Len() != 0 {
			t.Fatalf("chain %v: openai, which takes no anthropic tools, was asked", chain)
		}
	}
}

// A budget prices a call at the route that will serve it: a call with an Anthropic server
// tool, on a chain that starts with OpenAI (which takes no such tools), is priced at Claude's
// price, not OpenAI's. (Priced at OpenAI's, forty times dearer, it was refused before
// anything was sent.)
func TestPick_ABudgetPricesTheRouteThatWillServe(t *testing.T) {
	claude := mocks.NewServer()
	defer claude.Close()
	gpt := mocks.NewServer()
	defer gpt.Close()
	prices, err := cost.NewPrices("USD", []cost.Entry{
		{Provider: "openai", Model: "gpt-4o-mini", Price: cost.PerMillion(40, 40)},
		{Provider: "claude", Model: "claude-haiku-4-5", Price: cost.PerMillion(1, 1)},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The call's estimate is about 3 + 100 tokens: 0.000103 at Claude's price, 0.00412 at
	// OpenAI's. The limit lies between them.
	budget := cost.Budget{Name: "tenants", Per: "tenant", Window: cost.Day, Limit: nano(t, "0.001")}
	ev := &events{}
	c := newClient(t, openAIProvider("openai", gpt, policy()), anthropicProvider("claude", claude, policy()),
		client.WithFallback("openai", "claude"), client.WithPrices(prices),
		client.WithBudgets(cost.LedgerOptions{}, budget), client.WithCostObserver(ev.observe))
	req := hello()
	req.MaxTokens = 100
	req.Tools = []providers.Tool{webSearchTool}
	resp, err := c.Chat(context.Background(), req, client.WithTenant("acme"))
	if err != nil || resp.Provider != "claude" {
		t.Fatalf("%v: want the call admitted at Claude's price and served by it", err)
	}
	for _, e := range ev.of(cost.EventDecision) {
		if e.Estimate > nano(t, "0.0002") {
			t.Fatalf("the call was estimated at %s, OpenAI's price: OpenAI cannot serve it", e.Estimate)
		}
	}
}

// After a failure, the telemetry names as next the route the walk goes to: one that may serve
// the call, never a provider it will skip. (It named the next provider with the capabilities,
// though it takes no Anthropic tools.)
func TestPick_TelemetryNamesTheNextRouteThatMayServe(t *testing.T) {
	down := mocks.NewServer(mocks.WithScript(mocks.Status(503).Always()))
	defer down.Close()
	gpt := mocks.NewServer()
	defer gpt.Close()
	up := mocks.NewServer()
	defer up.Close()
	tel := &fakeTelemetry{}
	o := policy()
	o.RetryCount = 0
	c := newClient(t, anthropicProvider("claude-down", down, o), openAIProvider("openai", gpt, o),
		anthropicProvider("claude-up", up, o), client.WithFallback("claude-down", "openai", "claude-up"), client.WithTelemetry(tel))
	req := hello()
	req.Tools = []providers.Tool{webSearchTool}
	if _, err := c.Chat(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	_, tries, _ := tel.snapshot()
	if len(tries) != 2 || tries[0].Provider != "claude-down" || tries[0].Next != "claude-up" || tries[1].Provider != "claude-up" {
		t.Fatalf("tries %+v: want claude-down, failing with Next claude-up, then claude-up", tries)
	}
}
