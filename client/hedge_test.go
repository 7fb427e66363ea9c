package client_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/internal/testkit/backend"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// hedgePolicy hedges after delay, with a retry budget that allows every hedge the tests send.
func hedgePolicy(delay time.Duration) resilience.Options {
	o := policy()
	o.HedgeAfterSeconds = delay.Seconds()
	o.RetryBudgetPercent, o.RetryBudgetFloor = 100, 100
	return o
}

// A primary that sits on the call past the hedge delay is hedged to the next provider, whose
// answer serves the call; the primary's request is cancelled, never counted against its
// circuit, and the answer says it was hedged.
func TestHedge_ASlowPrimaryLosesToTheHedge(t *testing.T) {
	slow := mocks.NewServer(mocks.WithScript(mocks.Reply("slow").WithDelay(time.Minute).Always()))
	defer slow.Close()
	fast := mocks.NewServer(mocks.WithReply("fast"))
	defer fast.Close()
	o := hedgePolicy(20 * time.Millisecond)
	o.CircuitBreakerThreshold = 1
	clk := newArmClock(20 * time.Millisecond)
	c := newClient(t, client.WithClock(clk), openAIProvider("primary", slow, o), openAIProvider("secondary", fast, policy()),
		client.WithFallback("primary", "secondary"))
	for i := range 3 {
		type result struct {
			resp *providers.ChatResponse
			err  error
		}
		done := make(chan result, 1)
		go func() { resp, err := c.Chat(context.Background(), hello()); done <- result{resp, err} }()
		// The hedge goes out once the primary's request reached the server, not on the wall
		// clock: a loser cancelled before it was sent would never be journaled.
		waitFor(t, "the primary's request", func() bool { return slow.Journal().Len() == i+1 })
		<-clk.armed
		clk.Advance(20 * time.Millisecond)
		r := <-done
		resp, err := r.resp, r.err
		if err != nil {
			t.Fatal(err)
		}
		if resp.Provider != "secondary" || resp.Message.Content != "fast" || resp.Hedges != 1 || !resp.HedgeWon {
			t.Fatalf("served by %s (%q), hedges %d, won %v", resp.Provider, resp.Message.Content, resp.Hedges, resp.HedgeWon)
		}
	}
	if st := c.Circuits()["primary"].CircuitState(); st != resilience.CircuitClosed {
		t.Fatalf("the primary's circuit is %v after losing three hedges: a cancelled loser counted as a failure", st)
	}
	waitFor(t, "the losers' requests to end at the server", func() bool { return slow.Journal().InFlight() == 0 })
	if n := slow.Journal().Len(); n != 3 {
		t.Fatalf("the primary saw %d requests, want 3", n)
	}
}

// A primary that answers before the hedge delay is never hedged.
func TestHedge_AFastPrimaryIsNotHedged(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("hi"))
	defer s.Close()
	other := mocks.NewServer()
	defer other.Close()
	c := newClient(t, openAIProvider("primary", s, hedgePolicy(time.Minute)), openAIProvider("secondary", other, policy()),
		client.WithFallback("primary", "secondary"))
	resp, err := c.Chat(context.Background(), hello())
	if err != nil || resp.Provider != "primary" || resp.Hedges != 0 || resp.HedgeWon {
		t.Fatalf("%+v %v", resp, err)
	}
	if other.Journal().Len() != 0 {
		t.Fatal("a hedge went out")
	}
}

