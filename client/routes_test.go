package client_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

// ask sends hello to model on c.
func ask(c *client.Client, model string, opts ...client.CallOption) (*providers.ChatResponse, error) {
	req := hello()
	req.Model = model
	return c.Chat(context.Background(), req, opts...)
}

// Model A down, model B healthy on the same provider: every call to B is served at once — no
// circuit_open, no wait for A's pause — while A's circuit opens.
func TestRoutes_ModelADownModelBServedAtOnce(t *testing.T) {
	s := mocks.NewServer(mocks.WithModelScript("model-a", mocks.Status(503).Always()))
	defer s.Close()
	o := policy()
	o.RetryCount = 1
	o.CircuitBreakerThreshold = 2
	c := newClient(t, openAIProvider("openai", s, o))
	for i := range 10 {
		if _, err := ask(c, "model-a"); err == nil {
			t.Fatal("model a answered")
		}
		resp, err := ask(c, "model-b")
		if err != nil || resp.Model != "model-b" {
			t.Fatalf("call %d to model b: %v", i, err)
		}
	}
	if st := c.Pipeline("openai").Route("model-a").CircuitState(); st != resilience.CircuitOpen {
		t.Fatalf("model a's circuit is %v", st)
	}
	if st := c.Pipeline("openai").Route("model-b").CircuitState(); st != resilience.CircuitClosed {
		t.Fatalf("model b's circuit is %v", st)
	}
	infos := c.Deployments("openai")
	if len(infos) != 1 || len(infos[0].Routes) != 2 || infos[0].Routes[0].Model != "model-a" ||
		infos[0].Routes[0].Circuit.State != resilience.CircuitOpen || infos[0].Circuit.State != resilience.CircuitClosed {
		t.Fatalf("deployments %+v", infos)
	}
}

// A 429 without a hint on model A pauses model A only: the next call to B neither waits nor
// is refused, even when it may not wait at all.
func TestRoutes_APauseOnModelADoesNotHoldModelB(t *testing.T) {
	s := mocks.NewServer(mocks.WithModelScript("model-a", mocks.RateLimited(0).Always()))
	defer s.Close()
	o := policy()
	o.RetryCount = 0
	o.RetryBaseDelaySeconds, o.RetryMaxDelaySeconds = 5, 30
	c := newClient(t, openAIProvider("openai", s, o))
	if _, err := ask(c, "model-a"); providers.KindOf(err) != providers.KindRateLimited {
		t.Fatalf("model a: %v", err)
	}
	if c.Pipeline("openai").Route("model-a").CoolingFor() <= 0 {
		t.Fatal("model a is not pausing")
	}
	call := client.WithTimeout(time.Second) // a wait for model a's pause would outlast it
	if _, err := ask(c, "model-b", call); err != nil {
		t.Fatalf("model b: %v", err)
	}
	if c.Pipeline("openai").Route("model-b").CoolingFor() != 0 {
		t.Fatal("model b pauses for model a's 429")
	}
}

// A network failure reaching the host counts for every model of the deployment at once.
func TestRoutes_AnUnreachableHostStopsEveryModel(t *testing.T) {
	s := mocks.NewServer()
	url := s.OpenAIBaseURL()
	s.Close() // nothing listens any more: connections are refused
	o := policy()
	o.RetryCount = 0
	o.CircuitBreakerThreshold = 2
	c := newClient(t, client.WithProvider("openai", o, func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{Name: "openai", BaseURL: url, APIKey: sentinelKey, HTTPClient: hc})
	}))
	for range 2 {
		_, _ = ask(c, "model-a")
	}
	_, err := ask(c, "model-b")
	var coe *resilience.CircuitOpenError
	if !errors.As(err, &coe) || providers.KindOf(err) != providers.KindCircuitOpen {
		t.Fatalf("model b after the host refused model a twice: %v, want the deployment's circuit open", err)
	}
}

// A prompt too long for the primary's model goes to the route that declares a larger context
// window, the primary tried once; a call no route of the chain can hold is refused before
// anything is sent.
func TestContextWindow_FallsBackToALargerWindowOrIsRefusedBeforeSending(t *testing.T) {
	primary := mocks.NewServer(mocks.WithContextWindows(map[string]int{"gpt-4o-mini": 100}))
	defer primary.Close()
	middle := mocks.NewServer() // declares no window: skipped after a prompt too long
	defer middle.Close()
	large := mocks.NewServer(mocks.WithReply("the large window answers"))
	defer large.Close()
	c := newClient(t, openAIProvider("primary", primary, policy()), openAIProvider("middle", middle, policy()),
		openAIProvider("large", large, policy()),
		client.WithContextWindow("large", 200_000, nil),
		client.WithFallback("primary", "middle", "large"))
	long := &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: strings.Repeat("word ", 400)}}}
	resp, err := c.Chat(context.Background(), long)
	if err != nil || resp.Provider != "large" {
		t.Fatalf("%v %v", resp, err)
	}
	if primary.Journal().Len() != 1 || middle.Journal().Len() != 0 {
		t.Fatalf("primary asked %d times, middle %d", primary.Journal().Len(), middle.Journal().Len())
	}

	small := newClient(t, openAIProvider("primary", primary, policy()), openAIProvider("large", large, policy()),
		client.WithContextWindow("primary", 100, nil), client.WithContextWindow("large", 200, nil),
		client.WithFallback("primary", "large"))
	before := primary.Journal().Len() + large.Journal().Len()
	_, err = small.Chat(context.Background(), long)
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Kind != providers.KindContextTooLong || pe.Overflow == nil || pe.Overflow.Window != 200 {
		t.Fatalf("a call no route can hold: %v", err)
	}
	if n := primary.Journal().Len() + large.Journal().Len(); n != before {
		t.Fatal("a call no route can hold was sent")
	}
}
