package steady_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	steady "github.com/steadyllm/steady"
	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/config"
	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/internal/testkit/backend"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
)

// costGuideConfig is the configuration docs/cost.md shows.
const costGuideConfig = "examples/config/cost.json"

// The cost guide's configuration gives the prices and budgets the guide says it does. Built
// against the fake server with the tenant limit shrunk to the fake's tiny calls (through the
// environment, as an operator would), a tenant's calls go as asked, then to the cheaper model
// from the call after the downgrade tier was crossed, then are refused until midnight in
// Paris; the company's budget, in shadow mode, only reports what it would have done.
func TestGuide_CostConfiguration(t *testing.T) {
	cfg, err := config.LoadWithEnv([]string{"OPENAI_API_KEY=" + sentinelKey}, costGuideConfig)
	if err != nil {
		t.Fatal(err)
	}
	cc := cfg.Cost
	if cc == nil || cc.Currency != "USD" || len(cc.Prices) != 2 || cc.TimeZone != "Europe/Paris" || len(cc.Budgets) != 2 {
		t.Fatalf("LLM.Cost: %+v", cc)
	}
	mini := cc.Prices[1]
	if mini.Model != "gpt-4o-mini*" || mini.Price.CachedInput != 75_000_000 || mini.Price.CacheWrite != mini.Price.Input ||
		mini.Price.Reasoning != mini.Price.Output {
		t.Fatalf("gpt-4o-mini*: %+v", mini)
	}
	monthly, daily := cc.Budgets[0], cc.Budgets[1] // sorted by name
	if !monthly.Shadow || monthly.Window != cost.Month || daily.Per != "tenant" || daily.Limits["acme"] != 50*providers.Unit ||
		daily.Downgrade.Model != "gpt-4o-mini" || daily.Downgrade.Policy != "cheap" {
		t.Fatalf("budgets: %+v", cc.Budgets)
	}

	s := mocks.NewServer(mocks.WithReply("ok"))
	defer s.Close()
	cfg, err = config.LoadWithEnv([]string{"OPENAI_API_KEY=" + sentinelKey,
		"LLM__Providers__openai__BaseURL=" + s.OpenAIBaseURL(),
		"LLM__Cost__Budgets__tenant-daily__Limit=0.0002",
		"LLM__Cost__Budgets__company-monthly__Limit=0.00005",
	}, costGuideConfig)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var shadow []string
	clock := backend.NewManualClock() // 08:00 UTC, 09:00 in Paris
	c, err := steady.FromConfig(cfg, client.WithClock(clock), client.WithCostObserver(func(e cost.Event) {
		if e.Type == cost.EventDecision && e.Shadow {
			mu.Lock()
			shadow = append(shadow, e.Action.String())
			mu.Unlock()
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// "hello there" answered "ok": 3 tokens in and 1 out, 0.0000175 on gpt-4o and 0.00000105
	// on gpt-4o-mini. The downgrade tier (0.9 of 0.0002) is crossed by the 11th call.
	var models []string
	var refusal *providers.Error
	for range 30 {
		req := hello()
		req.MaxTokens = 1
		resp, err := c.Chat(context.Background(), req, client.WithTenant("globex"))
		if errors.As(err, &refusal) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		models = append(models, resp.Model)
	}
	want := fmt.Sprint(append(repeat("gpt-4o", 11), repeat("gpt-4o-mini", 7)...))
	if fmt.Sprint(models) != want || refusal == nil || refusal.Kind != providers.KindBudgetExhausted ||
		refusal.RetryAfter != 15*time.Hour {
		t.Fatalf("models %v, then %v; want %s, then budget_exhausted until midnight in Paris", models, refusal, want)
	}
	// The shadow budget would have allowed two calls, then refused every one: it refused none.
	mu.Lock()
	defer mu.Unlock()
	if len(shadow) != len(models)+1 || shadow[0] != "allow" || shadow[1] != "allow" || shadow[2] != "refuse" {
		t.Fatalf("shadow decisions %v", shadow)
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}
