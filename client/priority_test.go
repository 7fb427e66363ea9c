package client_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/deferral"
	"github.com/steadyllm/steady/internal/testkit/backend"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

func priorityClient(t *testing.T, s *mocks.Server, o resilience.Options, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(append([]client.Option{client.WithProvider("openai", o, func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{BaseURL: s.OpenAIBaseURL(), APIKey: "sk-test", HTTPClient: hc, Model: "gpt-4o-mini"})
	})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func TestWithPriority_AClassThatIsNoneIsABadRequest(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	c := priorityClient(t, s, resilience.DefaultOptions())
	for _, p := range []resilience.Priority{"urgent", ""} {
		_, err := c.Chat(context.Background(), hello(), client.WithPriority(p))
		var pe *providers.Error
		if !errors.As(err, &pe) || pe.Kind != providers.KindBadRequest {
			t.Errorf("WithPriority(%q): %v, want bad_request", p, err)
		}
	}
	if s.Journal().Len() != 0 {
		t.Fatalf("%d requests sent", s.Journal().Len())
	}
	if _, err := c.Chat(context.Background(), hello(), client.WithPriority(resilience.PriorityBatch)); err != nil {
		t.Fatal(err)
	}
}

// A batch job that finds only the reserve left of the budget is refused at once in deferred
// mode, with the time the budget will have room for it again; interactive calls still get the
// reserve.
func TestWithPriority_ShedBatchCallIsDeferredUntilTheBudgetHasRoomForIt(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	o := resilience.DefaultOptions()
	o.PaceRequestsPerMinute = 10 // batch calls leave the last 10 % (one request) to the others
	clock := backend.NewManualClock()
	c := priorityClient(t, s, o, client.WithClock(clock))
	for i := range 9 {
		if _, err := c.Chat(context.Background(), hello(), client.WithPriority(resilience.PriorityBatch), client.Deferred(1)); err != nil {
			t.Fatalf("batch call %d: %v", i, err)
		}
	}
	_, err := c.Chat(context.Background(), hello(), client.WithPriority(resilience.PriorityBatch), client.Deferred(1))
	var de *deferral.Error
	if !errors.As(err, &de) || !de.Decision.Retry || de.Decision.Kind != providers.KindRateLimited {
		t.Fatalf("the tenth batch call: %v, want a deferral", err)
	}
	// One request is left, the one kept from batch calls; the budget refills one every 6 s.
	if d := de.Decision.Delay; d < 6*time.Second-time.Millisecond || d > 6*time.Second+time.Millisecond {
		t.Fatalf("deferred for %s, want 6s: %v", d, de.Decision)
	}
	if _, err := c.Chat(context.Background(), hello(), client.WithPriority(resilience.PriorityInteractive)); err != nil {
		t.Fatalf("an interactive call: %v, want the reserve", err)
	}
	if s.Journal().Len() != 10 {
		t.Fatalf("%d requests sent, want the budget's 10", s.Journal().Len())
	}
}

// A named policy's class is the class of the calls under it; WithPriority overrides it.
func TestWithPriority_OverridesThePolicysClass(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	o := resilience.DefaultOptions()
	o.PaceRequestsPerMinute = 10
	batch := resilience.DefaultOptions()
	batch.Priority = resilience.PriorityBatch
	c := priorityClient(t, s, o, client.WithClock(backend.NewManualClock()),
		client.WithPolicies(map[string]resilience.Options{"nightly": batch}))
	for range 9 {
		if _, err := c.Chat(context.Background(), hello(), client.WithPolicy("nightly"), client.Deferred(1)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Chat(context.Background(), hello(), client.WithPolicy("nightly"), client.Deferred(1)); err == nil {
		t.Fatal("a tenth call of the batch policy took the reserve")
	}
	if _, err := c.Chat(context.Background(), hello(), client.WithPolicy("nightly"),
		client.WithPriority(resilience.PriorityDefault), client.Deferred(1)); err != nil {
		t.Fatalf("the same policy in the default class: %v", err)
	}
}

func TestDeployments_ShowTheBulkheadsLimit(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	o := resilience.DefaultOptions()
	o.AdaptiveConcurrency, o.BulkheadMaxConcurrency = true, 7
	c := priorityClient(t, s, o)
	info := c.Deployments("openai")
	if len(info) != 1 || info[0].Concurrency.Limit != 7 || !info[0].Concurrency.Adaptive {
		t.Fatalf("%+v", info)
	}
}
