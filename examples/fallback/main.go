// Command fallback shows a fallback chain through an outage: the primary provider serves, then
// goes down (every call 503) while the program runs, and comes back. During the outage the
// client asks the secondary after the primary's retries, with the model mapped to the
// secondary's own name; the retry budget trims the second failing call's retries, the
// primary's circuit opens, and later calls skip it without sending a request. Once the primary
// is back and the circuit's break is over, a probe finds it healthy and it serves again.
//
// The outage is made through the fake server's admin API (mocks.Admin), over HTTP, as a test
// steers a fakellm process it did not start: the same calls work against
// `go run ./mocks/cmd/fakellm`'s printed URL.
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
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fallback:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) error {
	primary := mocks.NewServer(mocks.WithReply("Answered by the primary."))
	defer primary.Close()
	secondary := mocks.NewServer(mocks.WithReply("Answered by the secondary."))
	defer secondary.Close()
	admin := mocks.Admin(primary.URL()) // the primary's admin API, as another process would reach it

	policy := resilience.DefaultOptions()
	policy.RetryCount = 2
	policy.RetryBaseDelaySeconds = 0.05
	policy.CircuitBreakerThreshold = 2
	// A short break, so the example does not wait long, yet long enough that calls 3 and 4
	// meet the open circuit however slowly a loaded machine runs them.
	policy.CircuitBreakerDurationSeconds = 5
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
	// Circuits are per model (resilience.Pipeline.Route): the primary's for gpt-4o.
	circuit := c.Pipeline("primary").Route("gpt-4o")
	call := func(i int) error {
		before := primary.Journal().Len()
		resp, err := c.Chat(ctx, &providers.ChatRequest{
			Model:    "gpt-4o",
			Messages: []providers.Message{{Role: providers.RoleUser, Content: "Who answers?"}},
		})
		var pe *providers.Error
		if errors.As(err, &pe) {
			return fmt.Errorf("call %d: %w", i, err)
		}
		fmt.Fprintf(out, "call %d: %q from %s (model %s); primary saw %d requests, its circuit is %s\n",
			i, resp.Message.Content, resp.Provider, resp.Model, primary.Journal().Len()-before, circuit.CircuitState())
		return nil
	}

	if err := call(1); err != nil {
		return err
	}
	fmt.Fprintln(out, "-- the primary goes down: every call 503")
	if err := admin.RouteScript(ctx, mocks.RouteChat, mocks.Status(http.StatusServiceUnavailable).Always()); err != nil {
		return err
	}
	for i := 2; i <= 4; i++ {
		if err := call(i); err != nil {
			return err
		}
	}
	fmt.Fprintln(out, "-- the primary comes back")
	if err := admin.ResetRoute(ctx, mocks.RouteChat); err != nil {
		return err
	}
	// The circuit stays open for its break (5 s here), then lets one probe through.
	for circuit.CircuitState() == resilience.CircuitOpen {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return call(5)
}
