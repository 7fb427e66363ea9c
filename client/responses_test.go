package client_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/internal/testkit/backend"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

// responsesProvider adds a provider named name that calls the Responses API of s; org tells
// endpoints apart (it is part of a provider's sharing scope, the Origin of its state).
func responsesProvider(name, org string, s *mocks.Server, o resilience.Options) client.Option {
	return client.WithProvider(name, o, func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{Name: name, API: openai.Responses, BaseURL: s.OpenAIBaseURL(), APIKey: sentinelKey,
			HTTPClient: hc, Model: "gpt-4o-mini", Organization: org})
	})
}

// A conversation whose earlier turn came from the Responses API, with its reasoning items:
// when the Responses provider is down (503), Chat and ChatStream fall back to Anthropic,
// which gets the conversation without them.
func TestResponses_FallsBackToAnthropicWithoutTheReasoningItems(t *testing.T) {
	s := mocks.NewServer(mocks.WithRouteScript(mocks.RouteResponses, mocks.Status(503).Always()), mocks.WithReply("Claude here."))
	defer s.Close()
	tel := &fakeTelemetry{}
	c := newClient(t, responsesProvider("openai", "", s, policy()), anthropicProvider("claude", s, policy()),
		client.WithFallback("openai", "claude"), client.WithTelemetry(tel))
	p := c.Provider("openai").(*openai.Provider)
	earlier := providers.Message{Role: providers.RoleAssistant, Content: "4.", Thinking: []providers.ThinkingBlock{
		{ID: "rs_1", Text: "adding", Encrypted: "enc_fake_x", Origin: p.SharingScope()}}}
	req := &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: "2+2?"}, earlier,
		{Role: providers.RoleUser, Content: "And 3+3?"}}}

	resp, err := c.Chat(context.Background(), req)
	if err != nil || resp.Provider != "claude" || resp.Message.Content != "Claude here." || resp.Stored != nil || resp.FailedAttempts == 0 {
		t.Fatalf("%v %+v", err, resp)
	}
	st, err := c.ChatStream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	r := readAll(st)
	st.Close()
	if r.err != nil || r.all != "Claude here." || !r.last.Done || st.Provider() != "claude" {
		t.Fatalf("stream %+v", r)
	}
	for _, r := range s.Journal().Requests() {
		if r.Path == "/v1/messages" && (strings.Contains(string(r.Body), "rs_1") || strings.Contains(string(r.Body), "enc_fake")) {
			t.Fatalf("the reasoning items reached Anthropic: %s", r.Body)
		}
	}
	if _, tries, _ := tel.snapshot(); len(tries) != 4 || tries[0].Provider != "openai" || tries[0].Next != "claude" || tries[1].Provider != "claude" {
		t.Fatalf("telemetry tries %+v", tries)
	}
}

// A call that continues from a stored answer goes to the provider that stored it and to no
// other: when that provider fails, the call fails with its failure — Anthropic, which cannot
// hold the conversation, and another Responses endpoint, which does not, are never asked.
func TestResponses_PreviousPinsTheCallToTheProviderThatStoredIt(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("ok"))
	defer s.Close()
	c := newClient(t, responsesProvider("openai", "", s, policy()), responsesProvider("other", "org-other", s, policy()),
		anthropicProvider("claude", s, policy()), client.WithFallback("openai", "other", "claude"))
	first, err := c.Chat(context.Background(), hello())
	if err != nil || first.Stored == nil {
		t.Fatalf("%v %+v", err, first)
	}
	next := &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: "and then?"}}, Previous: first.Stored}
	resp, err := c.Chat(context.Background(), next)
	if err != nil || resp.Provider != "openai" {
		t.Fatalf("%v %+v", err, resp)
	}

	s.RouteScript(mocks.RouteResponses, mocks.Status(502).Always())
	before := s.Journal().Len()
	_, err = c.Chat(context.Background(), next)
	if e := asProviderError(t, err); e.Kind != providers.KindUnavailable || e.Provider != "openai" || strings.Contains(err.Error(), sentinelKey) ||
		!strings.Contains(e.Message, "not sent elsewhere: the call continues from the stored answer "+first.Stored.ID+", which only openai holds") {
		t.Fatalf("%v", err)
	}
	st, err := c.ChatStream(context.Background(), next)
	if err == nil {
		st.Close()
		t.Fatal("the stream fell back")
	}
	if e := asProviderError(t, err); e.Kind != providers.KindUnavailable {
		t.Fatalf("stream: %v", err)
	}
	for _, r := range s.Journal().Requests()[before:] {
		if r.Path != "/v1/responses" || r.Header.Get("OpenAI-Organization") != "" {
			t.Fatalf("a provider that does not hold the answer was asked: %s %v", r.Path, r.Header)
		}
	}
}

