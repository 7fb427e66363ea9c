package client_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// streamWires are the three wires a stream can take, each with the fake's route for it and
// how a client adds a provider of it.
var streamWires = []struct {
	name    string
	route   string
	provide func(name string, s *mocks.Server, o resilience.Options) client.Option
}{
	{"openai", mocks.RouteChat, openAIProvider},
	{"responses", mocks.RouteResponses, func(name string, s *mocks.Server, o resilience.Options) client.Option {
		return responsesProvider(name, "", s, o)
	}},
	{"anthropic", mocks.RouteMessages, anthropicProvider},
}

// TimeoutSeconds bounds a stream's try until its first content, not until its headers: a
// server that answers 200 and then never sends content — keep-alive comments forever, or one
// byte of a line every 50 ms, so that no idle limit ever sees silence — is abandoned when
// TimeoutSeconds (0.5 s) runs out, long before the first-token limit (10 s by default), and with
// RetryCount 0 it is not asked again: ChatStream fails with kind timeout, naming the failure
// once. Every wire: OpenAI chat, Responses, Anthropic. Real time (the behaviour is about a
// real server that keeps talking); the bound checked is 5 s, ten times the limit, and the
// times are logged.
func TestChatStream_TimeoutSecondsBoundsAStreamWithoutContent(t *testing.T) {
	noise := map[string]mocks.Step{
		"keep-alive": mocks.SlowFirstToken(time.Hour).WithKeepAlive(20 * time.Millisecond),
		"trickle":    mocks.SlowFirstToken(time.Hour).WithTrickle(50 * time.Millisecond),
	}
	for _, w := range streamWires {
		for kind, step := range noise {
			t.Run(w.name+"/"+kind, func(t *testing.T) {
				t.Parallel()
				s := mocks.NewServer(mocks.WithRouteScript(w.route, step.Always()))
				defer s.Close()
				o := policy()
				o.TimeoutSeconds, o.StreamIdleTimeoutSeconds, o.RetryCount = 0.5, 0.5, 0
				c := newClient(t, w.provide("only", s, o))
				start := time.Now()
				st, err := c.ChatStream(context.Background(), hello())
				took := time.Since(start)
				if err == nil {
					_ = st.Close()
					t.Fatal("a stream without content was served")
				}
				t.Logf("ended after %v: %v", took.Round(time.Millisecond), err)
				var pe *providers.Error
				var te *resilience.TimeoutError
				if !errors.As(err, &pe) || pe.Kind != providers.KindTimeout || !errors.As(err, &te) || te.Limit != resilience.TimeoutTotal {
					t.Fatalf("got %v, want kind timeout from TimeoutSeconds", err)
				}
				if took > 5*time.Second {
					t.Fatalf("ChatStream took %v, want about TimeoutSeconds (0.5 s)", took)
				}
				if n := s.Journal().Len(); n != 1 {
					t.Fatalf("the route was asked %d times, want once (RetryCount 0)", n)
				}
				if msg := err.Error(); strings.Count(msg, "timeout of 500ms") != 1 {
					t.Fatalf("the error names its failure %d times: %s", strings.Count(msg, "timeout of 500ms"), msg)
				}
			})
		}
	}
}

// A chain whose failures repeat one another (a route asked again failed the same way) names
// each failure once: a repeat by its number and its own request ID.
func TestChainError_NamesARepeatedFailureOnce(t *testing.T) {
	first := &providers.Error{Provider: "only", Kind: providers.KindTimeout, Message: "no content within 10s", RequestID: "req-1"}
	again := &providers.Error{Provider: "only", Kind: providers.KindTimeout, Message: "no content within 10s", RequestID: "req-2"}
	other := &providers.Error{Provider: "b", Kind: providers.KindOverloaded, StatusCode: 529, Message: "overloaded"}
	ce := &client.ChainError{Cause: first, Failures: []*providers.Error{first, again, other}}
	got := ce.Error()
	want := "only: timeout: no content within 10s [request req-1] (led by failure 1 of 3; also failed: " +
		"2. the same as 1 [request req-2]; 3. b: overloaded (HTTP 529): overloaded)"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	// A repeat of a failure that is not the lead points at its first appearance.
	ce = &client.ChainError{Cause: other, Failures: []*providers.Error{first, other, again}}
	if got, want := ce.Error(), "3. the same as 1 [request req-2]"; !strings.Contains(got, want) || strings.Count(got, "no content") != 1 {
		t.Fatalf("got %s, want %q and the repeated text once", got, want)
	}
}

