package client_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/internal/testkit/backend"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// words returns n words, w1 … wn.
func words(prefix string, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = fmt.Sprintf("%s%d", prefix, i+1)
	}
	return strings.Join(ws, " ")
}

// deltas reads a whole stream: the text it delivered, the text after the last Restart delta,
// how many Restart deltas came, the last delta and the error that ended it.
type read struct {
	all, after string
	restarts   int
	continues  int // deltas marked Continued
	last       providers.Delta
	err        error
}

// streamInBackground starts a stream of req on c and reads it whole on another goroutine; the
// channel gets what it read (or the error ChatStream returned).
func streamInBackground(ctx context.Context, c *client.Client, req *providers.ChatRequest) <-chan read {
	done := make(chan read, 1)
	go func() {
		st, err := c.ChatStream(ctx, req)
		if err != nil {
			done <- read{err: err}
			return
		}
		defer st.Close()
		done <- readAll(st)
	}()
	return done
}

func readAll(st *client.Stream) read {
	var r read
	var all, after strings.Builder
	for d, err := range st.Deltas() {
		if err != nil {
			r.err = err
			break
		}
		if d.Restart {
			r.restarts++
			after.Reset()
		}
		if d.Continued {
			r.continues++
		}
		all.WriteString(d.Text)
		after.WriteString(d.Text)
		r.last = d
	}
	r.all, r.after = all.String(), after.String()
	return r
}

// recorder collects a client's pipeline events.
type recorder struct {
	mu sync.Mutex
	ev []resilience.Event
}

func (r *recorder) observe(e resilience.Event) {
	r.mu.Lock()
	r.ev = append(r.ev, e)
	r.mu.Unlock()
}

// timeoutCount returns the number of timeouts of any limit.
func (r *recorder) timeoutCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.ev {
		if e.Type == resilience.EventTimeout {
			n++
		}
	}
	return n
}

func (r *recorder) timeouts(limit resilience.TimeLimit) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.ev {
		if e.Type == resilience.EventTimeout && e.Timeout == limit {
			n++
		}
	}
	return n
}

