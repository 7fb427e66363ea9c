package steady_test

import (
	"context"
	"testing"

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