// The stored answer of the second provider of the chain pins the call to it; one that no
// provider of the chain holds is refused before anything is sent.
func TestResponses_PreviousSkipsToItsProviderOrIsRefused(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("ok"))
	defer s.Close()
	c := newClient(t, responsesProvider("openai", "", s, policy()), responsesProvider("other", "org-other", s, policy()),
		client.WithFallback("openai", "other"))
	first, err := c.Chat(context.Background(), hello(), client.WithProviders("other"))
	if err != nil || first.Provider != "other" {
		t.Fatalf("%v %+v", err, first)
	}
	next := &providers.ChatRequest{Messages: hello().Messages, Previous: first.Stored}
	if resp, err := c.Chat(context.Background(), next); err != nil || resp.Provider != "other" {
		t.Fatalf("%v %+v", err, resp)
	}
	sent := s.Journal().Len()
	next.Previous = &providers.StoredResponse{ID: first.Stored.ID, Origin: "an endpoint this client does not have"}
	_, err = c.Chat(context.Background(), next)
	if e := asProviderError(t, err); e.Kind != providers.KindBadRequest || !strings.Contains(e.Message, "does not hold the stored answer") {
		t.Fatalf("%v", err)
	}
	if s.Journal().Len() != sent {
		t.Fatal("a request was sent")
	}
}

// Per-call options reach the Responses wire: extra fields for the OpenAI system, the request
// ID; the fields that decide the kind of call, or the stored state it continues from, are not
// the caller's to set.
func TestResponses_PerCallOptions(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("ok"))
	defer s.Close()
	c := newClient(t, responsesProvider("openai", "", s, policy()))
	_, err := c.Chat(context.Background(), hello(), client.WithRequestID("call-7"),
		client.WithExtraFields(providers.SystemOpenAI, map[string]any{"service_tier": "flex"}))
	if err != nil {
		t.Fatal(err)
	}
	r, _ := s.Journal().Last()
	if !strings.Contains(string(r.Body), `"service_tier":"flex"`) || r.Header.Get(client.RequestIDHeader) != "call-7" {
		t.Fatalf("%s %v", r.Body, r.Header)
	}
	for _, field := range []string{"previous_response_id", "background", "stream"} {
		_, err := c.Chat(context.Background(), hello(), client.WithExtraFields("openai", map[string]any{field: true}))
		if e := asProviderError(t, err); e.Kind != providers.KindBadRequest || !strings.Contains(e.Message, field) {
			t.Errorf("%s: %v", field, err)
		}
	}
}

// A background call goes only to a route that stores answers (Anthropic, first in the chain,
// is skipped), comes back pending with its stored answer, and is never hedged: a hedge would
// start the work twice. It is read back and cancelled on the route that stored it, and only
// there.
func TestResponses_BackgroundCallIsNeverHedged(t *testing.T) {
	s := mocks.NewServer(mocks.WithRouteScript(mocks.RouteResponses, mocks.Step{Delay: 20 * time.Millisecond}), mocks.WithReply("ok"))
	defer s.Close()
	c := newClient(t, anthropicProvider("claude", s, policy()), responsesProvider("openai", "", s, policy()),
		responsesProvider("other", "org-other", s, policy()), client.WithFallback("claude", "openai", "other"))
	req := hello()
	req.Background = true
	resp, err := c.Chat(context.Background(), req, client.WithHedge(time.Millisecond, 1))
	if err != nil || resp.Provider != "openai" || !resp.Status.Pending() || resp.Stored == nil || resp.Hedges != 0 {
		t.Fatalf("%v %+v", err, resp)
	}
	if n := s.Journal().Len(); n != 1 {
		t.Fatalf("%d requests: the background call was hedged or sent to Anthropic", n)
	}
	for {
		got, err := c.Retrieve(context.Background(), *resp.Stored)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Status.Pending() {
			if got.Message.Content != "ok" || got.Deployment != "openai" {
				t.Fatalf("%+v", got)
			}
			break
		}
	}
	if got, err := c.Cancel(context.Background(), *resp.Stored); err != nil || got.Status != providers.StatusCompleted {
		t.Fatalf("cancel after completion: %+v %v", got, err)
	}
	sent := s.Journal().Len()
	for _, stored := range []providers.StoredResponse{{ID: resp.Stored.ID}, {ID: resp.Stored.ID, Origin: "an endpoint this client does not have"}} {
		if _, err := c.Retrieve(context.Background(), stored); asProviderError(t, err).Kind != providers.KindBadRequest {
			t.Fatalf("%+v: %v", stored, err)
		}
	}
	if s.Journal().Len() != sent {
		t.Fatal("a refused read was sent")
	}
}

// A cut background stream reads the rest of its answer on the route that keeps it, before any
// rescue: the caller gets the whole answer from that route, and no other route is asked.
func TestResponses_CutBackgroundStreamResumesBeforeAnyRescue(t *testing.T) {
	answer := "one two three four five six seven eight"
	s := mocks.NewServer(mocks.WithRouteScript(mocks.RouteResponses, mocks.Step{Text: answer, Cut: mocks.CutAbort, CutAfter: 6}))
	defer s.Close()
	c := newClient(t, responsesProvider("openai", "", s, policy()), responsesProvider("other", "org-other", s, policy()),
		client.WithFallback("openai", "other"))
	req := hello()
	req.Background = true
	st, err := c.ChatStream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	r := readAll(st)
	st.Close()
	if r.err != nil || r.all != answer || !r.last.Done || st.Provider() != "openai" {
		t.Fatalf("%+v", r)
	}
	reqs := s.Journal().Requests()
	if len(reqs) != 2 || reqs[1].Method != http.MethodGet || reqs[1].Header.Get("OpenAI-Organization") != "" {
		t.Fatalf("%d requests: want the stream and its resume on the same route", len(reqs))
	}
}

