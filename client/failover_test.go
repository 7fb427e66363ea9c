package client_test

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

// A 429 whose hint is longer than the fail-over threshold sends the call to the next provider
// at once when it can serve, and later calls skip the pausing provider without sending to it;
// when no other provider can serve, the call waits the hint out.
func TestFailover_ALongHintFailsOverAndWaitsOnlyWhenNothingElseCan(t *testing.T) {
	a := mocks.NewServer(mocks.WithScript(mocks.RateLimited(400*time.Millisecond), mocks.OK()))
	defer a.Close()
	b := mocks.NewServer(mocks.WithReply("from b"))
	defer b.Close()
	tel := &fakeTelemetry{}
	c := newClient(t, openAIProvider("a", a, policy()), openAIProvider("b", b, policy()),
		client.WithFallback("a", "b"), client.WithFailoverAfter(100*time.Millisecond), client.WithTelemetry(tel))

	resp, err := c.Chat(context.Background(), hello())
	if err != nil || resp.Provider != "b" || a.Journal().Len() != 1 {
		t.Fatalf("%v %v; a saw %d", resp, err, a.Journal().Len())
	}
	_, tries, _ := tel.snapshot()
	if len(tries) != 2 || tries[0].Err == nil || tries[0].Err.GaveUp != string(resilience.GaveUpWaitTooLong) ||
		tries[0].Err.Kind != providers.KindRateLimited || tries[0].Next != "b" {
		t.Fatalf("tries %+v", tries)
	}
	if c.Pipeline("a").Route("gpt-4o-mini").CoolingFor() <= 0 { // the model's pause
		t.Fatal("a is not pausing after its 429")
	}

	// While a pauses, calls go to b without a request to a.
	resp, err = c.Chat(context.Background(), hello())
	if err != nil || resp.Provider != "b" || a.Journal().Len() != 1 {
		t.Fatalf("%v %v; a saw %d", resp, err, a.Journal().Len())
	}
	_, tries, _ = tel.snapshot()
	last := tries[len(tries)-2]
	if last.Err == nil || last.Err.Kind != providers.KindRateLimited || last.Err.Attempts != 0 || last.Err.RetryAfter <= 0 ||
		!errors.Is(last.Err, resilience.ErrCoolingDown) {
		t.Fatalf("the paused provider's try: %+v", last.Err)
	}

	// With b out, nothing else can serve: the call waits for a's pause and a answers.
	c.Pipeline("b").Isolate()
	resp, err = c.Chat(context.Background(), hello())
	if err != nil || resp.Provider != "a" || a.Journal().Len() != 2 {
		t.Fatalf("%v %v; a saw %d", resp, err, a.Journal().Len())
	}
}

func TestFailover_ThresholdIsValidated(t *testing.T) {
	if _, err := client.New(client.WithFailoverAfter(-time.Second)); err == nil {
		t.Fatal("a negative threshold was accepted")
	}
}