// A stream that delivered a token every 15 ms and then stalls for good is cut by its route's
// rhythm — at the stall limit's floor, 1 s — and rescued, although its idle limit is 30 s (the
// scorecard's baseline); with or without a first-token limit (a call without one, a request
// for reasoning, is watched all the same). Real time (a real stall over loopback): the check is
// that the rescue comes well before the idle limit would have (10 s), and the measured gap is
// logged.
func TestChatStream_AStallAt15msATokenIsRescuedByTheRhythm(t *testing.T) {
	for _, firstToken := range []float64{10, 0} {
		t.Run(fmt.Sprintf("first-token limit %gs", firstToken), func(t *testing.T) {
			t.Parallel()
			stall := mocks.Reply(words("p", 80)).WithChunkDelay(15 * time.Millisecond)
			stall.StallAfter = 40 // for good
			primary := mocks.NewServer(mocks.WithScript(stall.Always()))
			defer primary.Close()
			secondary := mocks.NewServer(mocks.WithReply(words("s", 60)))
			defer secondary.Close()
			o := policy()
			o.StreamIdleTimeoutSeconds, o.FirstTokenTimeoutSeconds = 30, firstToken
			c := newClient(t, openAIProvider("primary", primary, o), openAIProvider("secondary", secondary, o),
				client.WithFallback("primary", "secondary"))
			st, err := c.ChatStream(context.Background(), hello(), client.WithRescue(resilience.RescueRestart))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			var last time.Time
			var gap time.Duration
			var after strings.Builder
			for d, err := range st.Deltas() {
				if err != nil {
					t.Fatal(err)
				}
				if d.Restart {
					gap = time.Since(last)
					after.Reset()
				}
				after.WriteString(d.Text)
				last = time.Now()
			}
			t.Logf("rescued %v after the last token before the stall", gap.Round(time.Millisecond))
			if after.String() != words("s", 60) || st.Provider() != "secondary" {
				t.Fatalf("after the restart %q from %s", after.String(), st.Provider())
			}
			if gap <= 0 || gap > 10*time.Second {
				t.Fatalf("rescued %v after the stall, want about the stall limit's floor (1 s), far from the idle limit (30 s)", gap)
			}
		})
	}
}

// Without rescue, a stall after content ends the stream on every wire with kind timeout
// (limit stream-stall) and the text delivered in Partial — well before the idle limit (30 s).
// Real time, logged; the bound checked is 10 s.
func TestChatStream_AStallEndsWithPartialOnEveryWire(t *testing.T) {
	for _, w := range streamWires {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			stall := mocks.Reply(words("p", 80)).WithChunkDelay(15 * time.Millisecond)
			stall.StallAfter = 40
			s := mocks.NewServer(mocks.WithRouteScript(w.route, stall.Always()))
			defer s.Close()
			o := policy()
			o.StreamIdleTimeoutSeconds = 30
			c := newClient(t, w.provide("only", s, o))
			st, err := c.ChatStream(context.Background(), hello())
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			start := time.Now()
			r := readAll(st)
			took := time.Since(start)
			t.Logf("ended %v after the stream began: %v", took.Round(time.Millisecond), r.err)
			var pe *providers.Error
			var te *resilience.TimeoutError
			if !errors.As(r.err, &pe) || pe.Kind != providers.KindTimeout || !errors.As(r.err, &te) ||
				te.Limit != resilience.TimeoutStreamStall || pe.Partial != words("p", 40) {
				t.Fatalf("got %v (partial %q), want a stream-stall timeout with the 40 words", r.err, partialOf(r.err))
			}
			if took > 10*time.Second {
				t.Fatalf("the stall ended the stream after %v, want about 1 s", took)
			}
		})
	}
}
