package client_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/deferral"
	"github.com/steadyllm/steady/internal/testkit/backend"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// deadlinePolicy is policy() with a whole-call deadline of d and a patient retry policy: any
// wait the client made would be long.
func deadlinePolicy(d time.Duration) resilience.Options {
	o := policy()
	o.CallTimeoutSeconds = d.Seconds()
	o.RetryMaxDelaySeconds = 600
	o.RetryBaseDelaySeconds = 20
	o.TimeoutSeconds = 300
	o.FirstTokenTimeoutSeconds = 300
	o.StreamIdleTimeoutSeconds = 300
	return o
}

// outcome is what a call returned.
type outcome struct {
	resp *providers.ChatResponse
	err  error
}

// chatAsync runs c.Chat in the background; the test reads the outcome from the channel.
func chatAsync(ctx context.Context, c *client.Client, opts ...client.CallOption) <-chan outcome {
	done := make(chan outcome, 1)
	go func() {
		resp, err := c.Chat(ctx, hello(), opts...)
		done <- outcome{resp, err}
	}()
	return done
}

// await returns the outcome, or fails the test when the call has not returned after a
// generous real-time guard: the calls of these tests run on a manual clock, so one that
// waited for its clock would never return.
func await(t *testing.T, done <-chan outcome) outcome {
	t.Helper()
	select {
	case o := <-done:
		return o
	case <-time.After(20 * time.Second):
		t.Fatal("the call is still waiting: it waits on a clock nobody moves")
		return outcome{}
	}
}

// arrived waits until s has received n requests and chosen how to answer each, failing the
// test after a generous guard.
func arrived(t *testing.T, s *mocks.Server, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Journal().Wait(ctx, n); err != nil {
		t.Fatalf("%d requests arrived, want %d: %v", s.Journal().Len(), n, err)
	}
	// Arrived is not yet answered: the server takes its script's step after reading the body,
	// so a test that cancels a request now could leave the step to the next one. Wait until
	// the server has chosen how to answer each.
	for {
		answering := 0
		for _, r := range s.Journal().Requests() {
			if r.Step != "" {
				answering++
			}
		}
		if answering >= n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d of %d requests have their answer chosen", answering, n)
		case <-time.After(time.Millisecond):
		}
	}
}

// timeoutOf checks that err is the whole call's deadline: kind timeout, GaveUp deadline,
// matching resilience.ErrTimeout and context.DeadlineExceeded, never context.Canceled.
func timeoutOf(t *testing.T, err error) *providers.Error {
	t.Helper()
	var pe *providers.Error
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a *providers.Error", err)
	}
	var te *resilience.TimeoutError
	if pe.Kind != providers.KindTimeout || pe.GaveUp != string(resilience.GaveUpDeadline) ||
		!errors.As(err, &te) || te.Limit != resilience.TimeoutCall ||
		!errors.Is(err, resilience.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v (%+v), want the call's deadline: kind timeout, gave up: deadline", err, pe)
	}
	return pe
}

// A server's hint that ends after the call's deadline is refused at once: the call fails
// without sleeping (on a clock nobody moves, a sleep would never end), kind timeout, and
// keeps what the server said.
func TestCallTimeout_ARetryAfterPastTheDeadlineGivesUpAtOnce(t *testing.T) {
	s := mocks.NewServer(mocks.WithScript(mocks.RateLimited(30*time.Second), mocks.OK()))
	defer s.Close()
	clock := backend.NewManualClock()
	c := newClient(t, client.WithClock(clock), openAIProvider("p", s, deadlinePolicy(5*time.Second)))
	o := await(t, chatAsync(context.Background(), c))
	pe := timeoutOf(t, o.err)
	if pe.StatusCode != 429 || pe.RetryAfter != 30*time.Second || pe.Attempts != 1 || s.Journal().Len() != 1 ||
		!strings.Contains(pe.Message, "waiting 30s would pass the call's deadline of 5s") {
		t.Fatalf("err = %v (%+v), want the 429 and its hint kept, one attempt", o.err, pe)
	}
	// With a deadline that leaves room, the same call waits the hint out (the pipeline's pause
	// after the 429) and succeeds.
	done := chatAsync(context.Background(), c, client.WithCallTimeout(time.Hour))
	var o2 outcome
	waitFor(t, "the call to wait its hint out", func() bool {
		select {
		case o2 = <-done:
			return true
		default:
			clock.Advance(time.Second)
			return false
		}
	})
	if o2.err != nil || s.Journal().Len() != 2 {
		t.Fatalf("with an hour's deadline: %v; %d requests", o2.err, s.Journal().Len())
	}
}

