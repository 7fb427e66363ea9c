package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/internal/testkit/backend"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

// continued is what a caller read of a stream that may have been continued: the text as it
// came, the deltas marked Continued or Restart, and the error that ended it.
type continued struct {
	text      string
	continues int
	restarts  int
	err       error
}

func readContinued(st *client.Stream) continued {
	var r continued
	var text strings.Builder
	for d, err := range st.Deltas() {
		if err != nil {
			r.err = err
			break
		}
		if d.Continued {
			r.continues++
		}
		if d.Restart {
			r.restarts++
		}
		text.WriteString(d.Text)
	}
	r.text = text.String()
	return r
}

// compatibleProvider adds an OpenAI-compatible provider that takes a prefill in flavour f
// ("" for none, as OpenAI).
func compatibleProvider(name string, s *mocks.Server, o resilience.Options, f openai.PrefillFlavor) client.Option {
	return client.WithProvider(name, o, func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{Name: name, Dialect: openai.Compatible, BaseURL: s.OpenAIBaseURL(), APIKey: sentinelKey,
			HTTPClient: hc, Model: "served-model", Prefill: f})
	})
}

// lastMessage returns the role and text of the last message of the request s received last,
// and the request's body.
func lastMessage(t *testing.T, s *mocks.Server) (role, text string, body map[string]any) {
	t.Helper()
	req, ok := s.Journal().Last()
	if !ok {
		t.Fatal("no request")
	}
	if err := json.Unmarshal(req.Body, &body); err != nil {
		t.Fatal(err)
	}
	msgs, _ := body["messages"].([]any)
	last, _ := msgs[len(msgs)-1].(map[string]any)
	role, _ = last["role"].(string)
	switch c := last["content"].(type) {
	case string:
		text = c
	case []any:
		for _, b := range c {
			if m, ok := b.(map[string]any); ok {
				s, _ := m["text"].(string)
				text += s
			}
		}
	}
	return role, text, body
}

// cutAt is a reply of answer cut (the connection dropped) after n content events.
func cutAt(answer string, n int) mocks.Step {
	st := mocks.Reply(answer)
	st.Cut, st.CutAfter, st.CountContent = mocks.CutAbort, n, true
	return st
}

// A stream cut after 40 of its 60 words, continued: the fallback, an Anthropic model that takes
// a prefill, is sent the 40 words as the assistant's beginning and answers the rest, which the
// caller reads after them — the whole answer, once, with one delta marked Continued and none
// marked Restart. The same through an OpenAI-compatible fallback in each prefill flavour.
func TestChatStream_ContinueDeliversTheWholeAnswerOnce(t *testing.T) {
	answer := words("p", 60)
	for name, fallback := range map[string]func(*mocks.Server) client.Option{
		"anthropic prefill": func(s *mocks.Server) client.Option { return anthropicProvider("fallback", s, policy()) },
		"prefix: true": func(s *mocks.Server) client.Option {
			return compatibleProvider("fallback", s, policy(), openai.PrefillPrefix)
		},
		"continue_final_message": func(s *mocks.Server) client.Option {
			return compatibleProvider("fallback", s, policy(), openai.PrefillContinueFinal)
		},
	} {
		t.Run(name, func(t *testing.T) {
			primary := mocks.NewServer(mocks.WithScript(cutAt(answer, 40).Always()))
			defer primary.Close()
			secondary := mocks.NewServer(mocks.WithReply(answer))
			defer secondary.Close()
			c := newClient(t, openAIProvider("primary", primary, policy()), fallback(secondary),
				client.WithFallback("primary", "fallback"))
			st, err := c.ChatStream(context.Background(), hello(), client.WithRescue(resilience.RescueContinue))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			r := readContinued(st)
			if r.err != nil || r.text != answer || r.continues != 1 || r.restarts != 0 || st.Provider() != "fallback" {
				t.Fatalf("err %v, continued %d, restarts %d, by %s, text %q", r.err, r.continues, r.restarts, st.Provider(), r.text)
			}
			if st.Text() != answer {
				t.Fatalf("Text() = %q", st.Text())
			}
			role, text, _ := lastMessage(t, secondary)
			if role != "assistant" || text != words("p", 40) {
				t.Fatalf("the fallback was sent %s %q, want the 40 words as the assistant's", role, text)
			}
			if acct := st.Accounting(); acct.FailedAttempts != 1 {
				t.Fatalf("accounting %+v, want the cut attempt counted", acct)
			}
		})
	}
}

