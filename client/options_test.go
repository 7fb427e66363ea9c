package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// A named policy changes the retries of the calls that ask for it, and of no other call.
func TestCallOptions_NamedPolicy(t *testing.T) {
	s := mocks.NewServer(mocks.WithScript(mocks.Status(503).Always()))
	defer s.Close()
	o := policy()
	o.RetryCount = 1
	patient := policy()
	patient.RetryCount = 5
	c := newClient(t, openAIProvider("openai", s, o),
		client.WithPolicies(map[string]resilience.Options{"batch": patient}))

	_, err := c.Chat(context.Background(), hello(), client.WithPolicy("batch"))
	if e := asProviderError(t, err); e.Attempts != 6 || e.GaveUp != "exhausted" {
		t.Fatalf("under the batch policy: %v, want 6 attempts", err)
	}
	_, err = c.Chat(context.Background(), hello())
	if e := asProviderError(t, err); e.Attempts != 2 {
		t.Fatalf("under the provider's own policy: %v, want 2 attempts", err)
	}
	if n := s.Journal().Len(); n != 8 {
		t.Fatalf("%d requests, want 6 + 2", n)
	}

	_, err = c.Chat(context.Background(), hello(), client.WithPolicy("nightly"))
	if e := asProviderError(t, err); e.Kind != providers.KindBadRequest || !strings.Contains(e.Message, `"nightly"`) ||
		!strings.Contains(e.Message, "batch") {
		t.Fatalf("unknown policy: %v", err)
	}
	if n := s.Journal().Len(); n != 8 {
		t.Fatal("an unknown policy sent a request")
	}
}

func TestCallOptions_PoliciesAreValidated(t *testing.T) {
	bad := policy()
	bad.RetryCount = -1
	_, err := client.New(client.WithPolicies(map[string]resilience.Options{"broken": bad}))
	if err == nil || !strings.Contains(err.Error(), `policy "broken"`) || !strings.Contains(err.Error(), "RetryCount") {
		t.Fatalf("got %v, want the policy and the field named", err)
	}
}

// WithTimeout bounds one call's try of each provider, however long the provider's own limit.
func TestCallOptions_Timeout(t *testing.T) {
	s := mocks.NewServer(mocks.WithScript(mocks.Stall().Always()))
	defer s.Close()
	o := policy()
	o.TimeoutSeconds = 60
	o.RetryCount = 0
	c := newClient(t, openAIProvider("openai", s, o))
	_, err := c.Chat(context.Background(), hello(), client.WithTimeout(50*time.Millisecond))
	e := asProviderError(t, err)
	var te *resilience.TimeoutError
	if e.Kind != providers.KindTimeout || !errors.As(err, &te) || te.After != 50*time.Millisecond {
		t.Fatalf("got %v, want a timeout after 50ms", err)
	}
	st, err := c.ChatStream(context.Background(), hello(), client.WithTimeout(50*time.Millisecond))
	if err == nil {
		_ = st.Close()
		t.Fatal("a stalled stream answered")
	}
	if e := asProviderError(t, err); e.Kind != providers.KindTimeout {
		t.Fatalf("stream: %v, want a timeout", err)
	}
}

