package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
	"github.com/steadyllm/steady/resilience"
)

func collect(t *testing.T, st *client.Stream) (string, providers.Delta, error) {
	t.Helper()
	var text strings.Builder
	var last providers.Delta
	for d, err := range st.Deltas() {
		if err != nil {
			return text.String(), last, err
		}
		text.WriteString(d.Text)
		last = d
	}
	return text.String(), last, nil
}

func TestChatStream_DeliversTextUsageAndEnd(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("one two three four"))
	defer s.Close()
	c := newClient(t, openAIProvider("openai", s, policy()))
	st, err := c.ChatStream(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	text, last, err := collect(t, st)
	if err != nil || text != "one two three four" || !last.Done || last.FinishReason != providers.FinishStop || last.Usage.OutputTokens == 0 {
		t.Fatalf("text %q last %+v err %v", text, last, err)
	}
	if st.Provider() != "openai" {
		t.Fatal(st.Provider())
	}
	if _, err := st.Recv(); err != io.EOF {
		t.Fatalf("after the end: %v, want io.EOF", err)
	}
}

func TestChatStream_FallsBackBeforeFirstContent(t *testing.T) {
	// The primary answers 200 and then an overloaded error event before any text.
	primary := mocks.NewServer(mocks.WithScript(mocks.StreamError(0, "overloaded_error").Always()))
	defer primary.Close()
	secondary := mocks.NewServer(mocks.WithReply("secondary speaking"))
	defer secondary.Close()
	o := policy()
	o.RetryCount = 0
	o.CircuitBreakerThreshold = 1
	c := newClient(t, openAIProvider("primary", primary, o), openAIProvider("secondary", secondary, policy()),
		client.WithFallback("primary", "secondary"))
	st, err := c.ChatStream(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	text, _, err := collect(t, st)
	if err != nil || text != "secondary speaking" || st.Provider() != "secondary" {
		t.Fatalf("%q from %s: %v", text, st.Provider(), err)
	}
	// The in-stream overload counted as a failure for the primary's breaker.
	if got := c.Pipeline("primary").Route("gpt-4o-mini").CircuitState(); got != resilience.CircuitOpen {
		t.Fatalf("primary circuit %v, want open after an in-stream overload", got)
	}
}

func TestChatStream_FailureAfterContentCarriesPartialOutput(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("alpha beta gamma delta epsilon"), mocks.WithScript(mocks.StreamError(3, "overloaded_error")))
	defer s.Close()
	secondary := mocks.NewServer()
	defer secondary.Close()
	o := policy()
	o.CircuitBreakerThreshold = 1
	c := newClient(t, openAIProvider("openai", s, o), openAIProvider("secondary", secondary, policy()),
		client.WithFallback("openai", "secondary"))
	st, err := c.ChatStream(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	text, _, err := collect(t, st)
	st.Close()
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Kind != providers.KindOverloaded || pe.Partial == "" || pe.Partial != text {
		t.Fatalf("got %v (partial %q, text %q), want overloaded with the partial text", err, pe.Partial, text)
	}
	if secondary.Journal().Len() != 0 {
		t.Fatal("fell back after content had reached the caller")
	}
	if c.Pipeline("openai").Route("gpt-4o-mini").CircuitState() != resilience.CircuitOpen {
		t.Fatal("the in-stream overload did not count for the breaker")
	}
}

func TestChatStream_TruncatedStreamIsAnError(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("alpha beta gamma delta epsilon"), mocks.WithScript(mocks.TruncateStream(3)))
	defer s.Close()
	c := newClient(t, openAIProvider("openai", s, policy()))
	st, err := c.ChatStream(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	text, _, err := collect(t, st)
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Kind != providers.KindStreamTruncated || pe.Partial != text || text == "" {
		t.Fatalf("got %v after %q, want stream_truncated with the partial text", err, text)
	}
}

func TestChatStream_RetriesAnErrorStatusBeforeTheStream(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("ok now"), mocks.WithScript(mocks.Overloaded(), mocks.OK()))
	defer s.Close()
	c := newClient(t, openAIProvider("openai", s, policy()))
	st, err := c.ChatStream(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if text, _, err := collect(t, st); err != nil || text != "ok now" || s.Journal().Len() != 2 {
		t.Fatalf("%q %v after %d requests", text, err, s.Journal().Len())
	}
}

// No first token in time is a timeout that falls back: within FirstTokenTimeoutSeconds, or,
// with that limit off, within TimeoutSeconds.
func TestChatStream_NoContentInTimeIsATimeoutAndFallsBack(t *testing.T) {
	for name, set := range map[string]func(*resilience.Options){
		"first-token limit":       func(o *resilience.Options) { o.FirstTokenTimeoutSeconds = 0.1 },
		"total timeout, no limit": func(o *resilience.Options) { o.FirstTokenTimeoutSeconds, o.TimeoutSeconds = 0, 0.1 },
	} {
		primary := mocks.NewServer(mocks.WithScript(mocks.SlowStream(2_000_000_000).Always())) // 2 s before each event
		defer primary.Close()
		secondary := mocks.NewServer(mocks.WithReply("fast"))
		defer secondary.Close()
		o := policy()
		set(&o)
		c := newClient(t, openAIProvider("primary", primary, o), openAIProvider("secondary", secondary, policy()),
			client.WithFallback("primary", "secondary"))
		st, err := c.ChatStream(context.Background(), hello())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if text, _, err := collect(t, st); err != nil || text != "fast" {
			t.Fatalf("%s: %q %v", name, text, err)
		}
		_ = st.Close()
	}
}

// anthropicProvider adds an Anthropic Messages provider named name that talks to s.
func anthropicProvider(name string, s *mocks.Server, o resilience.Options) client.Option {
	return client.WithProvider(name, o, func(hc *http.Client) (providers.Provider, error) {
		return anthropic.New(anthropic.Config{Name: name, BaseURL: s.AnthropicBaseURL(), APIKey: sentinelKey, HTTPClient: hc, Model: "claude-haiku-4-5"})
	})
}

func TestChatStream_AnthropicOverloadEventOpensTheCircuitAndFallsBackToOpenAI(t *testing.T) {
	// Anthropic answers 200, then `event: error` with overloaded_error before any text.
	claude := mocks.NewServer(mocks.WithScript(mocks.StreamError(0, "overloaded_error").Always()))
	defer claude.Close()
	gpt := mocks.NewServer(mocks.WithReply("openai speaking"))
	defer gpt.Close()
	o := policy()
	o.RetryCount = 0
	o.CircuitBreakerThreshold = 1
	c := newClient(t, anthropicProvider("claude", claude, o), openAIProvider("openai", gpt, policy()),
		client.WithFallback("claude", "openai"))
	st, err := c.ChatStream(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	text, last, err := collect(t, st)
	if err != nil || text != "openai speaking" || st.Provider() != "openai" || !last.Done {
		t.Fatalf("%q from %s (last %+v): %v", text, st.Provider(), last, err)
	}
	if got := c.Pipeline("claude").Route("claude-haiku-4-5").CircuitState(); got != resilience.CircuitOpen {
		t.Fatalf("claude circuit %v, want open after an in-stream overloaded_error", got)
	}
	if in := claude.Journal().Len(); in != 1 {
		t.Fatalf("claude saw %d requests, want 1", in)
	}
}

func TestChatStream_AnthropicTruncatedAfterContentCarriesPartial(t *testing.T) {
	claude := mocks.NewServer(mocks.WithReply("alpha beta gamma delta epsilon"), mocks.WithScript(mocks.TruncateStream(4)))
	defer claude.Close()
	c := newClient(t, anthropicProvider("claude", claude, policy()))
	st, err := c.ChatStream(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	text, _, err := collect(t, st)
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Kind != providers.KindStreamTruncated || pe.Provider != "claude" || text == "" || pe.Partial != text {
		t.Fatalf("got %v after %q, want claude stream_truncated with the partial text", err, text)
	}
	if strings.Contains(err.Error(), sentinelKey) {
		t.Fatal("the error carries the API key")
	}
}
