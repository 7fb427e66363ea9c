package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const sentinelKey = "sk-SENTINEL-client-77aa"

// policy is a fast policy for tests: small delays, no jitter, no budget.
func policy() resilience.Options {
	o := resilience.DefaultOptions()
	o.RetryBaseDelaySeconds = 0.001
	o.RetryUseJitter = false
	o.RetryBudgetPercent = 0
	o.TimeoutSeconds = 5
	o.StreamIdleTimeoutSeconds = 5
	return o
}

// openAIProvider adds an OpenAI-protocol provider named name that talks to s.
func openAIProvider(name string, s *mocks.Server, o resilience.Options) client.Option {
	return client.WithProvider(name, o, func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{Name: name, BaseURL: s.OpenAIBaseURL(), APIKey: sentinelKey, HTTPClient: hc, Model: "gpt-4o-mini"})
	})
}

func newClient(t *testing.T, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func hello() *providers.ChatRequest {
	return &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: "hello there"}}}
}

func TestChat_SurvivesFailuresThroughThePipeline(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("hi!"), mocks.WithScript(mocks.Status(503), mocks.RateLimited(20*time.Millisecond), mocks.OK()))
	defer s.Close()
	c := newClient(t, openAIProvider("openai", s, policy()))
	resp, err := c.Chat(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Provider != "openai" || resp.Message.Content != "hi!" || resp.FinishReason != providers.FinishStop || resp.Usage.OutputTokens == 0 {
		t.Fatalf("response %+v", resp)
	}
	if s.Journal().Len() != 3 {
		t.Fatalf("%d requests, want 3", s.Journal().Len())
	}
}

func TestChat_ErrorKinds(t *testing.T) {
	for _, tc := range []struct {
		name   string
		step   mocks.Step
		opts   func(*resilience.Options)
		kind   providers.ErrorKind
		status int
	}{
		{"bad request", mocks.Error(400, "invalid_request_error", "bad field"), nil, providers.KindBadRequest, 400},
		{"auth", mocks.Status(401), nil, providers.KindAuth, 401},
		{"rate limited, hint above cap", mocks.RateLimited(time.Hour), nil, providers.KindRateLimited, 429},
		{"quota", mocks.QuotaExceeded(), nil, providers.KindQuotaExhausted, 429},
		{"overloaded", mocks.Overloaded().Always(), nil, providers.KindOverloaded, 529},
		{"unavailable", mocks.Error(502, "server_error", "bad gateway").Always(), nil, providers.KindUnavailable, 502},
		{"context too long", mocks.Step{Status: 400, ErrorType: "invalid_request_error", Code: "context_length_exceeded", Message: "This model's maximum context length is 128000 tokens."}, nil, providers.KindContextTooLong, 400},
		{"content filter", mocks.Step{Status: 400, ErrorType: "invalid_request_error", Code: "content_filter", Message: "filtered"}, nil, providers.KindContentFiltered, 400},
		{"timeout", mocks.Stall(), func(o *resilience.Options) { o.TimeoutSeconds = 0.1 }, providers.KindTimeout, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mocks.NewServer(mocks.WithScript(tc.step))
			defer s.Close()
			o := policy()
			o.RetryCount = 1
			if tc.opts != nil {
				tc.opts(&o)
			}
			c := newClient(t, openAIProvider("openai", s, o))
			_, err := c.Chat(context.Background(), hello())
			var pe *providers.Error
			if !errors.As(err, &pe) {
				t.Fatalf("got %T %v, want *providers.Error", err, err)
			}
			if pe.Kind != tc.kind || pe.StatusCode != tc.status || pe.Provider != "openai" {
				t.Fatalf("got kind %s status %d provider %q (%v), want %s %d", pe.Kind, pe.StatusCode, pe.Provider, err, tc.kind, tc.status)
			}
			if tc.name == "rate limited, hint above cap" && pe.RetryAfter != time.Hour {
				t.Fatalf("RetryAfter %v, want the server's 1h hint", pe.RetryAfter)
			}
			if tc.kind == providers.KindOverloaded && pe.Attempts != 2 {
				t.Fatalf("Attempts %d, want 2", pe.Attempts)
			}
			if strings.Contains(err.Error(), sentinelKey) || strings.Contains(fmt.Sprintf("%+v", pe), sentinelKey) {
				t.Fatal("the API key leaked into the error")
			}
		})
	}
}

