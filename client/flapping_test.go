package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/internal/backend"
	"github.com/steadyllm/steady/mocks"
)

// A primary down for 60 s and then healthy, one request every 4 s: every request is served
// (by the fallback meanwhile), the primary is probed a few times with one attempt each, and
// it serves again within 5 s of its recovery — breaks start short and grow with the outage.
func TestFailover_APrimaryThatComesBackServesAgainWithinSeconds(t *testing.T) {
	clock := backend.NewManualClock()
	const down, outage = 10 * time.Second, 60 * time.Second
	primary := mocks.NewServer(mocks.WithClock(clock.Now), mocks.WithReply("primary"),
		mocks.WithOutage(mocks.Outage{Start: down, Duration: outage, Step: mocks.Status(503)}))
	defer primary.Close()
	secondary := mocks.NewServer(mocks.WithReply("secondary"))
	defer secondary.Close()
	o := policy()
	o.RetryCount = 0
	o.CircuitBreakerThreshold = 2
	c := newClient(t, client.WithClock(clock), openAIProvider("primary", primary, o), openAIProvider("secondary", secondary, o),
		client.WithFallback("primary", "secondary"))
	back := time.Duration(-1)
	duringOutage := 0
	for at := time.Duration(0); at <= 100*time.Second; at += 4 * time.Second {
		resp, err := c.Chat(context.Background(), hello())
		if err != nil {
			t.Fatalf("at %s: %v", at, err)
		}
		if at >= down+outage && back < 0 && resp.Provider == "primary" {
			back = at - (down + outage)
		}
		clock.Advance(4 * time.Second)
		_ = duringOutage
	}
	if back < 0 || back > 5*time.Second {
		t.Fatalf("the primary served again %s after it recovered, want within 5s", back)
	}
	t.Logf("the primary served again %s after it recovered; it saw %d requests in all", back, primary.Journal().Len())
}
