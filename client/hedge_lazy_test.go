package client_test

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/internal/testkit/backend"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

// A call under a hedging policy whose hedge never goes out allocates no more than the same
// call without hedging: the race's state is reused from call to call (Chat and ChatStream, as
// BenchmarkCallPath measures them).
func TestHedge_ArmedCostsNothingUntilItFires(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector drops what a sync.Pool holds at random")
	}
	hedged := benchPolicy()
	hedged.HedgeAfterSeconds = 10
	newOn := func(o resilience.Options) *client.Client {
		return newClient(t, client.WithProvider("llm", o, func(hc *http.Client) (providers.Provider, error) {
			return openai.New(openai.Config{Name: "llm", BaseURL: "http://127.0.0.1:1/v1", APIKey: "sk-bench", HTTPClient: hc,
				Model: "gpt-4o-mini"})
		}), client.WithBaseTransport(pathTransport{}))
	}
	chat := func(c *client.Client) func() {
		return func() {
			if _, err := c.Chat(context.Background(), benchHello()); err != nil {
				t.Fatal(err)
			}
		}
	}
	stream := func(c *client.Client) func() {
		return func() {
			st, err := c.ChatStream(context.Background(), benchHello())
			if err != nil {
				t.Fatal(err)
			}
			for _, err := range st.Deltas() {
				if err != nil {
					t.Fatal(err)
				}
			}
			_ = st.Close()
		}
	}
	plain, armed := newOn(benchPolicy()), newOn(hedged)
	for _, tc := range []struct {
		name string
		run  func(*client.Client) func()
	}{{"Chat", chat}, {"ChatStream", stream}} {
		want := testing.AllocsPerRun(200, tc.run(plain))
		if got := testing.AllocsPerRun(200, tc.run(armed)); got > want {
			t.Errorf("%s: %v allocations with hedging armed, %v without", tc.name, got, want)
		}
	}
}

// fireClock is a manual clock that keeps the function of the timers of delay d it makes (the
// hedge's), for a test to run one late: as a timer does that fires just as it is stopped.
type fireClock struct {
	*backend.ManualClock
	d  time.Duration
	mu sync.Mutex
	f  func()
}

func (c *fireClock) AfterFunc(d time.Duration, f func()) resilience.Timer {
	if d == c.d {
		c.mu.Lock()
		c.f = f
		c.mu.Unlock()
	}
	return c.ManualClock.AfterFunc(d, f)
}

// A hedge timer that fires after its call ended (stopped too late) does not hedge the next
// call that reuses the race early: that call's hedge is due a delay after it starts.
func TestHedge_ALateTimerOfAnEarlierCallDoesNotHedgeEarly(t *testing.T) {
	primary := mocks.NewServer(mocks.WithScript(mocks.Reply("quick"), mocks.Reply("slower").WithDelay(300*time.Millisecond)))
	defer primary.Close()
	secondary := mocks.NewServer(mocks.WithReply("hedge"))
	defer secondary.Close()
	clk := &fireClock{ManualClock: backend.NewManualClock(), d: 97 * time.Second}
	c := newClient(t, client.WithClock(clk), openAIProvider("primary", primary, hedgePolicy(clk.d)),
		openAIProvider("secondary", secondary, policy()), client.WithFallback("primary", "secondary"))
	resp, err := c.Chat(context.Background(), hello())
	if err != nil || resp.Message.Content != "quick" || resp.Hedges != 0 {
		t.Fatalf("%+v %v", resp, err)
	}
	clk.mu.Lock()
	late := clk.f
	clk.mu.Unlock()
	if late == nil {
		t.Fatal("no hedge timer was armed")
	}
	late() // the first call's timer, firing after its call ended
	resp, err = c.Chat(context.Background(), hello())
	if err != nil || resp.Message.Content != "slower" || resp.Hedges != 0 || resp.HedgeWon {
		t.Fatalf("%+v %v", resp, err)
	}
	if n := secondary.Journal().Len(); n != 0 {
		t.Fatalf("the secondary saw %d requests: a late timer hedged a call before its delay", n)
	}
}