// A backoff that would end past the deadline is refused the same way.
func TestCallTimeout_ABackoffPastTheDeadlineGivesUpAtOnce(t *testing.T) {
	s := mocks.NewServer(mocks.WithScript(mocks.Status(503).Always()))
	defer s.Close()
	clock := backend.NewManualClock()
	c := newClient(t, client.WithClock(clock), openAIProvider("p", s, deadlinePolicy(5*time.Second)))
	pe := timeoutOf(t, await(t, chatAsync(context.Background(), c)).err)
	if pe.StatusCode != 503 || pe.Attempts != 1 || !strings.Contains(pe.Message, "waiting 20s would pass") {
		t.Fatalf("%+v", pe)
	}
}

// The deadline bounds the tries and the fallbacks together: when it runs out during the
// primary's attempt, the attempt is cancelled, the secondary is never started, and the
// primary's circuit does not count it (the deadline is the caller's budget).
func TestCallTimeout_RunsOutDuringATryAndStartsNoFallback(t *testing.T) {
	primary := mocks.NewServer(mocks.WithScript(mocks.Stall().Always()))
	defer primary.Close()
	secondary := mocks.NewServer()
	defer secondary.Close()
	clock := backend.NewManualClock()
	pol := deadlinePolicy(2 * time.Second)
	pol.CircuitBreakerThreshold = 1
	c := newClient(t, client.WithClock(clock), openAIProvider("primary", primary, pol), openAIProvider("secondary", secondary, pol),
		client.WithFallback("primary", "secondary"))
	done := chatAsync(context.Background(), c)
	arrived(t, primary, 1)
	clock.Advance(2 * time.Second)
	pe := timeoutOf(t, await(t, done).err)
	if pe.Provider != "primary" || pe.Message != "the call's deadline of 2s ran out" || secondary.Journal().Len() != 0 {
		t.Fatalf("%+v; the secondary saw %d requests", pe, secondary.Journal().Len())
	}
	if st := c.Pipeline("primary").Route("gpt-4o-mini").CircuitState(); st != resilience.CircuitClosed {
		t.Fatalf("the primary's circuit is %s: the deadline counted against it", st)
	}
}

// deadlineTracker moves the clock past the deadline when a try ends, and waits until the
// deadline has ended the call's context: the deadline passes between two tries.
type deadlineTracker struct {
	clock *backend.ManualClock
	by    time.Duration
	mu    sync.Mutex
	ctx   context.Context
}

func (d *deadlineTracker) StartCall(ctx context.Context, _ client.CallStart) (context.Context, client.CallTracker) {
	d.mu.Lock()
	d.ctx = ctx
	d.mu.Unlock()
	return ctx, d
}
func (d *deadlineTracker) PipelineEvent(resilience.Event) {}
func (d *deadlineTracker) TryDone(client.TryResult) {
	d.mu.Lock()
	ctx := d.ctx
	d.mu.Unlock()
	d.clock.Advance(d.by)
	<-ctx.Done()
}
func (d *deadlineTracker) End(error) {}

// When the deadline passes between two tries, the next route is not started, and the call's
// error is led by the deadline.
func TestCallTimeout_PassesBetweenTriesAndStartsNoOtherRoute(t *testing.T) {
	primary := mocks.NewServer(mocks.WithScript(mocks.Status(400).Always())) // not retried
	defer primary.Close()
	secondary := mocks.NewServer()
	defer secondary.Close()
	clock := backend.NewManualClock()
	pol := deadlinePolicy(time.Second)
	c := newClient(t, client.WithClock(clock), openAIProvider("primary", primary, pol), openAIProvider("secondary", secondary, pol),
		client.WithFallback("primary", "secondary"), client.WithFallbackOn(providers.KindBadRequest, "secondary"),
		client.WithTelemetry(&deadlineTracker{clock: clock, by: time.Second}))
	err := await(t, chatAsync(context.Background(), c)).err
	pe := timeoutOf(t, err)
	var chain *client.ChainError
	if !errors.As(err, &chain) || chain.Cause != pe || len(chain.Failures) != 1 || chain.Failures[0].Kind != providers.KindBadRequest ||
		secondary.Journal().Len() != 0 || !strings.Contains(pe.Message, "ran out after 1 tries; no other route was started") {
		t.Fatalf("err = %v; the secondary saw %d requests", err, secondary.Journal().Len())
	}
}

