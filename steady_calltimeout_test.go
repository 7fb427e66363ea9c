package steady_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// LLM.Resilience.CallTimeoutSeconds, and a named policy's, reach the client: a server's hint
// past the deadline fails the call at once, kind timeout, instead of waiting it out.
func TestFromConfig_CallTimeoutSecondsBoundsTheWholeCall(t *testing.T) {
	s := mocks.NewServer(mocks.WithScript(mocks.RateLimited(30 * time.Second).Always()))
	defer s.Close()
	c := clientFromJSON(t, `{"LLM": {
		"Resilience": {"CallTimeoutSeconds": 5, "RetryMaxDelaySeconds": 60, "RateLimitCooldown": false},
		"Policies": {"interactive": {"CallTimeoutSeconds": "2s", "RetryMaxDelaySeconds": 60, "RateLimitCooldown": false}},
		"Providers": {
			"openai": {"Type": "openai", "BaseURL": "`+s.OpenAIBaseURL()+`", "APIKeyEnv": "K", "Model": "gpt-4o-mini"}
		}}}`, []string{"K=" + sentinelKey})
	for name, opts := range map[string][]client.CallOption{"LLM.Resilience": nil, "a named policy": {client.WithPolicy("interactive")}} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a guard: the call must not wait
		_, err := c.Chat(ctx, hello(), opts...)
		cancel()
		var pe *providers.Error
		var te *resilience.TimeoutError
		if !errors.As(err, &pe) || pe.Kind != providers.KindTimeout || pe.GaveUp != "deadline" || pe.StatusCode != 429 ||
			!errors.As(err, &te) || te.Limit != resilience.TimeoutCall {
			t.Errorf("%s: %v", name, err)
		}
	}
	if n := s.Journal().Len(); n != 2 {
		t.Errorf("%d requests, want one per call", n)
	}
}
