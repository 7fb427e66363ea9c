package client_test

import (
	"context"
	"io"
	"net/http"
	"reflect"
	"sync"
	"testing"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
	"github.com/steadyllm/steady/resilience"
)

type spanKey struct{}

// fakeTelemetry records what the client reports. Its StartCall tags the context, so the test
// can check that pipeline events carry the call's context.
type fakeTelemetry struct {
	mu      sync.Mutex
	starts  []client.CallStart
	tries   []client.TryResult
	ends    []error
	events  []resilience.Event
	tagged  int // pipeline events that carried the call's tag
	untaged int
}

func (f *fakeTelemetry) StartCall(ctx context.Context, c client.CallStart) (context.Context, client.CallTracker) {
	f.mu.Lock()
	f.starts = append(f.starts, c)
	f.mu.Unlock()
	return context.WithValue(ctx, spanKey{}, "span"), fakeTracker{f}
}

func (f *fakeTelemetry) PipelineEvent(e resilience.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, e)
	if e.Context != nil && e.Context.Value(spanKey{}) == "span" {
		f.tagged++
	} else {
		f.untaged++
	}
}

type fakeTracker struct{ f *fakeTelemetry }

func (t fakeTracker) TryDone(r client.TryResult) {
	t.f.mu.Lock()
	t.f.tries = append(t.f.tries, r)
	t.f.mu.Unlock()
}

func (t fakeTracker) End(err error) {
	t.f.mu.Lock()
	t.f.ends = append(t.f.ends, err)
	t.f.mu.Unlock()
}

func (f *fakeTelemetry) snapshot() (starts []client.CallStart, tries []client.TryResult, ends []error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append(starts, f.starts...), append(tries, f.tries...), append(ends, f.ends...)
}

func TestTelemetry_ChatReportsStartTryAndEnd(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("hi!"), mocks.WithScript(mocks.Status(503), mocks.OK()))
	defer s.Close()
	tel := &fakeTelemetry{}
	c := newClient(t, openAIProvider("openai", s, policy()), client.WithTelemetry(tel))
	req := hello()
	req.MaxTokens = 42
	resp, err := c.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	starts, tries, ends := tel.snapshot()
	want := client.CallStart{Operation: client.OperationChat, Provider: "openai", System: providers.SystemOpenAI,
		Model: "gpt-4o-mini", MaxTokens: 42}
	if len(starts) != 1 || !reflect.DeepEqual(starts[0], want) {
		t.Errorf("starts %+v, want %+v", starts, want)
	}
	if len(tries) != 1 {
		t.Fatalf("tries %+v", tries)
	}
	r := tries[0]
	if r.Provider != "openai" || r.System != providers.SystemOpenAI || r.Model != "gpt-4o-mini" || r.Err != nil ||
		r.Attempts != 2 || r.ResponseModel != resp.Model || r.ResponseID != resp.ID || r.Usage != resp.Usage ||
		r.FinishReason != providers.FinishStop || r.Duration <= 0 || r.Next != "" {
		t.Errorf("try %+v", r)
	}
	if len(ends) != 1 || ends[0] != nil {
		t.Errorf("ends %v", ends)
	}
	if tel.tagged == 0 || tel.untaged != 0 {
		t.Errorf("%d pipeline events with the call's context, %d without", tel.tagged, tel.untaged)
	}
}

func TestTelemetry_FallbackReportsEachProvider(t *testing.T) {
	down := mocks.NewServer(mocks.WithScript(mocks.Overloaded().Always()))
	defer down.Close()
	up := mocks.NewServer(mocks.WithReply("backup here"))
	defer up.Close()
	o := policy()
	o.RetryCount = 0
	tel := &fakeTelemetry{}
	c := newClient(t, openAIProvider("primary", down, o),
		client.WithProvider("backup", o, func(hc *http.Client) (providers.Provider, error) {
			return anthropic.New(anthropic.Config{Name: "backup", BaseURL: up.AnthropicBaseURL(), APIKey: sentinelKey, HTTPClient: hc})
		}),
		client.WithDefaultModel("backup", "claude-haiku-4-5"),
		client.WithFallback("primary", "backup"), client.WithTelemetry(tel))
	if _, err := c.Chat(context.Background(), hello()); err != nil {
		t.Fatal(err)
	}
	_, tries, ends := tel.snapshot()
	if len(tries) != 2 || len(ends) != 1 || ends[0] != nil {
		t.Fatalf("tries %+v, ends %v", tries, ends)
	}
	if tries[0].Provider != "primary" || tries[0].Err == nil || tries[0].Err.Kind != providers.KindOverloaded ||
		tries[0].Next != "backup" || tries[0].Attempts != 1 {
		t.Errorf("first try %+v", tries[0])
	}
	if tries[1].Provider != "backup" || tries[1].System != providers.SystemAnthropic || tries[1].Model != "claude-haiku-4-5" ||
		tries[1].Err != nil || tries[1].Next != "" {
		t.Errorf("second try %+v", tries[1])
	}
}