// No hedge goes into an open circuit, past a spent retry budget, or out for a call that sends
// extra body fields (they may act on the world) unless the call asks for it; WithoutHedge
// turns a policy's hedging off; the primary then serves, late.
func TestHedge_OnlyWhereItMaySafelyGo(t *testing.T) {
	slowly := func() *mocks.Server {
		return mocks.NewServer(mocks.WithScript(mocks.Reply("slow").WithDelay(150 * time.Millisecond).Always()))
	}
	t.Run("open circuit", func(t *testing.T) {
		slow, fast := slowly(), mocks.NewServer()
		defer slow.Close()
		defer fast.Close()
		c := newClient(t, openAIProvider("primary", slow, hedgePolicy(10*time.Millisecond)), openAIProvider("secondary", fast, policy()),
			client.WithFallback("primary", "secondary"))
		c.Circuits()["secondary"].OpenFor(time.Minute)
		resp, err := c.Chat(context.Background(), hello())
		if err != nil || resp.Provider != "primary" || resp.Hedges != 0 || fast.Journal().Len() != 0 {
			t.Fatalf("%+v %v", resp, err)
		}
	})
	t.Run("budget", func(t *testing.T) {
		slow, fast := slowly(), mocks.NewServer()
		defer slow.Close()
		defer fast.Close()
		o := hedgePolicy(10 * time.Millisecond)
		o.RetryBudgetPercent, o.RetryBudgetFloor = 1, 0 // 1 % of one call: no room
		c := newClient(t, openAIProvider("primary", slow, o), openAIProvider("secondary", fast, policy()),
			client.WithFallback("primary", "secondary"))
		resp, err := c.Chat(context.Background(), hello())
		if err != nil || resp.Provider != "primary" || resp.Hedges != 0 || fast.Journal().Len() != 0 {
			t.Fatalf("%+v %v", resp, err)
		}
	})
	for _, tc := range []struct {
		name   string
		opts   []client.CallOption
		hedges int
	}{
		{"extra fields", []client.CallOption{client.WithExtraFields("primary", map[string]any{"store": true})}, 0},
		{"extra fields, hedge asked for", []client.CallOption{client.WithExtraFields("primary", map[string]any{"store": true}),
			client.WithHedge(10*time.Millisecond, 1)}, 1},
		{"without hedge", []client.CallOption{client.WithoutHedge()}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slow, fast := slowly(), mocks.NewServer()
			defer slow.Close()
			defer fast.Close()
			c := newClient(t, openAIProvider("primary", slow, hedgePolicy(10*time.Millisecond)), openAIProvider("secondary", fast, policy()),
				client.WithFallback("primary", "secondary"))
			resp, err := c.Chat(context.Background(), hello(), tc.opts...)
			if err != nil || resp.Hedges != tc.hedges || fast.Journal().Len() != tc.hedges {
				t.Fatalf("%+v %v: want %d hedges", resp, err, tc.hedges)
			}
		})
	}
}