// The caller's own context still decides when its deadline comes first, and its end is the
// caller's: kind canceled, not timeout.
func TestCallTimeout_TheCallersEarlierDeadlineAndCancellationWin(t *testing.T) {
	s := mocks.NewServer(mocks.WithScript(mocks.Stall().Always()))
	defer s.Close()
	c := newClient(t, openAIProvider("p", s, deadlinePolicy(time.Hour)))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Chat(ctx, hello())
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Kind != providers.KindCanceled || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the caller's deadline: %v", err)
	}
	n := s.Journal().Len() // 1, or 0 on a machine so slow that the 50 ms ran out before sending
	ctx, cancel = context.WithCancel(context.Background())
	done := chatAsync(ctx, c, client.WithCallTimeout(time.Hour))
	arrived(t, s, n+1)
	cancel()
	err = await(t, done).err
	if !errors.As(err, &pe) || pe.Kind != providers.KindCanceled || !errors.Is(err, context.Canceled) || pe.GaveUp != "" {
		t.Fatalf("the caller's cancellation under a deadline: %v (%+v)", err, pe)
	}
}

// WithCallTimeout overrides the policy's deadline, a named policy's applies to the calls that
// run under it, and a deadline that is not above 0 (or above a day) is the caller's mistake.
func TestCallTimeout_PerCallAndPerPolicy(t *testing.T) {
	s := mocks.NewServer(mocks.WithScript(mocks.RateLimited(30 * time.Second).Always()))
	defer s.Close()
	clock := backend.NewManualClock()
	patient := deadlinePolicy(0) // no deadline of its own
	quick := deadlinePolicy(10 * time.Second)
	c := newClient(t, client.WithClock(clock), openAIProvider("p", s, patient),
		client.WithPolicies(map[string]resilience.Options{"interactive": quick}))
	for _, tc := range []struct {
		name string
		opts []client.CallOption
		sent int // requests the call sends
	}{
		// The first call meets the 429 and its hint: it gives up at once.
		{"per call", []client.CallOption{client.WithCallTimeout(10 * time.Second)}, 1},
		// The next ones meet the pipeline's pause after that 429 (RateLimitCooldown), 30 s
		// long: past their deadline, they are refused before anything is sent.
		{"named policy", []client.CallOption{client.WithPolicy("interactive")}, 0},
		{"per call over the named policy", []client.CallOption{client.WithPolicy("interactive"), client.WithCallTimeout(20 * time.Second)}, 0},
	} {
		n := s.Journal().Len()
		err := await(t, chatAsync(context.Background(), c, tc.opts...)).err
		pe := timeoutOf(t, err)
		want := "the call's deadline of 10s"
		if len(tc.opts) == 2 {
			want = "the call's deadline of 20s"
		}
		if !strings.Contains(pe.Message, want) || s.Journal().Len()-n != tc.sent || errors.Is(err, resilience.ErrCoolingDown) != (tc.sent == 0) {
			t.Errorf("%s: %v; %d requests sent, want %d", tc.name, err, s.Journal().Len()-n, tc.sent)
		}
	}
	n := s.Journal().Len()
	for _, d := range []time.Duration{0, -time.Second, 25 * time.Hour} {
		_, err := c.Chat(context.Background(), hello(), client.WithCallTimeout(d))
		var pe *providers.Error
		if !errors.As(err, &pe) || pe.Kind != providers.KindBadRequest || !strings.Contains(pe.Message, "WithCallTimeout("+d.String()+")") ||
			!strings.Contains(pe.Message, "must be above 0 and at most 24h0m0s") {
			t.Errorf("WithCallTimeout(%s): %v", d, err)
		}
	}
	if s.Journal().Len() != n {
		t.Error("a refused option sent a request")
	}
}