func TestTelemetry_FailureEndsWithTheReturnedError(t *testing.T) {
	s := mocks.NewServer(mocks.WithScript(mocks.Error(400, "invalid_request_error", "bad field")))
	defer s.Close()
	tel := &fakeTelemetry{}
	c := newClient(t, openAIProvider("openai", s, policy()), openAIProvider("other", s, policy()),
		client.WithFallback("openai", "other"), client.WithTelemetry(tel))
	_, err := c.Chat(context.Background(), hello())
	if err == nil {
		t.Fatal("no error")
	}
	_, tries, ends := tel.snapshot()
	if len(tries) != 1 || tries[0].Next != "" || tries[0].Err.Kind != providers.KindBadRequest {
		t.Errorf("tries %+v: a bad request must not fall back", tries)
	}
	if len(ends) != 1 || ends[0] != err {
		t.Errorf("ends %v, want the returned %v", ends, err)
	}
}

func TestTelemetry_EmbedReportsEmbeddings(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	tel := &fakeTelemetry{}
	c := newClient(t, openAIProvider("openai", s, policy()), client.WithTelemetry(tel))
	if _, err := c.Embed(context.Background(), &providers.EmbedRequest{Model: "text-embedding-3-small", Inputs: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	starts, tries, ends := tel.snapshot()
	if len(starts) != 1 || starts[0].Operation != client.OperationEmbeddings || starts[0].Model != "text-embedding-3-small" {
		t.Errorf("starts %+v", starts)
	}
	if len(tries) != 1 || tries[0].ResponseModel != "text-embedding-3-small" || len(ends) != 1 {
		t.Errorf("tries %+v, ends %v", tries, ends)
	}
}

func TestTelemetry_StreamEndsWhenTheStreamEnds(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("one two three"))
	defer s.Close()
	tel := &fakeTelemetry{}
	c := newClient(t, openAIProvider("openai", s, policy()), client.WithTelemetry(tel))
	st, err := c.ChatStream(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	if starts, tries, ends := tel.snapshot(); len(starts) != 1 || !starts[0].Stream || len(tries) != 0 || len(ends) != 0 {
		t.Fatalf("before the end: starts %+v, tries %+v, ends %v", starts, tries, ends)
	}
	var last providers.Delta
	for {
		d, err := st.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		last = d
	}
	_ = st.Close()
	_, tries, ends := tel.snapshot()
	if len(tries) != 1 || len(ends) != 1 || ends[0] != nil {
		t.Fatalf("tries %+v, ends %v", tries, ends)
	}
	r := tries[0]
	if r.Usage != last.Usage || r.FinishReason != providers.FinishStop || r.TimeToFirstChunk <= 0 ||
		r.TimeToFirstChunk > r.Duration || r.Closed {
		t.Errorf("try %+v", r)
	}
}

func TestTelemetry_StreamClosedEarlyEndsOnce(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("a fairly long answer"))
	defer s.Close()
	tel := &fakeTelemetry{}
	c := newClient(t, openAIProvider("openai", s, policy()), client.WithTelemetry(tel))
	st, err := c.ChatStream(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
	_ = st.Close()
	_, _ = st.Recv()
	_, tries, ends := tel.snapshot()
	if len(tries) != 1 || !tries[0].Closed || tries[0].Err != nil || len(ends) != 1 || ends[0] != nil {
		t.Errorf("tries %+v, ends %v", tries, ends)
	}
}

func TestTelemetry_StreamFailureBeforeContentIsATry(t *testing.T) {
	s := mocks.NewServer(mocks.WithScript(mocks.TruncateStream(0).Always()))
	defer s.Close()
	o := policy()
	o.RetryCount = 0
	tel := &fakeTelemetry{}
	c := newClient(t, openAIProvider("openai", s, o), client.WithTelemetry(tel))
	_, err := c.ChatStream(context.Background(), hello())
	if err == nil {
		t.Fatal("no error")
	}
	_, tries, ends := tel.snapshot()
	if len(tries) != 1 || tries[0].Err == nil || len(ends) != 1 || ends[0] != err {
		t.Errorf("tries %+v, ends %v", tries, ends)
	}
}

// A call's start names the first route that may serve it: an embeddings call whose chain
// starts with a provider without embeddings starts at the next, with that provider's model.
func TestTelemetry_TheStartNamesTheFirstRouteThatMayServe(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	tel := &fakeTelemetry{}
	c := newClient(t, anthropicProvider("claude", s, policy()), openAIProvider("openai", s, policy()),
		client.WithFallback("claude", "openai"), client.WithTelemetry(tel))
	if _, err := c.Embed(context.Background(), &providers.EmbedRequest{Model: "text-embedding-3-small", Inputs: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Chat(context.Background(), hello()); err != nil {
		t.Fatal(err)
	}
	starts, tries, _ := tel.snapshot()
	if len(starts) != 2 || len(tries) != 2 {
		t.Fatalf("%d starts, %d tries", len(starts), len(tries))
	}
	if st := starts[0]; st.Provider != "openai" || st.System != providers.SystemOpenAI || st.Model != "text-embedding-3-small" {
		t.Errorf("the embeddings call starts at %s (%s) %s", st.Provider, st.System, st.Model)
	}
	if st := starts[1]; st.Provider != "claude" || st.Model != tries[1].Model || st.Model == "" {
		t.Errorf("the chat starts at %s %s, its try was %s %s", st.Provider, st.Model, tries[1].Provider, tries[1].Model)
	}
}
