package client_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
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
	if got := c.Pipeline("primary").CircuitState(); got != resilience.CircuitOpen {
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
	if c.Pipeline("openai").CircuitState() != resilience.CircuitOpen {
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

func TestChatStream_NoContentInTimeIsATimeoutAndFallsBack(t *testing.T) {
	primary := mocks.NewServer(mocks.WithScript(mocks.SlowStream(2_000_000_000).Always())) // 2 s before each event
	defer primary.Close()
	secondary := mocks.NewServer(mocks.WithReply("fast"))
	defer secondary.Close()
	o := policy()
	o.TimeoutSeconds = 0.1
	c := newClient(t, openAIProvider("primary", primary, o), openAIProvider("secondary", secondary, policy()),
		client.WithFallback("primary", "secondary"))
	st, err := c.ChatStream(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if text, _, err := collect(t, st); err != nil || text != "fast" {
		t.Fatalf("%q %v", text, err)
	}
}
