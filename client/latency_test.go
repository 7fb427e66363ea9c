package client_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/internal/testkit/backend"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// clockedTransport sends requests to the fake servers over loopback, first moving the manual
// clock by the request's latency (latency(r)): the client, which times its tries on that clock,
// measures exactly that, and nothing sleeps.
type clockedTransport struct {
	clock   *backend.ManualClock
	latency func(r *http.Request) time.Duration
}

func (t clockedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.clock.Advance(t.latency(r))
	return http.DefaultTransport.RoundTrip(r)
}

// routeLatency returns what provider name's first deployment measured of its route for model.
func routeLatency(t *testing.T, c *client.Client, name, model string) resilience.LatencyInfo {
	t.Helper()
	for _, r := range c.Deployments(name)[0].Routes {
		if r.Model == model {
			return r.Latency
		}
	}
	t.Fatalf("no route %q", model)
	return resilience.LatencyInfo{}
}

// Every try teaches its route how fast it is: a whole answer its time per output token, a
// stream its time to first token, a failure of the route its error rate, a first-token limit
// that ran out its wait (censored) and a failure; the request's own fault and the caller's
// cancellation teach nothing.
func TestLatency_EachTryIsRecordedOnItsRoute(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply(words("w", 20)), mocks.WithScript(
		mocks.OK(), mocks.OK(), mocks.Status(503), mocks.Status(400), mocks.SlowFirstToken(time.Hour)))
	defer s.Close()
	clock := backend.NewManualClock()
	const took = 150 * time.Millisecond
	o := policy()
	o.RetryCount = 0
	o.TimeoutSeconds, o.StreamIdleTimeoutSeconds = 30, 60 // only the first-token limit (10 s) falls due
	c := newClient(t, client.WithClock(clock), openAIProvider("openai", s, o),
		client.WithBaseTransport(clockedTransport{clock, func(*http.Request) time.Duration { return took }}))
	ctx := context.Background()

	resp, err := c.Chat(ctx, hello())
	if err != nil {
		t.Fatal(err)
	}
	l := routeLatency(t, c, "openai", "gpt-4o-mini")
	if want := took / time.Duration(resp.Usage.OutputTokens); l.Samples != 1 || l.PerOutputToken != want || l.FirstToken != 0 || l.ErrorRate != 0 {
		t.Fatalf("after a whole answer of %d tokens: %+v, want %v a token", resp.Usage.OutputTokens, l, want)
	}
	st, err := c.ChatStream(ctx, hello())
	if err != nil {
		t.Fatal(err)
	}
	if r := readAll(st); r.err != nil {
		t.Fatal(r.err)
	}
	_ = st.Close()
	if l = routeLatency(t, c, "openai", "gpt-4o-mini"); l.Samples != 2 || l.FirstToken != took {
		t.Fatalf("after a stream: %+v", l)
	}
	if _, err := c.Chat(ctx, hello()); !providers.KindOf(err).Unwell() {
		t.Fatalf("503: %v", err)
	}
	if l = routeLatency(t, c, "openai", "gpt-4o-mini"); l.Samples != 2 || l.ErrorRate != 0.25 {
		t.Fatalf("after a 503: %+v", l)
	}
	if _, err := c.Chat(ctx, hello()); providers.KindOf(err) != providers.KindBadRequest {
		t.Fatalf("400: %v", err)
	}
	if l = routeLatency(t, c, "openai", "gpt-4o-mini"); l.Samples != 2 || l.ErrorRate != 0.25 {
		t.Fatalf("a bad request counted: %+v", l)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.Chat(canceled, hello()); providers.KindOf(err) != providers.KindCanceled {
		t.Fatalf("canceled: %v", err)
	}
	if l = routeLatency(t, c, "openai", "gpt-4o-mini"); l.Samples != 2 || l.ErrorRate != 0.25 {
		t.Fatalf("a cancellation counted: %+v", l)
	}

	// The first token never comes: the limit runs out at 10 s, and the route, the only one, is
	// not asked again (RetryCount 0).
	done := streamInBackground(ctx, c, hello())
	waitFor(t, "the silent try", func() bool { return s.Journal().Len() == 5 })
	clock.Advance(10 * time.Second)
	if r := <-done; !firstTokenTimedOut(r.err) {
		t.Fatalf("got %v, want the first-token timeout", r.err)
	}
	l = routeLatency(t, c, "openai", "gpt-4o-mini")
	// The wait (10 s and the send): the first-token average moved up from 150 ms by a quarter
	// of it, and the error rate by a failure.
	wait := 10*time.Second + took
	wantFT := took + (wait-took)/4
	if l.Samples != 3 || l.FirstToken != wantFT || l.ErrorRate != 0.25+0.75*0.25 || s.Journal().Len() != 5 {
		t.Fatalf("after a first-token limit: %+v, want first token %v (%d requests)", l, wantFT, s.Journal().Len())
	}
}

// firstTokenTimedOut reports whether err is a first-token limit's timeout.
func firstTokenTimedOut(err error) bool {
	var te *resilience.TimeoutError
	return providers.KindOf(err) == providers.KindTimeout && errors.As(err, &te) && te.Limit == resilience.TimeoutFirstToken
}
