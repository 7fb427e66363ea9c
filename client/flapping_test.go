package client_test

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/internal/testkit/backend"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// The flapping primary's outage: from 10 s after its start, for 60 s.
const down, outage = 10 * time.Second, 60 * time.Second

// flapping returns a manual clock, a primary that is down for the outage on that clock, a
// secondary that serves, and a policy without retries whose circuit opens after two failures.
func flapping(t *testing.T) (*backend.ManualClock, *mocks.Server, *mocks.Server, resilience.Options) {
	clock := backend.NewManualClock()
	primary := mocks.NewServer(mocks.WithClock(clock.Now), mocks.WithReply("primary"),
		mocks.WithOutage(mocks.Outage{Start: down, Duration: outage, Step: mocks.Status(503)}))
	t.Cleanup(primary.Close)
	secondary := mocks.NewServer(mocks.WithReply("secondary"))
	t.Cleanup(secondary.Close)
	o := policy()
	o.RetryCount = 0
	o.CircuitBreakerThreshold = 2
	return clock, primary, secondary, o
}

// A primary down for 60 s and then healthy, one request every 4 s: every request is served
// (by the fallback meanwhile), the primary is probed a few times with one attempt each, and
// it serves again within 5 s of its recovery — breaks start short and grow with the outage.
func TestFailover_APrimaryThatComesBackServesAgainWithinSeconds(t *testing.T) {
	clock, primary, secondary, o := flapping(t)
	c := newClient(t, client.WithClock(clock), openAIProvider("primary", primary, o), openAIProvider("secondary", secondary, o),
		client.WithFallback("primary", "secondary"))
	back := time.Duration(-1)
	for at := time.Duration(0); at <= 100*time.Second; at += 4 * time.Second {
		resp, err := c.Chat(context.Background(), hello())
		if err != nil {
			t.Fatalf("at %s: %v", at, err)
		}
		if at >= down+outage && back < 0 && resp.Provider == "primary" {
			back = at - (down + outage)
		}
		clock.Advance(4 * time.Second)
	}
	if back < 0 || back > 5*time.Second {
		t.Fatalf("the primary served again %s after it recovered, want within 5s", back)
	}
	t.Logf("the primary served again %s after it recovered; it saw %d requests in all", back, primary.Journal().Len())
}

// The same flapping primary with an active probe (a one-token chat, ChatProbe): once the
// model's circuit opens, no caller's call reaches the primary while it is down — each break
// ends with the probe, not with a user's request — and the probe brings the primary back
// within 5 s of its recovery.
func TestFailover_AnActiveProbeSparesCallersAPrimaryThatIsDown(t *testing.T) {
	clock, primary, secondary, o := flapping(t)
	var probes, finished atomic.Int32
	probe := func(ctx context.Context, p providers.Provider, model string) error {
		probes.Add(1)
		if model != "gpt-4o-mini" {
			t.Errorf("probed model %q, want the open route's", model)
		}
		return client.ChatProbe(ctx, p, model)
	}
	c := newClient(t, client.WithClock(clock), openAIProvider("primary", primary, o), openAIProvider("secondary", secondary, o),
		client.WithFallback("primary", "secondary"), client.WithActiveProbe("primary", probe, 0),
		client.WithObserver(func(e resilience.Event) {
			if e.Type == resilience.EventProbeFinished {
				finished.Add(1)
			}
		}))
	defer c.Close()
	back := time.Duration(-1)
	for at := time.Duration(0); at <= 100*time.Second; at += 4 * time.Second {
		resp, err := c.Chat(context.Background(), hello())
		if err != nil {
			t.Fatalf("at %s: %v", at, err)
		}
		if at >= down+outage && back < 0 && resp.Provider == "primary" {
			back = at - (down + outage)
		}
		// A break that ends within the next 4 s is probed then: wait for that probe, so that
		// the next call does not race it.
		route := c.Pipeline("primary").Route("gpt-4o-mini")
		info := route.CircuitInfo()
		due := info.State == resilience.CircuitOpen && info.NextProbeIn <= 4*time.Second
		n := finished.Load()
		clock.Advance(4 * time.Second)
		if due {
			deadline := time.Now().Add(10 * time.Second)
			for finished.Load() == n && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if finished.Load() == n {
				t.Fatalf("at %s: the break ended and no probe finished", at)
			}
		}
	}
	if back < 0 || back > 5*time.Second {
		t.Fatalf("the primary served again %s after it recovered, want within 5s", back)
	}
	callers, failed := 0, 0
	for _, r := range primary.Journal().Requests() {
		if bytes.Contains(r.Body, []byte("hello there")) {
			callers++
			if r.Step != "ok" {
				failed++
			}
		}
	}
	if failed != int(o.CircuitBreakerThreshold) || probes.Load() == 0 {
		t.Fatalf("%d callers' requests failed on the primary (want the %d that opened the circuit), %d probes",
			failed, o.CircuitBreakerThreshold, probes.Load())
	}
	t.Logf("the primary served again %s after it recovered; %d probes, %d callers' requests", back, probes.Load(), callers)
}