// A race reused from a call that sent no hedge still hedges, and cancels its first try when
// the hedge wins: the context the race reuses is cancelled like a new one.
func TestHedge_AReusedRaceCancelsItsFirstTryWhenTheHedgeWins(t *testing.T) {
	primary := mocks.NewServer(mocks.WithScript(mocks.Reply("quick"), mocks.Reply("slow").WithDelay(time.Minute).Always()))
	defer primary.Close()
	secondary := mocks.NewServer(mocks.WithReply("hedge"))
	defer secondary.Close()
	clk := newArmClock(20 * time.Millisecond)
	c := newClient(t, client.WithClock(clk), openAIProvider("primary", primary, hedgePolicy(clk.d)),
		openAIProvider("secondary", secondary, policy()), client.WithFallback("primary", "secondary"))
	for i := range 3 {
		done := make(chan *providers.ChatResponse, 1)
		go func() {
			resp, err := c.Chat(context.Background(), hello())
			if err != nil {
				t.Error(err)
			}
			done <- resp
		}()
		<-clk.armed
		if i == 0 {
			if resp := <-done; resp == nil || resp.Message.Content != "quick" || resp.Hedges != 0 {
				t.Fatalf("%+v", resp)
			}
			continue
		}
		waitFor(t, "the first try's request", func() bool { return primary.Journal().Len() == i+1 })
		clk.Advance(clk.d)
		if resp := <-done; resp == nil || resp.Message.Content != "hedge" || !resp.HedgeWon {
			t.Fatalf("call %d: %+v", i, resp)
		}
		waitFor(t, "the first try to be cancelled", func() bool { return primary.Journal().InFlight() == 0 })
	}
}

// ctxProvider streams one word and keeps the context of the last stream it was asked for.
type ctxProvider struct {
	embedOnly
	mu  sync.Mutex
	ctx context.Context
}

func (p *ctxProvider) ChatStream(ctx context.Context, _ *providers.ChatRequest) (providers.Stream, error) {
	p.mu.Lock()
	p.ctx = ctx
	p.mu.Unlock()
	return &wordStream{}, nil
}

func (p *ctxProvider) Describe() providers.Description {
	return providers.Description{System: "custom", Capabilities: providers.CapChat | providers.CapStreaming}
}

// wordStream delivers one word and its final event, then ends.
type wordStream struct{ sent int }

func (s *wordStream) Recv() (providers.Delta, error) {
	s.sent++
	switch s.sent {
	case 1:
		return providers.Delta{Text: "hello"}, nil
	case 2:
		return providers.Delta{Done: true, FinishReason: providers.FinishStop}, nil
	}
	return providers.Delta{}, io.EOF
}
func (*wordStream) Close() error { return nil }

// A hedged stream whose hedge never went out reads under its first try's context until it is
// closed, and a caller's context that can be cancelled no longer holds that context after: the
// stream's Close ends it.
func TestHedge_AStreamThatWonAloneEndsItsContextAtClose(t *testing.T) {
	p := &ctxProvider{}
	o := policy()
	o.HedgeAfterSeconds = 60
	c := newClient(t, client.WithProvider("llm", o, func(*http.Client) (providers.Provider, error) { return p, nil }))
	caller, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := c.ChatStream(caller, hello())
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range st.Deltas() {
		if err != nil {
			t.Fatal(err)
		}
	}
	p.mu.Lock()
	ctx := p.ctx
	p.mu.Unlock()
	if ctx.Err() != nil {
		t.Fatalf("the stream's context ended before its Close: %v", ctx.Err())
	}
	_ = st.Close()
	if ctx.Err() == nil {
		t.Fatal("the stream's context outlived its Close")
	}
}
