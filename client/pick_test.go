package client_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
)

// A provider that may not serve a call — for each of the picker's filters: it takes no tools
// of the call's raw tools' system, it lacks a capability the call needs, its context window
// cannot hold the call — does not cut the wait on the one that can. Claude answers 429 with a
// 400 ms hint: with Claude alone in the chain the call waits it out, and so it must with the
// other provider after it, which WithFailoverAfter(100ms) would otherwise send the call to at
// once. (The fail-over wait once asked "can another provider serve this at once?" without the
// raw-tools rule, and gave up with wait_too_long.)
func TestPick_AProviderThatCannotServeTheCallDoesNotCutTheWait(t *testing.T) {
	long := hello()
	long.Messages[0].Content = strings.Repeat("many words ", 400) // about 1,100 tokens with the answer's
	for _, tc := range []struct {
		filter string
		req    func() *providers.ChatRequest
		other  func(gpt *mocks.Server) []client.Option
	}{
		{"the raw tools' system", func() *providers.ChatRequest {
			req := hello()
			req.Tools = []providers.Tool{webSearchTool}
			return req
		}, func(gpt *mocks.Server) []client.Option {
			return []client.Option{openAIProvider("openai", gpt, policy())}
		}},
		{"a capability", hello, func(*mocks.Server) []client.Option {
			return []client.Option{client.WithProvider("openai", policy(), func(*http.Client) (providers.Provider, error) {
				return embedOnly{}, nil
			})}
		}},
		{"the context window", func() *providers.ChatRequest { return long }, func(gpt *mocks.Server) []client.Option {
			return []client.Option{openAIProvider("openai", gpt, policy()), client.WithContextWindow("openai", 500, nil)}
		}},
	} {
		for _, chain := range [][]string{{"claude"}, {"claude", "openai"}} {
			claude := mocks.NewServer(mocks.WithScript(mocks.RateLimited(400*time.Millisecond), mocks.OK()))
			gpt := mocks.NewServer()
			opts := append([]client.Option{anthropicProvider("claude", claude, policy()), client.WithFallback(chain...),
				client.WithFailoverAfter(100 * time.Millisecond)}, tc.other(gpt)...)
			c := newClient(t, opts...)
			resp, err := c.Chat(context.Background(), tc.req())
			claude.Close()
			gpt.Close()
			if err != nil || resp.Provider != "claude" {
				t.Fatalf("%s, chain %v: %v, want claude's answer after its 400 ms hint", tc.filter, chain, err)
			}
			if gpt.Journal().Len() != 0 {
				t.Fatalf("%s, chain %v: openai, which may not serve the call, was asked", tc.filter, chain)
			}
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
