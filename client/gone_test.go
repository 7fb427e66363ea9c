package client_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// A cut background stream whose answer the server no longer holds (the resume is a 404) ends
// the call with the gone error and the text delivered — not a fallback, not a restart (even
// with StreamRescue "restart"), not a retry: asking again would bill the answer twice. Before
// any content it is the same: the answer was produced where it is gone.
func TestResponses_GoneBackgroundStreamEndsTheCallWithItsPartial(t *testing.T) {
	answer := words("w", 12)
	for _, c := range []struct {
		name     string
		cutAfter int // events: response.created, .in_progress, the item and part openings, then a word each
		partial  string
	}{
		{"after content", 7, "w1 w2 w3"},
		{"before content", 2, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			primary := mocks.NewServer(mocks.WithRouteScript(mocks.RouteResponses,
				mocks.Step{Text: answer, Cut: mocks.CutAbort, CutAfter: c.cutAfter, Expire: true}))
			defer primary.Close()
			secondary := mocks.NewServer()
			defer secondary.Close()
			cl := newClient(t, responsesProvider("primary", "", primary, policy()),
				responsesProvider("secondary", "org-other", secondary, policy()),
				anthropicProvider("claude", secondary, policy()), client.WithFallback("primary", "secondary", "claude"))
			req := hello()
			req.Background = true
			var r read
			st, err := cl.ChatStream(context.Background(), req, client.WithRescue(resilience.RescueRestart))
			if err == nil {
				r = readAll(st)
				st.Close()
				err = r.err
			}
			e := asProviderError(t, err)
			if !errors.Is(err, providers.ErrResponseGone) || e.Kind != providers.KindNotFound || e.Partial != c.partial ||
				r.all != c.partial || r.restarts != 0 || !strings.Contains(e.Message, "is gone") {
				t.Fatalf("%+v: %v", r, err)
			}
			if n := secondary.Journal().Len(); n != 0 {
				t.Fatalf("the call went elsewhere (%d requests)", n)
			}
			reqs := primary.Journal().Requests()
			if len(reqs) != 2 || reqs[0].Method != http.MethodPost || reqs[1].Method != http.MethodGet {
				t.Fatalf("%d requests to the primary: want the stream and its resume, nothing asked again", len(reqs))
			}
		})
	}
}

// With WithRestartIfGone the call starts over when its answer is gone: on the route that lost
// it first. After content the new answer follows a Restart delta; before content it is simply
// the answer.
func TestResponses_WithRestartIfGoneStartsOverOnTheSameRoute(t *testing.T) {
	for _, c := range []struct {
		name     string
		cutAfter int
		restarts int
	}{
		{"after content", 7, 1},
		{"before content", 2, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := mocks.NewServer(mocks.WithRouteScript(mocks.RouteResponses,
				mocks.Step{Text: words("old", 12), Cut: mocks.CutAbort, CutAfter: c.cutAfter, Expire: true},
				mocks.Reply("the new answer")))
			defer s.Close()
			other := mocks.NewServer()
			defer other.Close()
			cl := newClient(t, responsesProvider("primary", "", s, policy()), responsesProvider("other", "org-other", other, policy()),
				client.WithFallback("primary", "other"))
			req := hello()
			req.Background = true
			st, err := cl.ChatStream(context.Background(), req, client.WithRestartIfGone())
			if err != nil {
				t.Fatal(err)
			}
			r := readAll(st)
			st.Close()
			if r.err != nil || r.after != "the new answer" || r.restarts != c.restarts || !r.last.Done || st.Provider() != "primary" {
				t.Fatalf("%+v", r)
			}
			reqs := s.Journal().Requests()
			if len(reqs) != 3 || reqs[1].Method != http.MethodGet || reqs[2].Method != http.MethodPost || other.Journal().Len() != 0 {
				t.Fatalf("%d requests to the primary, %d to the other", len(reqs), other.Journal().Len())
			}
		})
	}
}

// A failure that is not a gone answer is rescued after content only as the call's StreamRescue
// says: WithRestartIfGone alone restarts nothing else.
func TestResponses_WithRestartIfGoneRestartsNothingElse(t *testing.T) {
	primary := mocks.NewServer(mocks.WithRouteScript(mocks.RouteResponses, mocks.TruncateStream(7)))
	defer primary.Close()
	secondary := mocks.NewServer()
	defer secondary.Close()
	cl := newClient(t, responsesProvider("primary", "", primary, policy()), responsesProvider("secondary", "org-other", secondary, policy()),
		client.WithFallback("primary", "secondary"))
	st, err := cl.ChatStream(context.Background(), hello(), client.WithRestartIfGone())
	if err != nil {
		t.Fatal(err)
	}
	r := readAll(st)
	st.Close()
	if e := asProviderError(t, r.err); e.Kind == "" || providers.Gone(r.err) || r.restarts != 0 || secondary.Journal().Len() != 0 {
		t.Fatalf("%+v", r)
	}
}

// A call that continues from a stored answer never starts over, even when it opted in: without
// that answer there is nothing to start from.
func TestResponses_PinnedCallNeverRestartsWhenGone(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	cl := newClient(t, responsesProvider("openai", "", s, policy()))
	first, err := cl.Chat(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	if !s.Forget(first.Stored.ID) {
		t.Fatal("the fake did not hold the answer")
	}
	next := &providers.ChatRequest{Messages: hello().Messages, Previous: first.Stored}
	before := s.Journal().Len()
	_, err = cl.Chat(context.Background(), next, client.WithRestartIfGone())
	if !errors.Is(err, providers.ErrResponseGone) || s.Journal().Len() != before+1 {
		t.Fatalf("%d requests: %v", s.Journal().Len()-before, err)
	}
}
