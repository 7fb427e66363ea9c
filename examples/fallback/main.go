// Command fallback shows a fallback chain: the primary provider is down (every call 503), so
// after its retries the client asks the secondary, with the model mapped to the secondary's
// own name. The retry budget trims the second call's retries (the outage is on), the
// primary's circuit opens, and later calls skip it without sending a request.
//
//	go run ./examples/fallback
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fallback:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) error {
	primary := mocks.NewServer(mocks.WithScript(mocks.Status(http.StatusServiceUnavailable).Always()))
	defer primary.Close()
	secondary := mocks.NewServer(mocks.WithReply("Answered by the secondary."))
	defer secondary.Close()

	policy := resilience.DefaultOptions()
	policy.RetryCount = 2
	policy.RetryBaseDelaySeconds = 0.05
	policy.CircuitBreakerThreshold = 2
	provider := func(name string, s *mocks.Server) client.Option {
		return client.WithProvider(name, policy, func(hc *http.Client) (providers.Provider, error) {
			return openai.New(openai.Config{Name: name, Dialect: openai.Compatible, BaseURL: s.OpenAIBaseURL(), APIKey: "sk-demo", HTTPClient: hc})
		})
	}
	c, err := client.New(
		provider("primary", primary),
		provider("secondary", secondary),
		client.WithModelMap("secondary", map[string]string{"gpt-4o": "llama-3.3-70b"}),
		client.WithFallback("primary", "secondary"),
	)
	if err != nil {
		return err
	}
	for i := 1; i <= 3; i++ {
		before := primary.Journal().Len()
		resp, err := c.Chat(ctx, &providers.ChatRequest{
			Model:    "gpt-4o",
			Messages: []providers.Message{{Role: providers.RoleUser, Content: "Who answers?"}},
		})
		var pe *providers.Error
		if errors.As(err, &pe) {
			return fmt.Errorf("call %d: %w", i, err)
		}
		// Circuits are per model (resilience.Pipeline.Route): the primary's for gpt-4o.
		fmt.Fprintf(out, "call %d: %q from %s (model %s); primary saw %d requests, its circuit is %s\n",
			i, resp.Message.Content, resp.Provider, resp.Model, primary.Journal().Len()-before,
			c.Pipeline("primary").Route("gpt-4o").CircuitState())
	}
	return nil
}
