package client_test

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/resilience"
)

// DeploymentInfo counts the calls that failed on a deployment and went on to another route,
// and the hedges each deployment was sent and won; a call served at its first try counts
// nothing.
func TestDeployments_CountFailoversAndHedges(t *testing.T) {
	down := mocks.NewServer(mocks.WithScript(mocks.Status(http.StatusServiceUnavailable).Always()))
	defer down.Close()
	up := mocks.NewServer(mocks.WithReply("up"))
	defer up.Close()
	o := policy()
	o.RetryCount = 0
	o.CircuitBreakerThreshold = 100
	c := newClient(t, client.WithDeployments("p", o, client.StrategyPriority, deploymentsOn([]*mocks.Server{down, up})...))
	for range 3 {
		if _, err := c.Chat(context.Background(), hello()); err != nil {
			t.Fatal(err)
		}
	}
	infos := c.Deployments("p")
	if infos[0].Failovers != 3 || infos[1].Failovers != 0 || infos[0].Hedges+infos[1].Hedges != 0 {
		t.Fatalf("failovers %d and %d, hedges %d and %d, want 3, 0 and none", infos[0].Failovers, infos[1].Failovers,
			infos[0].Hedges, infos[1].Hedges)
	}

	// A chain whose last provider fails has nowhere to go: no failover.
	last := newClient(t, openAIProvider("only", down, o))
	if _, err := last.Chat(context.Background(), hello()); err == nil {
		t.Fatal("a failing provider served")
	}
	if n := last.Deployments("only")[0].Failovers; n != 0 {
		t.Fatalf("%d failovers from the only provider", n)
	}

	slow := mocks.NewServer(mocks.WithScript(mocks.Reply("slow").WithDelay(time.Minute).Always()))
	defer slow.Close()
	fast := mocks.NewServer(mocks.WithReply("fast"))
	defer fast.Close()
	h := newClient(t, openAIProvider("primary", slow, hedgePolicy(20*time.Millisecond)), openAIProvider("secondary", fast, policy()),
		client.WithFallback("primary", "secondary"))
	for range 2 {
		if _, err := h.Chat(context.Background(), hello()); err != nil {
			t.Fatal(err)
		}
	}
	p, s := h.Deployments("primary")[0], h.Deployments("secondary")[0]
	if s.Hedges != 2 || s.HedgesWon != 2 || p.Hedges != 0 || p.Failovers != 0 {
		t.Fatalf("secondary: %d hedges, %d won; primary: %d hedges, %d failovers", s.Hedges, s.HedgesWon, p.Hedges, p.Failovers)
	}
	waitFor(t, "the losers' requests to end at the server", func() bool { return slow.Journal().InFlight() == 0 })
}

// Watch hears every deployment's events from the moment it watches until it stops, and
// Providers lists the providers in the order they were added.
func TestWatch_HearsEveryDeploymentUntilStopped(t *testing.T) {
	down := mocks.NewServer(mocks.WithScript(mocks.Status(http.StatusServiceUnavailable).Always()))
	defer down.Close()
	up := mocks.NewServer()
	defer up.Close()
	o := policy()
	o.RetryCount = 0
	c := newClient(t, openAIProvider("zeta", up, o),
		client.WithDeployments("alpha", o, client.StrategyPriority, deploymentsOn([]*mocks.Server{down, up})...),
		client.WithFallback("alpha", "zeta"))
	if got := c.Providers(); !slices.Equal(got, []string{"zeta", "alpha"}) {
		t.Fatalf("providers %v", got)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	stop := c.Watch(func(e resilience.Event) {
		mu.Lock()
		seen[e.Pipeline]++
		mu.Unlock()
	})
	if _, err := c.Chat(context.Background(), hello()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if seen["alpha/d0"] == 0 || seen["alpha/d1"] == 0 {
		t.Fatalf("events heard: %v", seen)
	}
	mu.Unlock()
	stop()
	stop()
	mu.Lock()
	clear(seen)
	mu.Unlock()
	if _, err := c.Chat(context.Background(), hello()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 0 {
		t.Fatalf("heard after stop: %v", seen)
	}
}