// A stream is hedged on its first token: the hedge's stream serves the whole answer, read to
// its end after the loser was cancelled.
func TestHedge_AStreamIsHedgedOnItsFirstToken(t *testing.T) {
	slow := mocks.NewServer(mocks.WithScript(mocks.SlowFirstToken(time.Minute).Always()))
	defer slow.Close()
	fast := mocks.NewServer(mocks.WithReply("a whole answer from the hedge"))
	defer fast.Close()
	c := newClient(t, openAIProvider("primary", slow, hedgePolicy(20*time.Millisecond)), openAIProvider("secondary", fast, policy()),
		client.WithFallback("primary", "secondary"))
	st, err := c.ChatStream(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var text strings.Builder
	for {
		d, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		text.WriteString(d.Text)
	}
	if text.String() != "a whole answer from the hedge" || st.Provider() != "secondary" {
		t.Fatalf("%q from %s", text.String(), st.Provider())
	}
	if a := st.Accounting(); a.Hedges != 1 || !a.HedgeWon {
		t.Fatalf("accounting %+v", a)
	}
	waitFor(t, "the loser's request to end at the server", func() bool { return slow.Journal().InFlight() == 0 })
}

// When the hedge fails while the primary is still out, the primary serves; when both fail,
// the call walks on with both recorded.
func TestHedge_FailuresOfEitherTry(t *testing.T) {
	slow := mocks.NewServer(mocks.WithScript(mocks.Reply("late but fine").WithDelay(100 * time.Millisecond).Always()))
	defer slow.Close()
	broken := mocks.NewServer(mocks.WithScript(mocks.Status(500).Always()))
	defer broken.Close()
	c := newClient(t, openAIProvider("primary", slow, hedgePolicy(10*time.Millisecond)), openAIProvider("secondary", broken, policy()),
		client.WithFallback("primary", "secondary"))
	resp, err := c.Chat(context.Background(), hello())
	if err != nil || resp.Provider != "primary" || resp.Hedges != 1 || resp.HedgeWon {
		t.Fatalf("%+v %v", resp, err)
	}

	failing := mocks.NewServer(mocks.WithScript(mocks.Status(500).WithDelay(100 * time.Millisecond).Always()))
	defer failing.Close()
	third := mocks.NewServer(mocks.WithReply("third"))
	defer third.Close()
	c = newClient(t, openAIProvider("primary", failing, hedgePolicy(10*time.Millisecond)), openAIProvider("secondary", broken, policy()),
		openAIProvider("third", third, policy()), client.WithFallback("primary", "secondary", "third"))
	resp, err = c.Chat(context.Background(), hello())
	if err != nil || resp.Provider != "third" || resp.Hedges != 1 {
		t.Fatalf("%+v %v", resp, err)
	}
}

// Bad hedging options are the caller's mistake, refused before anything is sent.
func TestHedge_OptionsAreChecked(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	c := newClient(t, openAIProvider("openai", s, policy()))
	for _, opt := range []client.CallOption{client.WithHedge(-time.Second, 1), client.WithHedge(time.Hour, 1),
		client.WithHedge(time.Second, 0), client.WithHedge(time.Second, 4)} {
		if _, err := c.Chat(context.Background(), hello(), opt); providers.KindOf(err) != providers.KindBadRequest {
			t.Fatalf("%v", err)
		}
	}
	if s.Journal().Len() != 0 {
		t.Fatal("a request went out")
	}
}

// A provider's hedge goes to its next deployment first; with MaxHedges 2, a second hedge goes
// out a delay after the first, to the next route after that.
func TestHedge_DeploymentsFirstThenMoreHedges(t *testing.T) {
	slow := func() *mocks.Server {
		s := mocks.NewServer(mocks.WithScript(mocks.Reply("slow").WithDelay(time.Minute).Always()))
		t.Cleanup(s.Close)
		return s
	}
	d0, d1 := slow(), slow()
	fast := mocks.NewServer(mocks.WithReply("fast"))
	defer fast.Close()
	o := hedgePolicy(20 * time.Millisecond)
	o.MaxHedges = 2
	clk := newArmClock(20 * time.Millisecond)
	c := newClient(t, client.WithClock(clk), client.WithDeployments("p", o, client.StrategyPriority, deploymentsOn([]*mocks.Server{d0, d1})...),
		openAIProvider("backup", fast, policy()), client.WithFallback("p", "backup"))
	type result struct {
		resp *providers.ChatResponse
		err  error
	}
	done := make(chan result, 1)
	go func() { resp, err := c.Chat(context.Background(), hello()); done <- result{resp, err} }()
	// Each hedge goes out once the try before it reached its server, not on the wall clock: a
	// try cancelled before it was sent would never be journaled.
	for _, s := range []*mocks.Server{d0, d1} {
		waitFor(t, "the try's request", func() bool { return s.Journal().Len() == 1 })
		<-clk.armed
		clk.Advance(20 * time.Millisecond)
	}
	r := <-done
	resp, err := r.resp, r.err
	if err != nil || resp.Provider != "backup" || resp.Hedges != 2 || !resp.HedgeWon {
		t.Fatalf("%+v %v", resp, err)
	}
	if d0.Journal().Len() != 1 || d1.Journal().Len() != 1 {
		t.Fatalf("deployments saw %d and %d requests, want one each: the first hedge goes to the next deployment",
			d0.Journal().Len(), d1.Journal().Len())
	}
	waitFor(t, "both losers' requests to end", func() bool { return d0.Journal().InFlight()+d1.Journal().InFlight() == 0 })
}

// A learnt delay follows the route: with HedgeQuantile, a route whose recent first contents
// took 300 ms hedges at its 95th percentile (clamped to HedgeAfterSeconds), not at once.
func TestHedge_TheLearntDelayFollowsTheRoute(t *testing.T) {
	h := resilience.Hedge{After: time.Second, Quantile: 0.95, MinDelay: 10 * time.Millisecond, Max: 1}
	p, err := resilience.New(policy())
	if err != nil {
		t.Fatal(err)
	}
	r := p.Route("m")
	if d := h.Delay(r); d != time.Second {
		t.Fatalf("before samples: %v, want the configured delay", d)
	}
	for i := range 40 {
		r.ObserveLatency(resilience.LatencySample{FirstContent: time.Duration(200+i*5) * time.Millisecond, Stream: true})
	}
	if d := h.Delay(r); d < 350*time.Millisecond || d > 400*time.Millisecond {
		t.Fatalf("learnt delay %v, want the 95th percentile of 200–395 ms", d)
	}
	for range resilience.LatencyWindow {
		r.ObserveLatency(resilience.LatencySample{FirstContent: time.Millisecond, Stream: true})
	}
	if d := h.Delay(r); d != 10*time.Millisecond {
		t.Fatalf("learnt delay %v, want the floor", d)
	}
	for range resilience.LatencyWindow {
		r.ObserveLatency(resilience.LatencySample{FirstContent: time.Minute, Stream: true})
	}
	if d := h.Delay(r); d != time.Second {
		t.Fatalf("learnt delay %v, want the ceiling", d)
	}
}

// The caller's cancellation ends every try of a hedged call, and the call's error is the
// caller's own, recorded once.
func TestHedge_TheCallersCancellationEndsEveryTry(t *testing.T) {
	slow := mocks.NewServer(mocks.WithScript(mocks.Reply("slow").WithDelay(time.Minute).Always()))
	defer slow.Close()
	slow2 := mocks.NewServer(mocks.WithScript(mocks.Reply("slow").WithDelay(time.Minute).Always()))
	defer slow2.Close()
	c := newClient(t, openAIProvider("primary", slow, hedgePolicy(10*time.Millisecond)), openAIProvider("secondary", slow2, policy()),
		client.WithFallback("primary", "secondary"))
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for slow2.Journal().Len() == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := c.Chat(ctx, hello())
	var ce *client.ChainError
	if providers.KindOf(err) != providers.KindCanceled || errors.As(err, &ce) {
		t.Fatalf("%v, want the caller's cancellation alone", err)
	}
	waitFor(t, "both requests to end", func() bool { return slow.Journal().InFlight()+slow2.Journal().InFlight() == 0 })
}

// A stream in buffer mode is not hedged by its policy: it delivers nothing before its whole
// answer.
func TestHedge_NotForBufferedStreams(t *testing.T) {
	slow := mocks.NewServer(mocks.WithScript(mocks.SlowFirstToken(100 * time.Millisecond).Always()))
	defer slow.Close()
	fast := mocks.NewServer()
	defer fast.Close()
	o := hedgePolicy(10 * time.Millisecond)
	o.StreamRescue = resilience.RescueBuffer
	c := newClient(t, openAIProvider("primary", slow, o), openAIProvider("secondary", fast, policy()),
		client.WithFallback("primary", "secondary"))
	st, err := c.ChatStream(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if a := st.Accounting(); a.Hedges != 0 || st.Provider() != "primary" || fast.Journal().Len() != 0 {
		t.Fatalf("%+v from %s", a, st.Provider())
	}
}

// armClock is a manual clock that tells when a timer of delay d is armed (the hedge's).
type armClock struct {
	*backend.ManualClock
	d     time.Duration
	armed chan struct{}
}

func newArmClock(d time.Duration) *armClock {
	return &armClock{ManualClock: backend.NewManualClock(), d: d, armed: make(chan struct{}, 64)}
}

func (c *armClock) AfterFunc(d time.Duration, f func()) resilience.Timer {
	t := c.ManualClock.AfterFunc(d, f)
	if d == c.d {
		c.armed <- struct{}{}
	}
	return armTimer{t, c}
}

// armTimer is a timer of an armClock: a hedge race arms its next hedge by resetting its timer.
type armTimer struct {
	resilience.Timer
	c *armClock
}

func (t armTimer) Reset(d time.Duration) bool {
	was := t.Timer.Reset(d)
	if d == t.c.d {
		t.c.armed <- struct{}{}
	}
	return was
}
