package client_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/internal/backend"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// The models beyond resilience.MaxRoutes share the overflow route "*": its active probe asks a
// model the deployment serves (its own), never a model named "*", which no provider knows and
// which would keep the shared circuit open for good.
func TestActiveProbe_TheOverflowRouteProbesARealModel(t *testing.T) {
	s := mocks.NewServer(mocks.WithModelScript("late", mocks.Status(503)))
	defer s.Close()
	o := policy()
	o.RetryCount, o.CircuitBreakerThreshold = 0, 1
	clock := backend.NewManualClock()
	asked := make(chan string, 4)
	probe := func(ctx context.Context, p providers.Provider, model string) error {
		asked <- model
		return client.ChatProbe(ctx, p, model)
	}
	c := newClient(t, client.WithClock(clock), openAIProvider("p", s, o), client.WithActiveProbe("p", probe, time.Second))
	defer c.Close()
	for i := range resilience.MaxRoutes {
		req := hello()
		req.Model = fmt.Sprintf("m%d", i)
		if _, err := c.Chat(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	req := hello()
	req.Model = "late" // beyond MaxRoutes: the overflow route
	if _, err := c.Chat(context.Background(), req); err == nil {
		t.Fatal("the 503 succeeded")
	}
	route := c.Pipeline("p").Routes()["*"]
	if route == nil || route.CircuitState() != resilience.CircuitOpen {
		t.Fatalf("overflow route %v", route)
	}
	clock.Advance(route.CircuitInfo().NextProbeIn)
	select {
	case m := <-asked:
		if m != "gpt-4o-mini" {
			t.Fatalf("the overflow route's probe asked model %q, want the deployment's gpt-4o-mini", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no probe")
	}
	waitFor(t, "the circuit to close", func() bool { return route.CircuitState() == resilience.CircuitClosed })
}