// The request ID travels on every attempt and every fallback, and comes back in the response
// and in errors.
func TestCallOptions_RequestIDOnEveryAttemptAndFallback(t *testing.T) {
	down := mocks.NewServer(mocks.WithScript(mocks.Status(503).Always()))
	defer down.Close()
	up := mocks.NewServer(mocks.WithReply("from claude"))
	defer up.Close()
	o := policy()
	o.RetryCount = 2
	c := newClient(t, openAIProvider("openai", down, o), anthropicProvider("claude", up, o),
		client.WithFallback("openai", "claude"))
	resp, err := c.Chat(context.Background(), hello(), client.WithRequestID("job-42/summary"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.ClientRequestID != "job-42/summary" || resp.Provider != "claude" {
		t.Fatalf("response %+v", resp)
	}
	all := append(down.Journal().Requests(), up.Journal().Requests()...)
	if len(all) != 4 {
		t.Fatalf("%d requests, want 3 to openai and 1 to claude", len(all))
	}
	for _, r := range all {
		if got := r.Header.Get(client.RequestIDHeader); got != "job-42/summary" {
			t.Fatalf("request %d to %s carried %q", r.Seq, r.Path, got)
		}
	}

	_, err = c.Chat(context.Background(), hello(), client.WithRequestID("job-43"), client.WithoutFallback())
	if e := asProviderError(t, err); e.ClientRequestID != "job-43" || !strings.Contains(err.Error(), "[call job-43]") {
		t.Fatalf("error %v lacks the request ID", err)
	}
	st, err := c.ChatStream(context.Background(), hello(), client.WithRequestID("job-44"), client.WithProviders("claude"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if r, _ := up.Journal().Last(); r.Header.Get(client.RequestIDHeader) != "job-44" {
		t.Fatalf("the stream's request carried %q", r.Header.Get(client.RequestIDHeader))
	}
}

// Extra body fields reach the provider they are meant for, by name or by system, and no other.
func TestCallOptions_ExtraFieldsReachOnlyTheirProvider(t *testing.T) {
	down := mocks.NewServer(mocks.WithScript(mocks.Status(503).Always()))
	defer down.Close()
	up := mocks.NewServer(mocks.WithReply("ok"))
	defer up.Close()
	o := policy()
	o.RetryCount = 1
	c := newClient(t, openAIProvider("openai", down, o), anthropicProvider("claude", up, o),
		client.WithFallback("openai", "claude"))
	_, err := c.Chat(context.Background(), hello(),
		client.WithExtraFields("claude", map[string]any{"metadata": map[string]string{"user_id": "u-7"}}),
		client.WithExtraFields(providers.SystemOpenAI, map[string]any{"service_tier": "flex", "max_tokens": 99}))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range down.Journal().Requests() {
		var body map[string]any
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		if body["service_tier"] != "flex" || body["max_tokens"] != float64(99) || body["metadata"] != nil {
			t.Fatalf("openai got %s", r.Body)
		}
		if body["model"] != "gpt-4o-mini" {
			t.Fatalf("the provider's own fields were lost: %s", r.Body)
		}
	}
	r, _ := up.Journal().Last()
	var body map[string]any
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	if md, _ := body["metadata"].(map[string]any); md["user_id"] != "u-7" || body["service_tier"] != nil {
		t.Fatalf("claude got %s", r.Body)
	}
	if down.Journal().Len() != 2 {
		t.Fatalf("the retry lost its fields? %d requests", down.Journal().Len())
	}
}

// Headers reach every request, but never replace a provider's credentials.
func TestCallOptions_HeadersNeverReplaceCredentials(t *testing.T) {
	s := mocks.NewServer(mocks.WithAPIKey(sentinelKey), mocks.WithReply("ok"))
	defer s.Close()
	c := newClient(t, openAIProvider("openai", s, policy()))
	_, err := c.Chat(context.Background(), hello(), client.WithHeader("X-Tenant", "acme"),
		client.WithHeader("authorization", "Bearer stolen"))
	if err != nil {
		t.Fatalf("the call's headers broke the provider's credentials: %v", err)
	}
	if r, _ := s.Journal().Last(); r.Header.Get("X-Tenant") != "acme" {
		t.Fatalf("headers %v", r.Header)
	}
}

// The providers of one call: a subset in another order, some skipped, or no fallback.
func TestCallOptions_ChooseProviders(t *testing.T) {
	a := mocks.NewServer(mocks.WithScript(mocks.Status(503).Always()))
	defer a.Close()
	b := mocks.NewServer(mocks.WithReply("b"))
	defer b.Close()
	o := policy()
	o.RetryCount = 0
	c := newClient(t, openAIProvider("a", a, o), openAIProvider("b", b, o), client.WithFallback("a", "b"))
	ctx := context.Background()

	if resp, err := c.Chat(ctx, hello(), client.WithProviders("b", "a")); err != nil || resp.Provider != "b" || a.Journal().Len() != 0 {
		t.Fatalf("WithProviders(b, a): %v %v, a saw %d", resp, err, a.Journal().Len())
	}
	if resp, err := c.Chat(ctx, hello(), client.WithoutProviders("a")); err != nil || resp.Provider != "b" || a.Journal().Len() != 0 {
		t.Fatalf("WithoutProviders(a): %v %v", resp, err)
	}
	_, err := c.Chat(ctx, hello(), client.WithoutFallback())
	if e := asProviderError(t, err); e.Provider != "a" || b.Journal().Len() != 2 {
		t.Fatalf("WithoutFallback: %v, b saw %d", err, b.Journal().Len())
	}
	_, err = c.Chat(ctx, hello(), client.WithProviders("c"))
	if e := asProviderError(t, err); e.Kind != providers.KindBadRequest || !strings.Contains(e.Message, `"c"`) {
		t.Fatalf("unknown provider: %v", err)
	}
	_, err = c.Embed(ctx, &providers.EmbedRequest{Inputs: []string{"x"}}, client.WithProviders("a"), client.WithoutProviders("a"))
	if e := asProviderError(t, err); e.Kind != providers.KindBadRequest {
		t.Fatalf("no provider left: %v", err)
	}
}

// The call's policy, request ID and attributes reach telemetry.
func TestCallOptions_Telemetry(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("ok"))
	defer s.Close()
	tel := &fakeTelemetry{}
	c := newClient(t, openAIProvider("openai", s, policy()), client.WithTelemetry(tel),
		client.WithPolicies(map[string]resilience.Options{"interactive": policy()}))
	_, err := c.Chat(context.Background(), hello(), client.WithPolicy("interactive"), client.WithRequestID("r1"),
		client.WithAttributes(slog.String("tenant", "acme")))
	if err != nil {
		t.Fatal(err)
	}
	starts, _, _ := tel.snapshot()
	if len(starts) != 1 || starts[0].Policy != "interactive" || starts[0].RequestID != "r1" ||
		len(starts[0].Attributes) != 1 || starts[0].Attributes[0].Key != "tenant" {
		t.Fatalf("call start %+v", starts)
	}
	tel.mu.Lock()
	defer tel.mu.Unlock()
	for _, e := range tel.events {
		if e.Policy != "interactive" {
			t.Fatalf("pipeline event %v under policy %q", e.Type, e.Policy)
		}
	}
}

func asProviderError(t *testing.T, err error) *providers.Error {
	t.Helper()
	var e *providers.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v, want a *providers.Error", err)
	}
	return e
}
