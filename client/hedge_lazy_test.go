package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
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
	// A server handler's context can be cancelled: what passes its end on to the try is
	// counted too.
	handler, cancel := context.WithCancel(context.Background())
	defer cancel()
	chat := func(ctx context.Context, c *client.Client) func() {
		return func() {
			if _, err := c.Chat(ctx, benchHello()); err != nil {
				t.Fatal(err)
			}
		}
	}
	stream := func(ctx context.Context, c *client.Client) func() {
		return func() {
			st, err := c.ChatStream(ctx, benchHello())
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
		run  func(context.Context, *client.Client) func()
	}{{"Chat", chat}, {"ChatStream", stream}} {
		for _, ctx := range []context.Context{context.Background(), handler} {
			want := testing.AllocsPerRun(200, tc.run(ctx, plain))
			if got := testing.AllocsPerRun(200, tc.run(ctx, armed)); got > want {
				t.Errorf("%s (caller's context cancellable: %v): %v allocations with hedging armed, %v without", tc.name,
					ctx.Done() != nil, got, want)
			}
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

// A hedged stream whose hedge never went out reads under its first try's context, the race's
// own, until it is closed: the caller's cancellation ends that context while the stream is
// read, and once the stream is closed the caller's end no longer reaches it, so the call that
// reuses the race streams on (its context alive until its own Close).
func TestHedge_AStreamThatWonAloneFollowsItsCallerUntilClose(t *testing.T) {
	p := &ctxProvider{}
	o := policy()
	o.HedgeAfterSeconds = 60
	c := newClient(t, client.WithProvider("llm", o, func(*http.Client) (providers.Provider, error) { return p, nil }))
	streamCtx := func(caller context.Context) (*client.Stream, context.Context) {
		t.Helper()
		st, err := c.ChatStream(caller, hello())
		if err != nil {
			t.Fatal(err)
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		return st, p.ctx
	}
	readAllOf := func(st *client.Stream) {
		t.Helper()
		if r := readAll(st); r.err != nil {
			t.Fatal(r.err)
		}
	}

	// Cancelled while read: the stream's context ends, with the caller's cause.
	gone := errors.New("the caller's handler returned")
	caller, cancel := context.WithCancelCause(context.Background())
	st, ctx := streamCtx(caller)
	cancel(gone)
	waitFor(t, "the caller's end to reach the stream", func() bool { return ctx.Err() != nil })
	if cause := context.Cause(ctx); cause != gone {
		t.Fatalf("the stream's context ended with %v, not the caller's cause", cause)
	}
	_ = st.Close()

	// Closed, then the caller ends: the calls after are not touched.
	for range 20 {
		caller, cancel := context.WithCancel(context.Background())
		st, ctx := streamCtx(caller)
		readAllOf(st)
		_ = st.Close()
		cancel()
		next, stop := context.WithCancel(context.Background())
		st, ctx = streamCtx(next)
		readAllOf(st)
		if ctx.Err() != nil {
			t.Fatalf("the next call's stream context ended before its Close: %v", context.Cause(ctx))
		}
		_ = st.Close()
		stop()
	}
}

// The caller's end reaches a first try that runs under the race's own context as it reaches
// one that does not: with hedging armed (never firing) and without, a caller's deadline that
// passes before a Chat's answer, before a stream's first token or in the middle of the stream fails the call as the caller's
// end (KindCanceled, 499) matching context.DeadlineExceeded and not context.Canceled, a
// cancellation as one matching context.Canceled only; the server sees its request end.
func TestHedge_AnArmedTryEndsWithItsCallerAsAnUnhedgedOne(t *testing.T) {
	for _, tc := range []struct {
		name     string
		step     mocks.Step
		deadline time.Duration
		reads    int // content deltas read before the end
		chat     bool
	}{
		{"chat", mocks.Reply("late").WithDelay(time.Minute), 200 * time.Millisecond, 0, true},
		{"before-first-token", mocks.SlowFirstToken(time.Minute), 200 * time.Millisecond, 0, false},
		{"mid-stream", mocks.StallAfter(2, time.Minute), time.Second, 2, false},
	} {
		for _, end := range []string{"deadline", "cancel"} {
			for _, armed := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/armed=%v", tc.name, end, armed), func(t *testing.T) {
					s := mocks.NewServer(mocks.WithScript(tc.step.Always()))
					defer s.Close()
					o := policy()
					if armed {
						o.HedgeAfterSeconds = 60
					}
					c := newClient(t, openAIProvider("llm", s, o))
					var ctx context.Context
					var cancel context.CancelFunc
					if end == "deadline" {
						ctx, cancel = context.WithTimeout(context.Background(), tc.deadline)
					} else {
						ctx, cancel = context.WithCancel(context.Background())
					}
					defer cancel()
					if end == "cancel" && tc.reads == 0 {
						go func() {
							waitFor(t, "the request", func() bool { return s.Journal().InFlight() == 1 })
							cancel()
						}()
					}
					err := func() error {
						if tc.chat {
							_, err := c.Chat(ctx, hello())
							return err
						}
						st, err := c.ChatStream(ctx, hello())
						if err != nil {
							return err
						}
						defer st.Close()
						n := 0
						for d, err := range st.Deltas() {
							if err != nil {
								return err
							}
							if d.Text != "" {
								if n++; n == tc.reads && end == "cancel" {
									cancel()
								}
							}
						}
						return nil
					}()
					want, other := context.Canceled, context.DeadlineExceeded
					if end == "deadline" {
						want, other = other, want
					}
					if !errors.Is(err, want) || errors.Is(err, other) {
						t.Fatalf("got %v, want %v", err, want)
					}
					var pe *providers.Error
					if !errors.As(err, &pe) || pe.Kind != providers.KindCanceled {
						t.Fatalf("got %#v, want a %s failure", err, providers.KindCanceled)
					}
					if status, _ := client.HTTPStatus(err); status != 499 {
						t.Fatalf("status %d, want 499 (a caller's own deadline is the caller's end)", status)
					}
					waitFor(t, "the server to see the request end", func() bool { return s.Journal().InFlight() == 0 })
				})
			}
		}
	}
}

// A stream whose first try ran under the race's own context, its caller's context cancellable
// and never cancelled, leaves no goroutine behind once closed: what passes the caller's end on
// to the stream stops at the Close.
func TestHedge_WatchingTheCallerEndsAtClose(t *testing.T) {
	p := &ctxProvider{}
	o := policy()
	o.HedgeAfterSeconds = 60
	c := newClient(t, client.WithProvider("llm", o, func(*http.Client) (providers.Provider, error) { return p, nil }))
	caller, cancel := context.WithCancel(context.Background())
	defer cancel()
	before := runtime.NumGoroutine()
	for range 50 {
		st, err := c.ChatStream(caller, hello())
		if err != nil {
			t.Fatal(err)
		}
		if r := readAll(st); r.err != nil {
			t.Fatal(r.err)
		}
		_ = st.Close()
	}
	waitFor(t, "the goroutines to end", func() bool { return runtime.NumGoroutine() <= before+2 })
}
