package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/internal/testkit/backend"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// A route that served after a retry (a 503, then the stream) and was then cut after content
// and rescued: the stream that took over still counts the retry among the failed attempts, as
// the stream it replaced did.
func TestChatStream_ARescueKeepsTheRetriesOfTheRouteItReplaced(t *testing.T) {
	cut := mocks.Reply(words("p", 60))
	cut.Cut, cut.CutAfter, cut.CountContent = mocks.CutAbort, 40, true
	primary := mocks.NewServer(mocks.WithScript(mocks.Status(503), cut.Always()))
	defer primary.Close()
	secondary := mocks.NewServer(mocks.WithReply(words("s", 60)))
	defer secondary.Close()
	c := newClient(t, openAIProvider("primary", primary, policy()), openAIProvider("secondary", secondary, policy()),
		client.WithFallback("primary", "secondary"))
	st, err := c.ChatStream(context.Background(), hello(), client.WithRescue(resilience.RescueRestart))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if acct := st.Accounting(); acct.FailedAttempts != 1 {
		t.Fatalf("before the rescue: %+v, want the 503 counted", acct)
	}
	r := readAll(st)
	if r.err != nil || r.restarts != 1 || st.Provider() != "secondary" {
		t.Fatalf("err %v, restarts %d, served by %s", r.err, r.restarts, st.Provider())
	}
	if acct := st.Accounting(); acct.FailedAttempts != 2 {
		t.Fatalf("after the rescue: %+v, want 2 (the 503 and the cut attempt)", acct)
	}
}

// A rescue goes where a failure before content would: when the client's FallbackOn names the
// kind of the failure after content, the providers it lists answer, not the rest of the chain.
func TestChatStream_ARescueFollowsTheKindsChain(t *testing.T) {
	cut := mocks.Reply(words("p", 60))
	cut.Cut, cut.CutAfter, cut.CountContent = mocks.CutAbort, 40, true
	primary := mocks.NewServer(mocks.WithScript(cut.Always()))
	defer primary.Close()
	middle := mocks.NewServer(mocks.WithReply(words("m", 60)))
	defer middle.Close()
	target := mocks.NewServer(mocks.WithReply(words("t", 60)))
	defer target.Close()
	c := newClient(t, openAIProvider("primary", primary, policy()), openAIProvider("middle", middle, policy()),
		openAIProvider("target", target, policy()), client.WithFallback("primary", "middle", "target"),
		client.WithFallbackOn(providers.KindUnavailable, "target"))
	st, err := c.ChatStream(context.Background(), hello(), client.WithRescue(resilience.RescueRestart))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := readAll(st)
	if r.err != nil || r.restarts != 1 || r.after != words("t", 60) || st.Provider() != "target" || middle.Journal().Len() != 0 {
		t.Fatalf("err %v, restarts %d, served by %s (%q), middle asked %d times", r.err, r.restarts, st.Provider(), r.after,
			middle.Journal().Len())
	}
}

// With rescue "buffer", the wait for the first content (here the total timeout, without a
// first-token limit) ends at the first content, as without rescue: an answer that takes longer
// than the limit in all, its words flowing, is delivered whole rather than cut as if no content
// had come. The behaviour is about real time, so the test runs on the wall clock, with a
// generous margin: 3 s for the first word to arrive over loopback, a pause of 3.5 s after it.
func TestChatStream_BufferWaitsForTheWholeAnswerPastTheFirstContentLimit(t *testing.T) {
	t.Parallel()
	slow := mocks.Reply(words("w", 5))
	slow.StallAfter, slow.StallFor = 1, 3500*time.Millisecond
	s := mocks.NewServer(mocks.WithScript(slow.Always()))
	defer s.Close()
	o := policy()
	o.FirstTokenTimeoutSeconds, o.TimeoutSeconds, o.StreamIdleTimeoutSeconds = 0, 3, 60
	c := newClient(t, openAIProvider("only", s, o))
	st, err := c.ChatStream(context.Background(), hello(), client.WithRescue(resilience.RescueBuffer))
	if err != nil {
		t.Fatalf("%v (asked %d times)", err, s.Journal().Len())
	}
	defer st.Close()
	r := readAll(st)
	if r.err != nil || r.all != words("w", 5) || !r.last.Done {
		t.Fatalf("%q %v", r.all, r.err)
	}
}

// A route abandoned at its first-token limit is asked once more when no other route can serve
// now: a later provider whose circuit is open cannot, and the call must not end on its
// circuit_open while the silent route may answer the second time.
func TestChatStream_TheFirstTokenRetryHappensWhenTheFallbackCannotServe(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("second time lucky"), mocks.WithScript(mocks.SlowFirstToken(time.Hour)))
	defer s.Close()
	other := mocks.NewServer(mocks.WithReply("from the fallback"))
	defer other.Close()
	clock := backend.NewManualClock()
	o := policy()
	o.TimeoutSeconds, o.StreamIdleTimeoutSeconds = 30, 60
	c := newClient(t, client.WithClock(clock), openAIProvider("primary", s, o), openAIProvider("secondary", other, o),
		client.WithFallback("primary", "secondary"))
	c.Pipeline("secondary").Isolate()
	done := streamInBackground(context.Background(), c, hello())
	waitFor(t, "the first try", func() bool { return s.Journal().Len() == 1 })
	clock.Advance(10 * time.Second)
	r := <-done
	if r.err != nil || r.all != "second time lucky" || s.Journal().Len() != 2 || other.Journal().Len() != 0 {
		t.Fatalf("%q %v after %d requests to the primary", r.all, r.err, s.Journal().Len())
	}
}
