package client

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/steadyllm/steady/internal/testkit/backend"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

// A stream handed over and a deadline running out race: whichever comes first wins, whole.
// Handed over first, the deadline's timer can no longer end the stream's context; run out
// first, the handover fails, so ChatStream reports the deadline instead of returning a stream
// whose context is already ended.
func TestCallDeadline_HandoverAndExpiryDoNotBothWin(t *testing.T) {
	clock := backend.NewManualClock()
	c, err := New(WithClock(clock), WithProvider("p", resilience.DefaultOptions(), func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{Name: "p", BaseURL: "http://127.0.0.1:1/v1", APIKey: "k", HTTPClient: hc, Model: "m"})
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	_, dl := c.withDeadline(context.Background(), time.Second)
	if !dl.detach() {
		t.Fatal("a live deadline refused the handover")
	}
	dl.expire() // the timer's callback, had it already fired as Stop was called
	if dl.Err() != nil || dl.expired() {
		t.Fatalf("the deadline ended a stream that was handed over: %v", context.Cause(dl))
	}
	dl.release()

	_, dl = c.withDeadline(context.Background(), time.Second)
	clock.Advance(2 * time.Second) // the deadline runs out first (its timer runs in a goroutine)
	select {
	case <-dl.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the deadline did not run out")
	}
	if dl.detach() {
		t.Fatal("the handover of a stream whose context the deadline ended succeeded")
	}
	if !dl.expired() || dl.Err() == nil {
		t.Fatalf("expired %v, err %v", dl.expired(), dl.Err())
	}
	dl.release()
}