// Whitespace at the end of what was delivered is not sent (Anthropic refuses a prefill that
// ends in whitespace, and so does the fake), and when the continuation begins with it again
// the caller does not get it twice: the text reads as the answer, with no gap and nothing
// doubled.
func TestChatStream_ContinueKeepsTheWhitespaceThePrefillLeftOut(t *testing.T) {
	answer := "one two three\n\n four five six"
	primary := mocks.NewServer(mocks.WithScript(cutAt(answer, 3).Always())) // "one", " two", " three\n\n"
	defer primary.Close()
	secondary := mocks.NewServer(mocks.WithReply(answer))
	defer secondary.Close()
	st, r := continueToClaude(t, primary, secondary)
	if r.err != nil || r.text != answer || st.Text() != answer {
		t.Fatalf("err %v, text %q, Text() %q, want %q", r.err, r.text, st.Text(), answer)
	}
	if _, text, _ := lastMessage(t, secondary); text != "one two three" {
		t.Fatalf("prefill %q, want it without its trailing whitespace", text)
	}
}

// A stall past the idle limit after content, and an error event inside the 200 stream after
// content, are continued as a cut is.
func TestChatStream_ContinueAfterAStallOrAnErrorEvent(t *testing.T) {
	answer := words("p", 60)
	t.Run("error event", func(t *testing.T) {
		broken := mocks.Reply(answer)
		broken.StreamError, broken.ErrorAfter, broken.CountContent = "server_error", 40, true
		primary := mocks.NewServer(mocks.WithScript(broken.Always()))
		defer primary.Close()
		secondary := mocks.NewServer(mocks.WithReply(answer))
		defer secondary.Close()
		if _, r := continueToClaude(t, primary, secondary); r.err != nil || r.text != answer || r.continues != 1 {
			t.Fatalf("err %v, continued %d, text %q", r.err, r.continues, r.text)
		}
	})
	t.Run("stall", func(t *testing.T) {
		stall := mocks.Reply(answer)
		stall.StallAfter, stall.StallFor = 40, 30*time.Second
		primary := mocks.NewServer(mocks.WithScript(stall.Always()))
		defer primary.Close()
		secondary := mocks.NewServer(mocks.WithReply(answer))
		defer secondary.Close()
		clock := backend.NewManualClock()
		o := policy()
		o.StreamIdleTimeoutSeconds = 5
		// The clock moves 5 s a step until the answer ends, the continuation's part too: its
		// route's own limits are not on trial (as in TestChatStream_AStallAfterContentIsRescued).
		fallback := policy()
		fallback.TimeoutSeconds, fallback.StreamIdleTimeoutSeconds, fallback.StreamStallFactor = 0, 0, 0
		c := newClient(t, client.WithClock(clock), openAIProvider("primary", primary, o), anthropicProvider("claude", secondary, fallback),
			client.WithFallback("primary", "claude"))
		st, err := c.ChatStream(context.Background(), hello(), client.WithRescue(resilience.RescueContinue))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		done := make(chan continued, 1)
		go func() { done <- readContinued(st) }()
		for range 100 {
			clock.Advance(5 * time.Second)
			select {
			case r := <-done:
				if r.err != nil || r.text != answer || r.continues != 1 {
					t.Fatalf("err %v, continued %d, text %q", r.err, r.continues, r.text)
				}
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
		t.Fatalf("the stall was not continued: %+v", <-done)
	})
}

// A route that cannot continue an answer (OpenAI: no prefill) is never sent the partial
// answer: the continuation goes past it to the route that can.
func TestChatStream_ContinueSkipsARouteThatCannotContinue(t *testing.T) {
	answer := words("p", 60)
	primary := mocks.NewServer(mocks.WithScript(cutAt(answer, 40).Always()))
	defer primary.Close()
	plain := mocks.NewServer(mocks.WithReply(answer))
	defer plain.Close()
	claude := mocks.NewServer(mocks.WithReply(answer))
	defer claude.Close()
	c := newClient(t, openAIProvider("primary", primary, policy()), openAIProvider("plain", plain, policy()),
		anthropicProvider("claude", claude, policy()), client.WithFallback("primary", "plain", "claude"))
	st, err := c.ChatStream(context.Background(), hello(), client.WithRescue(resilience.RescueContinue))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if r := readContinued(st); r.err != nil || r.text != answer || st.Provider() != "claude" {
		t.Fatalf("err %v, by %s, text %q", r.err, st.Provider(), r.text)
	}
	if n := plain.Journal().Len(); n != 0 {
		t.Fatalf("the route that cannot continue was sent %d requests", n)
	}
}

// Where no route can continue the answer, the stream ends with the failure and its Partial,
// and no route is sent the partial answer; with "continue-or-buffer" the stream is buffered
// instead, and the caller reads the fallback's whole answer with nothing of the cut one.
func TestChatStream_WhenNoRouteCanContinue(t *testing.T) {
	answer := words("p", 60)
	start := func(t *testing.T, mode string) (continued, *mocks.Server) {
		primary := mocks.NewServer(mocks.WithScript(cutAt(answer, 40).Always()))
		t.Cleanup(primary.Close)
		plain := mocks.NewServer(mocks.WithReply(words("s", 60)))
		t.Cleanup(plain.Close)
		c := newClient(t, openAIProvider("primary", primary, policy()), openAIProvider("plain", plain, policy()),
			client.WithFallback("primary", "plain"))
		st, err := c.ChatStream(context.Background(), hello(), client.WithRescue(mode))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return readContinued(st), plain
	}
	t.Run("continue", func(t *testing.T) {
		r, plain := start(t, resilience.RescueContinue)
		var pe *providers.Error
		if !errors.As(r.err, &pe) || pe.Partial != words("p", 40) || r.text != words("p", 40) || plain.Journal().Len() != 0 {
			t.Fatalf("err %v (partial %q), text %q, fallback asked %d times", r.err, partialOf(r.err), r.text, plain.Journal().Len())
		}
	})
	t.Run("continue-or-buffer", func(t *testing.T) {
		r, _ := start(t, resilience.RescueContinueOrBuffer)
		if r.err != nil || r.text != words("s", 60) || r.continues != 0 || r.restarts != 0 {
			t.Fatalf("err %v, text %q", r.err, r.text)
		}
	})
}

// A route that declares a prefill but refuses it (a 400: prefill_unsupported) ends the
// rescue: it is the request's refusal, not an outage, so the partial answer is not carried on
// to the next route, and the caller gets the failure that cut the stream, with its Partial —
// not the refusal, which would hide it.
func TestChatStream_ARefusedPrefillEndsTheRescueWithTheFirstFailure(t *testing.T) {
	answer := words("p", 60)
	primary := mocks.NewServer(mocks.WithScript(cutAt(answer, 40).Always()))
	defer primary.Close()
	refuses := mocks.NewServer(mocks.WithReply(answer), mocks.WithRejectPrefill())
	defer refuses.Close()
	last := mocks.NewServer(mocks.WithReply(answer))
	defer last.Close()
	c := newClient(t, openAIProvider("primary", primary, policy()), anthropicProvider("refuses", refuses, policy()),
		anthropicProvider("last", last, policy()), client.WithFallback("primary", "refuses", "last"))
	st, err := c.ChatStream(context.Background(), hello(), client.WithRescue(resilience.RescueContinue))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := readContinued(st)
	var pe *providers.Error
	if !errors.As(r.err, &pe) || pe.Kind != providers.KindUnavailable || pe.Partial != words("p", 40) ||
		errors.Is(r.err, providers.ErrPrefillUnsupported) {
		t.Fatalf("err %v (partial %q), want the cut with its partial", r.err, partialOf(r.err))
	}
	if refuses.Journal().Len() != 1 || last.Journal().Len() != 0 {
		t.Fatalf("the refusing route saw %d requests, the next %d", refuses.Journal().Len(), last.Journal().Len())
	}
}

// An answer longer than the carry-over bound (64 KiB) is not sent again: the stream ends with
// A tool call cut in the middle of its arguments is asked for again and delivered whole under
// the same index, its first fragment marked Restart: the arguments read after the restart are
// A route declared to continue by prompt (WithContinuation ContinuePrompt) gets the answer so
// far as the assistant's message and the continuation prompt after it, and what it answers is
// delivered as the rest; a route declared ContinueNone is never sent the partial answer, even
// where its provider takes a prefill.
func TestChatStream_WithContinuationDeclaresTheWay(t *testing.T) {
	answer := words("p", 60)
	primary := mocks.NewServer(mocks.WithScript(cutAt(answer, 40).Always()))
	defer primary.Close()
	never := mocks.NewServer(mocks.WithReply(answer))
	defer never.Close()
	// The fake does not read the prompt: it answers the rest because it is told to.
	prompted := mocks.NewServer(mocks.WithReply(" " + strings.TrimPrefix(answer, words("p", 40)+" ")))
	defer prompted.Close()
	c := newClient(t, openAIProvider("primary", primary, policy()), anthropicProvider("never", never, policy()),
		openAIProvider("prompted", prompted, policy()), client.WithFallback("primary", "never", "prompted"),
		client.WithContinuation("never", client.ContinueNone, nil),
		client.WithContinuation("prompted", client.ContinueNone, map[string]client.Continuation{"gpt-4o-mini": client.ContinuePrompt}))
	st, err := c.ChatStream(context.Background(), hello(), client.WithRescue(resilience.RescueContinue))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if r := readContinued(st); r.err != nil || r.text != answer || r.continues != 1 || st.Provider() != "prompted" {
		t.Fatalf("err %v, by %s, text %q", r.err, st.Provider(), r.text)
	}
	if n := never.Journal().Len(); n != 0 {
		t.Fatalf("the route declared ContinueNone was sent %d requests", n)
	}
	role, text, body := lastMessage(t, prompted)
	msgs := body["messages"].([]any)
	prev := msgs[len(msgs)-2].(map[string]any)
	if role != "user" || text != client.ContinuationPrompt || prev["role"] != "assistant" || prev["content"] != words("p", 40) {
		t.Fatalf("sent %v", msgs)
	}
	if _, err := client.New(openAIProvider("a", primary, policy()), client.WithContinuation("a", "splice", nil)); err == nil {
		t.Fatal("an unknown way was accepted")
	}
}

// "continue" is the default: a stream cut after content on a chain that can continue it is
// continued with no rescue configured; on a chain that cannot, it ends as without rescue.
func TestChatStream_ContinueIsTheDefault(t *testing.T) {
	if got := resilience.DefaultOptions().StreamRescue; got != resilience.RescueContinue {
		t.Fatalf("the default StreamRescue is %q", got)
	}
	answer := words("p", 60)
	primary := mocks.NewServer(mocks.WithScript(cutAt(answer, 40).Always()))
	defer primary.Close()
	claude := mocks.NewServer(mocks.WithReply(answer))
	defer claude.Close()
	c := newClient(t, openAIProvider("primary", primary, policy()), anthropicProvider("claude", claude, policy()),
		client.WithFallback("primary", "claude"))
	st, err := c.ChatStream(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if r := readContinued(st); r.err != nil || r.text != answer || r.continues != 1 {
		t.Fatalf("err %v, continued %d, text %q", r.err, r.continues, r.text)
	}
	alone := newClient(t, openAIProvider("primary", primary, policy()))
	st, err = alone.ChatStream(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if r := readContinued(st); partialOf(r.err) != words("p", 40) || r.continues != 0 {
		t.Fatalf("err %v, continued %d", r.err, r.continues)
	}
}

// A continuation that is cut in its turn is continued again, by the next route that can: the
// third route is sent the whole answer so far — the first route's part and the second's — and
// An answer that streamed reasoning is not continued: a prefill cannot carry the reasoning,
// and a new answer would reason again in front of the caller. The stream ends with the cut and
// The continuation's prompt holds the answer so far, and a route whose declared context window

// continueToClaude streams hello() from primary with rescue "continue", an Anthropic provider on
// claude its fallback (with opts), and returns the stream, closed when the test ends, and what
// the caller read of it.
func continueToClaude(t *testing.T, primary, claude *mocks.Server, opts ...client.Option) (*client.Stream, continued) {
	t.Helper()
	c := newClient(t, append([]client.Option{openAIProvider("primary", primary, policy()), anthropicProvider("claude", claude, policy()),
		client.WithFallback("primary", "claude")}, opts...)...)
	st, err := c.ChatStream(context.Background(), hello(), client.WithRescue(resilience.RescueContinue))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st, readContinued(st)
}