// For a stream, the deadline bounds the wait for the first content: a provider silent past it
// fails the call, kind timeout; once the stream has content, the deadline no longer applies
// and the answer streams to its end.
func TestCallTimeout_BoundsAStreamUntilItsFirstContent(t *testing.T) {
	clock := backend.NewManualClock()
	s := mocks.NewServer(mocks.WithScript(mocks.Stall(), mocks.SlowStream(2*time.Millisecond)), mocks.WithReply(words("w", 20)))
	defer s.Close()
	c := newClient(t, client.WithClock(clock), openAIProvider("p", s, deadlinePolicy(time.Second)))

	done := make(chan error, 1)
	go func() {
		st, err := c.ChatStream(context.Background(), hello())
		if err == nil {
			st.Close()
		}
		done <- err
	}()
	arrived(t, s, 1)
	clock.Advance(time.Second)
	select {
	case err := <-done:
		timeoutOf(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("ChatStream still waits past its deadline")
	}

	st, err := c.ChatStream(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	clock.Advance(2 * time.Second) // past the deadline, while the answer streams
	r := readAll(st)
	if r.err != nil || r.all != words("w", 20) {
		t.Fatalf("the stream after its deadline: %q, %v", r.all, r.err)
	}
}

// Embeddings are bounded too.
func TestCallTimeout_BoundsEmbeddings(t *testing.T) {
	s := mocks.NewServer(mocks.WithScript(mocks.Stall().Always()))
	defer s.Close()
	clock := backend.NewManualClock()
	c := newClient(t, client.WithClock(clock), openAIProvider("p", s, deadlinePolicy(time.Second)))
	done := make(chan error, 1)
	go func() {
		_, err := c.Embed(context.Background(), &providers.EmbedRequest{Model: "text-embedding-3-small", Inputs: []string{"x"}})
		done <- err
	}()
	arrived(t, s, 1)
	clock.Advance(time.Second)
	select {
	case err := <-done:
		timeoutOf(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("Embed still waits past its deadline")
	}
}

// A call hedged after a delay longer than its deadline sends no hedge once the deadline has
// ended it.
func TestCallTimeout_NoHedgeAfterTheDeadline(t *testing.T) {
	slow := mocks.NewServer(mocks.WithScript(mocks.Stall().Always()))
	defer slow.Close()
	other := mocks.NewServer()
	defer other.Close()
	clock := backend.NewManualClock()
	pol := deadlinePolicy(time.Second)
	c := newClient(t, client.WithClock(clock), openAIProvider("slow", slow, pol), openAIProvider("other", other, pol),
		client.WithFallback("slow", "other"))
	done := chatAsync(context.Background(), c, client.WithHedge(2*time.Second, 1))
	arrived(t, slow, 1)
	clock.Advance(time.Second)
	timeoutOf(t, await(t, done).err)
	clock.Advance(time.Hour)
	if n := other.Journal().Len(); n != 0 {
		t.Fatalf("a hedge went out after the deadline: other saw %d requests", n)
	}
}

// A deferred call (a job) whose deadline ran out is deferred like any timeout, and the
// decision says it was the call's deadline.
func TestCallTimeout_ADeferredCallSaysItsDeadlineRanOut(t *testing.T) {
	s := mocks.NewServer(mocks.WithScript(mocks.Stall().Always()))
	defer s.Close()
	clock := backend.NewManualClock()
	c := newClient(t, client.WithClock(clock), openAIProvider("p", s, deadlinePolicy(3*time.Second)))
	done := chatAsync(context.Background(), c, client.Deferred(1))
	arrived(t, s, 1)
	clock.Advance(3 * time.Second)
	err := await(t, done).err
	timeoutOf(t, err)
	dec := asDeferral(t, err).Decision
	if !dec.Retry || dec.Kind != providers.KindTimeout || dec.Source != deferral.SourceBackoff ||
		!strings.Contains(dec.Reason, "the call's deadline (3s) ran out") {
		t.Fatalf("decision %+v", dec)
	}
}