// A provider that never answers, or whose first token comes after 20 s, is abandoned at the
// first-token limit (10 s by default) with one attempt, and the fallback answers: the stream is
// served within about 10 s plus the fallback's own time.
func TestChatStream_ASilentOrSlowFirstTokenFailsOverAtTheFirstTokenLimit(t *testing.T) {
	for name, step := range map[string]mocks.Step{
		"silent (no headers)":    mocks.Stall(),
		"first token after 20 s": mocks.SlowFirstToken(20 * time.Second),
	} {
		t.Run(name, func(t *testing.T) {
			primary := mocks.NewServer(mocks.WithScript(step.Always()))
			defer primary.Close()
			secondary := mocks.NewServer(mocks.WithReply("from the fallback"))
			defer secondary.Close()
			clock := backend.NewManualClock()
			var rec recorder
			o := policy()
			o.TimeoutSeconds, o.StreamIdleTimeoutSeconds = 30, 60 // only the first-token limit (10 s) falls due
			c := newClient(t, client.WithClock(clock), client.WithObserver(rec.observe),
				openAIProvider("primary", primary, o), openAIProvider("secondary", secondary, o),
				client.WithFallback("primary", "secondary"))
			type result struct {
				r   read
				err error
				st  *client.Stream
			}
			done := make(chan result, 1)
			go func() {
				st, err := c.ChatStream(context.Background(), hello())
				if err != nil {
					done <- result{err: err}
					return
				}
				done <- result{r: readAll(st), st: st}
			}()
			waitFor(t, "the call to reach the primary", func() bool { return primary.Journal().Len() == 1 })
			clock.Advance(10 * time.Second) // the default first-token limit
			res := <-done
			if res.err != nil || res.r.err != nil || res.r.all != "from the fallback" || res.st.Provider() != "secondary" {
				t.Fatalf("%v %v %q", res.err, res.r.err, res.r.all)
			}
			_ = res.st.Close()
			if n := primary.Journal().Len(); n != 1 {
				t.Fatalf("the primary saw %d attempts, want one", n)
			}
			if n := rec.timeouts(resilience.TimeoutFirstToken); n != 1 {
				t.Fatalf("%d first-token timeouts reported, want one", n)
			}
			if acct := res.st.Accounting(); acct.FailedAttempts != 1 {
				t.Fatalf("accounting %+v, want the primary's one failed attempt", acct)
			}
		})
	}
}

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// A stream cut after 40 of its 60 tokens: without rescue, a clean error carrying the 40 tokens;
// with rescue "restart", a delta marked Restart and the fallback's whole answer; with "buffer",
// only the fallback's whole answer, the primary's part never seen. The fallback rejects
// assistant prefill, which those rescues never use; the default ("continue") asks it to continue,
// and its refusal ends the stream with the cut and its 40 tokens, as without rescue.
func TestChatStream_ACutAfterContentIsRescuedOnRequest(t *testing.T) {
	answer := words("p", 60)
	cut := mocks.Reply(answer)
	cut.Cut, cut.CutAfter, cut.CountContent = mocks.CutAbort, 40, true
	start := func(t *testing.T, opts ...client.CallOption) (read, *client.Stream, *mocks.Server) {
		primary := mocks.NewServer(mocks.WithScript(cut.Always()))
		t.Cleanup(primary.Close)
		secondary := mocks.NewServer(mocks.WithReply(words("s", 60)), mocks.WithRejectPrefill())
		t.Cleanup(secondary.Close)
		c := newClient(t, openAIProvider("primary", primary, policy()), anthropicProvider("secondary", secondary, policy()),
			client.WithFallback("primary", "secondary"))
		st, err := c.ChatStream(context.Background(), hello(), opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return readAll(st), st, secondary
	}
	t.Run("off", func(t *testing.T) {
		r, _, secondary := start(t, client.WithRescue(resilience.RescueOff))
		var pe *providers.Error
		if !errors.As(r.err, &pe) || pe.Partial != words("p", 40) || r.restarts != 0 || secondary.Journal().Len() != 0 {
			t.Fatalf("err %v (partial %q), restarts %d, fallback asked %d times", r.err, partialOf(r.err), r.restarts,
				secondary.Journal().Len())
		}
	})
	t.Run("default", func(t *testing.T) {
		r, _, secondary := start(t)
		var pe *providers.Error
		if !errors.As(r.err, &pe) || pe.Kind != providers.KindUnavailable || pe.Partial != words("p", 40) || r.restarts != 0 ||
			secondary.Journal().Len() != 1 {
			t.Fatalf("err %v (partial %q), restarts %d, fallback asked %d times", r.err, partialOf(r.err), r.restarts,
				secondary.Journal().Len())
		}
	})
	t.Run("restart", func(t *testing.T) {
		r, st, _ := start(t, client.WithRescue(resilience.RescueRestart))
		if r.err != nil || r.restarts != 1 || r.after != words("s", 60) || !r.last.Done || st.Provider() != "secondary" {
			t.Fatalf("err %v, restarts %d, after the restart %q, last %+v", r.err, r.restarts, r.after, r.last)
		}
		if acct := st.Accounting(); acct.FailedAttempts != 1 {
			t.Fatalf("accounting %+v, want the abandoned attempt counted", acct)
		}
	})
	t.Run("buffer", func(t *testing.T) {
		r, st, _ := start(t, client.WithRescue(resilience.RescueBuffer))
		if r.err != nil || r.restarts != 0 || r.all != words("s", 60) || st.Provider() != "secondary" {
			t.Fatalf("err %v, restarts %d, text %q", r.err, r.restarts, r.all)
		}
	})
}

func partialOf(err error) string {
	var pe *providers.Error
	if errors.As(err, &pe) {
		return pe.Partial
	}
	return ""
}

// A stream that goes silent for 30 s after content is cut at the idle limit; with rescue, the
// fallback answers it whole.
func TestChatStream_AStallAfterContentIsRescued(t *testing.T) {
	stall := mocks.Reply(words("p", 60))
	stall.StallAfter, stall.StallFor = 40, 30*time.Second
	primary := mocks.NewServer(mocks.WithScript(stall.Always()))
	defer primary.Close()
	secondary := mocks.NewServer(mocks.WithReply(words("s", 60)))
	defer secondary.Close()
	clock := backend.NewManualClock()
	o := policy()
	o.StreamIdleTimeoutSeconds = 5
	// The clock moves 5 s a step until the answer ends, the fallback's part too: the fallback's
	// own limits are not on trial, and a step taken before its first content (the total limit)
	// or during one of its Reads (idle, stall) would cut it as well.
	fallback := policy()
	fallback.TimeoutSeconds, fallback.StreamIdleTimeoutSeconds, fallback.StreamStallFactor = 0, 0, 0
	c := newClient(t, client.WithClock(clock), openAIProvider("primary", primary, o), openAIProvider("secondary", secondary, fallback),
		client.WithFallback("primary", "secondary"))
	st, err := c.ChatStream(context.Background(), hello(), client.WithRescue(resilience.RescueRestart))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	done := make(chan read, 1)
	go func() { done <- readAll(st) }()
	waitFor(t, "the call to reach the primary", func() bool { return primary.Journal().Len() == 1 })
	// The stall: the idle timer, on the client's clock, runs out. (Time on this clock moves only
	// here, so the words before the stall may still be arriving: the cut then comes earlier,
	// which changes nothing for the rescue.)
	for range 50 {
		clock.Advance(5 * time.Second)
		select {
		case r := <-done:
			if r.err != nil || r.restarts != 1 || r.after != words("s", 60) {
				t.Fatalf("err %v, restarts %d, after %q", r.err, r.restarts, r.after)
			}
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
	r := <-done
	t.Fatalf("the stall was not rescued: %+v", r)
}

// A route abandoned at its first-token limit is asked once more when no other route can serve
// (silent routes go to the next route first, a same-route retry only when there is none) —
// and only when the policy allows retries: with RetryCount 0 the call fails at the limit, its
// error naming the failure once.
func TestChatStream_TheOnlyRouteIsRetriedOnceAfterItsFirstTokenLimit(t *testing.T) {
	for _, retries := range []int{3, 0} {
		t.Run(fmt.Sprintf("RetryCount %d", retries), func(t *testing.T) {
			s := mocks.NewServer(mocks.WithReply("second time lucky"), mocks.WithScript(mocks.SlowFirstToken(time.Hour)))
			defer s.Close()
			clock := backend.NewManualClock()
			o := policy()
			o.TimeoutSeconds, o.StreamIdleTimeoutSeconds, o.RetryCount = 30, 60, retries
			c := newClient(t, client.WithClock(clock), openAIProvider("only", s, o))
			done := streamInBackground(context.Background(), c, hello())
			waitFor(t, "the first try", func() bool { return s.Journal().Len() == 1 })
			clock.Advance(10 * time.Second)
			r := <-done
			if retries > 0 {
				if r.err != nil || r.all != "second time lucky" || s.Journal().Len() != 2 {
					t.Fatalf("%q %v after %d requests", r.all, r.err, s.Journal().Len())
				}
				return
			}
			if !firstTokenTimedOut(r.err) || s.Journal().Len() != 1 {
				t.Fatalf("got %v after %d requests, want the first-token timeout after one", r.err, s.Journal().Len())
			}
			if n := strings.Count(r.err.Error(), "first-token timeout"); n != 1 {
				t.Fatalf("the error names its failure %d times: %v", n, r.err)
			}
		})
	}
}

// A malformed event in the middle of a stream is never skipped: without rescue a clean error
// carrying what came before; with rescue "restart", the fallback's whole answer.
func TestChatStream_AMalformedEventIsAnErrorOrRescued(t *testing.T) {
	bad := mocks.Reply(words("p", 20))
	bad.MalformedAt = 10
	for _, mode := range []string{resilience.RescueOff, resilience.RescueRestart} {
		primary := mocks.NewServer(mocks.WithScript(bad.Always()))
		secondary := mocks.NewServer(mocks.WithReply(words("s", 20)))
		c := newClient(t, openAIProvider("primary", primary, policy()), openAIProvider("secondary", secondary, policy()),
			client.WithFallback("primary", "secondary"))
		st, err := c.ChatStream(context.Background(), hello(), client.WithRescue(mode))
		if err != nil {
			t.Fatal(err)
		}
		r := readAll(st)
		_ = st.Close()
		primary.Close()
		secondary.Close()
		switch mode {
		case resilience.RescueOff:
			if providers.KindOf(r.err) != providers.KindUnavailable || partialOf(r.err) != words("p", 9) {
				t.Fatalf("off: %v (partial %q)", r.err, partialOf(r.err))
			}
		default:
			if r.err != nil || r.restarts != 1 || r.after != words("s", 20) || !r.last.Done {
				t.Fatalf("restart: %v, %d restarts, after %q", r.err, r.restarts, r.after)
			}
		}
	}
}

// A stream that sent its finish reason and usage and then ended without [DONE] is complete.
func TestChatStream_NoDoneAfterTheFinishReasonIsComplete(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("all of it"), mocks.WithScript(mocks.OmitTerminal().Always()))
	defer s.Close()
	c := newClient(t, openAIProvider("openai", s, policy()))
	st, err := c.ChatStream(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := readAll(st)
	if r.err != nil || r.all != "all of it" || !r.last.Done || r.last.Usage.OutputTokens == 0 {
		t.Fatalf("%q %v, last %+v", r.all, r.err, r.last)
	}
}

// A refusal stops the chain by default; a kind's own chain (FallbackOn) sends it on.
func TestFallbackOn_ARefusalGoesWhereTheKindsChainSays(t *testing.T) {
	primary := mocks.NewServer(mocks.WithScript(mocks.Refusal("I can't help with that.").Always()))
	defer primary.Close()
	other := mocks.NewServer(mocks.WithReply("here you go"))
	defer other.Close()
	chain := []client.Option{openAIProvider("primary", primary, policy()), openAIProvider("other", other, policy()),
		client.WithFallback("primary", "other")}
	c := newClient(t, chain...)
	if _, err := c.Chat(context.Background(), hello()); providers.KindOf(err) != providers.KindRefused || other.Journal().Len() != 0 {
		t.Fatalf("by default: %v, the other asked %d times", err, other.Journal().Len())
	}
	c = newClient(t, append(chain, client.WithFallbackOn(providers.KindRefused, "other"))...)
	resp, err := c.Chat(context.Background(), hello())
	if err != nil || resp.Provider != "other" || resp.FailedAttempts != 1 {
		t.Fatalf("with FallbackOn: %v %v", resp, err)
	}
	if _, err := client.New(append(chain, client.WithFallbackOn(providers.KindRefused, "nobody"))...); err == nil {
		t.Fatal("a FallbackOn naming an unknown provider was accepted")
	}
}

// WithFirstTokenTimeout sets the call's own first-token limit, shorter or longer than the
// policy's (here 10 s, the default): with 2 s the silent primary is abandoned after 2 s, not 10;
// and a limit that is not above 0 is the caller's mistake, refused before anything is sent.
func TestChatStream_WithFirstTokenTimeoutSetsTheCallsOwnLimit(t *testing.T) {
	primary := mocks.NewServer(mocks.WithScript(mocks.Stall().Always()))
	defer primary.Close()
	secondary := mocks.NewServer(mocks.WithReply("from the fallback"))
	defer secondary.Close()
	clock := backend.NewManualClock()
	var rec recorder
	o := policy()
	o.TimeoutSeconds, o.StreamIdleTimeoutSeconds = 30, 60
	c := newClient(t, client.WithClock(clock), client.WithObserver(rec.observe),
		openAIProvider("primary", primary, o), openAIProvider("secondary", secondary, o),
		client.WithFallback("primary", "secondary"))
	type result struct {
		st  *client.Stream
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := c.ChatStream(context.Background(), hello(), client.WithFirstTokenTimeout(2*time.Second))
		done <- result{st, err}
	}()
	waitFor(t, "the call to reach the primary", func() bool { return primary.Journal().Len() == 1 })
	clock.Advance(2 * time.Second)
	var res result
	select {
	case res = <-done:
	case <-time.After(10 * time.Second): // real time: the call waits on the manual clock, which stands still
		t.Fatal("the call still waits on the primary 2 s after it was sent: its own first-token limit did not apply")
	}
	if res.err != nil || res.st.Provider() != "secondary" {
		t.Fatalf("%v: want the fallback's answer once the call's own 2 s limit ran out", res.err)
	}
	_ = res.st.Close()
	if n := rec.timeouts(resilience.TimeoutFirstToken); n != 1 {
		t.Fatalf("%d first-token timeouts reported, want one", n)
	}
	for _, d := range []time.Duration{0, -time.Second} {
		_, err := c.ChatStream(context.Background(), hello(), client.WithFirstTokenTimeout(d))
		if providers.KindOf(err) != providers.KindBadRequest || !strings.Contains(err.Error(), "WithFirstTokenTimeout") {
			t.Fatalf("WithFirstTokenTimeout(%s): %v, want a bad_request naming the option", d, err)
		}
	}
	if n := primary.Journal().Len(); n != 1 {
		t.Fatalf("the primary saw %d requests, want one: a refused option sends nothing", n)
	}
}
