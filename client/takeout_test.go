package client_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/health"
	"github.com/steadyllm/steady/internal/testkit/backend"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/resilience"
)

// A deployment whose key is refused is taken out for a break that doubles while the key stays
// refused, then comes back by itself once it is fixed: no restart, no Reset. After a success
// the next take-out starts from the first break again.
func TestDeployments_ARefusedKeyComesBackAfterAGrowingBreak(t *testing.T) {
	refused := mocks.NewServer(mocks.WithScript(mocks.Status(401).Times(3), mocks.OK(), mocks.Status(401), mocks.OK().Always()))
	defer refused.Close()
	good := mocks.NewServer()
	defer good.Close()
	clock := backend.NewManualClock()
	c := newClient(t, client.WithClock(clock), client.WithTakeOutBreaks(30*time.Second, 100*time.Second),
		client.WithDeployments("p", policy(), client.StrategyPriority, deploymentsOn([]*mocks.Server{refused, good})...))
	d0 := c.Circuits()["p/d0"]
	checker := health.NewChecker()
	checker.AddSet(c)
	call := func() {
		t.Helper()
		if _, err := c.Chat(context.Background(), hello()); err != nil {
			t.Fatal(err)
		}
	}
	// Each refusal takes the deployment out for a longer break: 30 s, 60 s, then the cap.
	for i, want := range []time.Duration{30 * time.Second, 60 * time.Second, 100 * time.Second} {
		call()
		info := d0.CircuitInfo()
		if info.State != resilience.CircuitOpen || info.NextProbeIn != want {
			t.Fatalf("refusal %d: d0 %+v, want open for %s", i+1, info, want)
		}
		if r := checker.Report(); r.Status != health.StatusWarn || len(r.Groups) != 1 || r.Groups[0].Serving != 1 {
			t.Fatalf("refusal %d: health %+v, want the provider degraded (warn)", i+1, r)
		}
		call() // while it is out, the calls go to the other deployment
		if n := refused.Journal().Len(); n != i+1 {
			t.Fatalf("refusal %d: the deployment taken out saw %d requests", i+1, n)
		}
		clock.Advance(want)
	}
	// The key was fixed meanwhile: the probe after the break succeeds and the deployment is back.
	call()
	if st := d0.CircuitState(); st != resilience.CircuitClosed || refused.Journal().Len() != 4 {
		t.Fatalf("after the fix: d0 %v, %d requests", st, refused.Journal().Len())
	}
	// Refused once more: the break starts again from the first.
	call()
	if info := d0.CircuitInfo(); info.State != resilience.CircuitOpen || info.NextProbeIn != 30*time.Second {
		t.Fatalf("a new refusal after a success: d0 %+v, want open for 30s", info)
	}
	d0.Reset() // an operator's Reset still brings it back at once
	call()
	if st := d0.CircuitState(); st != resilience.CircuitClosed || refused.Journal().Len() != 6 {
		t.Fatalf("after Reset: d0 %v, %d requests", st, refused.Journal().Len())
	}
}

func TestWithTakeOutBreaks_IsValidated(t *testing.T) {
	for _, b := range [][2]time.Duration{{0, time.Hour}, {time.Minute, time.Second}, {-time.Second, time.Second}} {
		if _, err := client.New(client.WithTakeOutBreaks(b[0], b[1]), openAIProvider("p", nil, policy())); err == nil {
			t.Errorf("WithTakeOutBreaks(%s, %s) accepted", b[0], b[1])
		}
	}
}

// The calls in flight when a key is refused are one take-out, not one each: eight concurrent
// refusals take the deployment out for the first break, not for 2^7 of them.
func TestDeployments_ConcurrentRefusalsAreOneTakeOut(t *testing.T) {
	st := mocks.Status(401)
	st.Delay = 100 * time.Millisecond // all eight reach the server before the first answer
	st.Forever = true
	refused := mocks.NewServer(mocks.WithScript(st))
	defer refused.Close()
	good := mocks.NewServer()
	defer good.Close()
	clock := backend.NewManualClock()
	c := newClient(t, client.WithClock(clock),
		client.WithDeployments("p", policy(), client.StrategyPriority, deploymentsOn([]*mocks.Server{refused, good})...))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Chat(context.Background(), hello()); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if info := c.Circuits()["p/d0"].CircuitInfo(); info.State != resilience.CircuitOpen || info.NextProbeIn != client.DefaultTakeOutBreak {
		t.Fatalf("after one episode of concurrent refusals: %+v, want open for the first break", info)
	}
}