func TestChat_CircuitOpenAndBulkheadFullAreTyped(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	c := newClient(t, openAIProvider("openai", s, policy()))
	c.Pipeline("openai").Isolate()
	_, err := c.Chat(context.Background(), hello())
	if providers.KindOf(err) != providers.KindCircuitOpen || !errors.Is(err, resilience.ErrCircuitOpen) {
		t.Fatalf("got %v", err)
	}
	c.Pipeline("openai").Reset()

	o := policy()
	o.BulkheadMaxConcurrency = 1
	o.BulkheadMaxQueue = 0
	s2 := mocks.NewServer(mocks.WithScript(mocks.Stall()))
	defer s2.Close()
	c2 := newClient(t, openAIProvider("openai", s2, o))
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() { _, err := c2.Chat(ctx, hello()); first <- err }() // takes the only slot and stalls
	if err := s2.Journal().Wait(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	_, err = c2.Chat(context.Background(), hello())
	cancel()
	if providers.KindOf(<-first) != providers.KindCanceled {
		t.Fatal("the stalled call was not reported as canceled")
	}
	if providers.KindOf(err) != providers.KindBulkheadFull || !errors.Is(err, resilience.ErrBulkheadRejected) {
		t.Fatalf("got %v", err)
	}
}

func TestChat_FallsBackWhenPrimaryIsDownAndMapsTheModel(t *testing.T) {
	primary := mocks.NewServer(mocks.WithScript(mocks.Status(503).Always()))
	defer primary.Close()
	secondary := mocks.NewServer(mocks.WithReply("from the secondary"))
	defer secondary.Close()
	o := policy()
	o.RetryCount = 1
	c := newClient(t,
		openAIProvider("primary", primary, o),
		openAIProvider("secondary", secondary, policy()),
		client.WithModelMap("secondary", map[string]string{"gpt-4o": "llama-3.3-70b"}),
		client.WithFallback("primary", "secondary"),
	)
	req := hello()
	req.Model = "gpt-4o"
	resp, err := c.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Provider != "secondary" || resp.Message.Content != "from the secondary" {
		t.Fatalf("response %+v", resp)
	}
	last, _ := secondary.Journal().Last()
	if !strings.Contains(string(last.Body), `"model":"llama-3.3-70b"`) {
		t.Fatalf("secondary got %s, want the mapped model", last.Body)
	}
	if primary.Journal().Len() != 2 {
		t.Fatalf("primary saw %d attempts, want 2", primary.Journal().Len())
	}
}

func TestChat_FallsBackPastAnOpenCircuitWithoutTouchingIt(t *testing.T) {
	primary := mocks.NewServer()
	defer primary.Close()
	secondary := mocks.NewServer()
	defer secondary.Close()
	c := newClient(t, openAIProvider("primary", primary, policy()), openAIProvider("secondary", secondary, policy()),
		client.WithFallback("primary", "secondary"))
	c.Pipeline("primary").Isolate()
	resp, err := c.Chat(context.Background(), hello())
	if err != nil || resp.Provider != "secondary" || primary.Journal().Len() != 0 {
		t.Fatalf("resp %+v err %v, primary hits %d", resp, err, primary.Journal().Len())
	}
}

func TestChat_NeverFallsBackForTheRequestsOwnFault(t *testing.T) {
	primary := mocks.NewServer(mocks.WithScript(mocks.Error(400, "invalid_request_error", "bad")))
	defer primary.Close()
	secondary := mocks.NewServer()
	defer secondary.Close()
	c := newClient(t, openAIProvider("primary", primary, policy()), openAIProvider("secondary", secondary, policy()),
		client.WithFallback("primary", "secondary"))
	_, err := c.Chat(context.Background(), hello())
	if providers.KindOf(err) != providers.KindBadRequest || secondary.Journal().Len() != 0 {
		t.Fatalf("got %v with %d secondary hits, want bad_request and none", err, secondary.Journal().Len())
	}
}

func TestChat_AllProvidersDown(t *testing.T) {
	a := mocks.NewServer(mocks.WithScript(mocks.Overloaded().Always()))
	defer a.Close()
	b := mocks.NewServer(mocks.WithScript(mocks.Status(503).Always()))
	defer b.Close()
	o := policy()
	o.RetryCount = 0
	c := newClient(t, openAIProvider("a", a, o), openAIProvider("b", b, o), client.WithFallback("a", "b"))
	_, err := c.Chat(context.Background(), hello())
	var ce *client.ChainError
	var pe *providers.Error
	// Both failures may pass: the error leads with the first of them, and lists both in order.
	if !errors.As(err, &ce) || !errors.As(err, &pe) || pe.Provider != "a" || pe.Kind != providers.KindOverloaded ||
		len(ce.Failures) != 2 || ce.Failures[0].Provider != "a" || ce.Failures[1].Provider != "b" || !ce.Temporary() {
		t.Fatalf("got %v", err)
	}
}

func TestClient_CircuitsForHealthChecks(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	c := newClient(t, openAIProvider("a", s, policy()), openAIProvider("b", s, policy()))
	circuits := c.Circuits()
	if len(circuits) != 2 || circuits["a"].CircuitState() != resilience.CircuitClosed || circuits["a"] == circuits["b"] {
		t.Fatalf("circuits %v", circuits)
	}
}

func TestNew_ReportsEveryProblem(t *testing.T) {
	bad := resilience.DefaultOptions()
	bad.RetryCount = -1
	s := mocks.NewServer()
	defer s.Close()
	_, err := client.New(openAIProvider("a", s, bad), openAIProvider("a", s, policy()), client.WithFallback("a", "zzz"))
	if err == nil || !strings.Contains(err.Error(), "RetryCount") || !strings.Contains(err.Error(), `"a"`) || !strings.Contains(err.Error(), "zzz") {
		t.Fatalf("got %v", err)
	}
}