// A background stream that goes silent is cut at the idle limit and read on from where it
// stopped, on the same route: the whole answer, no restart, the fallback never asked.
//
// The clock moves once, by the idle limit, and only once the Read after the 20th word waits
// with its limit armed (readGate): a Read not yet armed when it moved would wait for good, and
// a clock moved again while the resume runs would cut the resume by the route's own limits
// (the total limit before its headers, the idle limit during one of its Reads) and send the
// call to the fallback — the test passed only when the resume beat the next 100 ms step.
func TestResponses_StalledBackgroundStreamResumesAtTheIdleLimit(t *testing.T) {
	const silentAfter = 20
	stall := mocks.Reply(words("p", 60))
	stall.StallAfter = silentAfter // silent until the client goes away
	primary := mocks.NewServer(mocks.WithRouteScript(mocks.RouteResponses, stall))
	defer primary.Close()
	secondary := mocks.NewServer(mocks.WithReply(words("s", 60)))
	defer secondary.Close()
	clock := backend.NewManualClock()
	var rec recorder
	gate := newReadGate(t)
	o := policy()
	o.StreamIdleTimeoutSeconds = 5
	// The idle limit alone: read on a clock that stands still, the first 20 words may teach
	// the route a rhythm of no wait at all, whose stall limit (its 1 s floor) then cuts first.
	o.StreamStallFactor = 0
	c := newClient(t, client.WithClock(clock), client.WithObserver(rec.observe), client.WithBaseTransport(gate),
		responsesProvider("primary", "", primary, o), responsesProvider("secondary", "org-other", secondary, o),
		client.WithFallback("primary", "secondary"))
	req := hello()
	req.Background = true
	st, err := c.ChatStream(context.Background(), req, client.WithRescue(resilience.RescueRestart))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// The reader notes how many Reads had begun on the wire when the last word before the
	// silence came: a Read begun after it waits in the silence.
	var silent, ended atomic.Bool
	var begun atomic.Int64
	done := make(chan read, 1)
	go func() {
		var r read
		var all strings.Builder
		n := 0
		for d, err := range st.Deltas() {
			if err != nil {
				r.err = err
				break
			}
			if d.Restart {
				r.restarts++
			}
			if d.Text != "" {
				if n++; n == silentAfter {
					begun.Store(gate.reads.Load())
					silent.Store(true)
				}
			}
			all.WriteString(d.Text)
		}
		r.all = all.String()
		ended.Store(true)
		done <- r
	}()
	waitFor(t, "a Read to wait in the silence", func() bool {
		return ended.Load() || silent.Load() && gate.reads.Load() > begun.Load() && gate.waiting.Load() > 0
	})
	if n := primary.Journal().Len(); ended.Load() || n != 1 {
		t.Fatalf("before the clock moved: the stream ended %v, %d requests to the primary (want the stream alone)", ended.Load(), n)
	}
	clock.Advance(5 * time.Second)
	var r read
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the silent stream was not cut at the idle limit")
	}
	if r.err != nil || r.restarts != 0 || r.all != words("p", 60) || secondary.Journal().Len() != 0 {
		t.Fatalf("err %v, restarts %d, text %q, secondary asked %d times", r.err, r.restarts, r.all, secondary.Journal().Len())
	}
	if reqs := primary.Journal().Requests(); len(reqs) != 2 || reqs[1].Method != http.MethodGet {
		t.Fatalf("%d requests to the primary: want the stream and one resume", len(reqs))
	}
	if n, all := rec.timeouts(resilience.TimeoutStreamIdle), rec.timeoutCount(); n != 1 || all != 1 {
		t.Fatalf("%d idle timeouts of %d, want the one cut", n, all)
	}
}

// readGate is a base transport (client.WithBaseTransport) that counts the Reads of the answers'
// bodies, begun and under way. It sits under the pipeline, whose Read arms its time limits
// before it reads on: a Read under way here is armed, so a test may move the clock.
type readGate struct {
	rt      http.RoundTripper
	reads   atomic.Int64
	waiting atomic.Int64
}

func newReadGate(t *testing.T) *readGate {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return &readGate{rt: tr}
}

func (g *readGate) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := g.rt.RoundTrip(req)
	if err == nil {
		resp.Body = gateBody{resp.Body, g}
	}
	return resp, err
}

type gateBody struct {
	io.ReadCloser
	g *readGate
}

func (b gateBody) Read(p []byte) (int, error) {
	b.g.reads.Add(1)
	b.g.waiting.Add(1)
	defer b.g.waiting.Add(-1)
	return b.ReadCloser.Read(p)
}
