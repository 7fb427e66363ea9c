package steady_test

import (
	"context"
	"errors"
	"testing"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
)

// LLM.Cost.Prices prices the calls of a client built from the configuration.
func TestFromConfig_PricesCallsFromLLMCost(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("four words of reply"))
	defer s.Close()
	c := clientFromJSON(t, `{"LLM": {
		"Providers": {"openai": {"Dialect": "openai", "BaseURL": "`+s.OpenAIBaseURL()+`", "APIKeyEnv": "K", "Model": "gpt-4o-mini"}},
		"Cost": {"Currency": "EUR", "Prices": {"openai": {"gpt-4o-mini*": {"Input": 0.15, "Output": 0.6}}}}}}`, []string{"K=" + sentinelKey})
	resp, err := c.Chat(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	// 3 prompt tokens at 0.15 and 5 answer tokens at 0.6 per million.
	if want := (providers.CallCost{Currency: "EUR", Serving: 3*150 + 5*600}); resp.Cost != want {
		t.Fatalf("cost %+v, want %+v", resp.Cost, want)
	}
}

// LLM.Cost.Budgets keeps the budgets of a client built from the configuration: a tenant's
// calls are downgraded past the tier, then refused at the limit.
func TestFromConfig_KeepsTheBudgetsOfLLMCost(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("ok"))
	defer s.Close()
	c := clientFromJSON(t, `{"LLM": {
		"Providers": {"openai": {"Dialect": "openai", "BaseURL": "`+s.OpenAIBaseURL()+`", "APIKeyEnv": "K", "Model": "gpt-4o"}},
		"Cost": {"Prices": {"openai": {"gpt-4o": {"Input": 2.5, "Output": 10}, "gpt-4o-mini": {"Input": 0.15, "Output": 0.6}}},
			"TimeZone": "America/New_York",
			"Budgets": {"tenants": {"Per": "tenant", "Window": "month", "Limit": 0.00005, "DowngradeAt": 0.3,
				"Downgrade": {"Model": "gpt-4o-mini"}}}}}}`, []string{"K=" + sentinelKey})
	req := hello()
	req.MaxTokens = 1
	var models []string
	var err error
	for range 40 {
		var resp *providers.ChatResponse
		resp, err = c.Chat(context.Background(), req, client.WithTenant("acme"))
		if err != nil {
			break
		}
		models = append(models, resp.Model)
	}
	var pe *providers.Error
	// gpt-4o costs 0.0000175 a call: the tier (0.000015) is crossed by the first.
	if !errors.As(err, &pe) || pe.Kind != providers.KindBudgetExhausted || len(models) < 3 || models[0] != "gpt-4o" || models[1] != "gpt-4o-mini" {
		t.Fatalf("models %v, then %v", models, err)
	}
	if l := c.Ledger(); l == nil || len(l.Budgets()) != 1 {
		t.Fatal("no ledger")
	}
}
