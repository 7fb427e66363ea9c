package resilience

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestRateLimitOf_TellsABudgetFromTooManyAtOnce(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name   string
		status int
		body   string
		header map[string]string
		tokens int
		want   rateLimit
	}{
		{"not a 429", 503, `{}`, nil, 0, limitNone},
		{"a spent quota", 429, `{"error":{"code":"insufficient_quota"}}`, nil, 0, limitNone},
		{"a bare 429 (a self-hosted server)", 429, `{"error":"Model is overloaded"}`, nil, 0, limitConcurrency},
		{"a short hint", 429, `{}`, map[string]string{"Retry-After-Ms": "250"}, 0, limitConcurrency},
		{"a hint of one second", 429, `{}`, map[string]string{"Retry-After": "1"}, 0, limitConcurrency},
		{"a long hint", 429, `{}`, map[string]string{"Retry-After": "2"}, 0, limitBudget},
		{"budgets with room", 429, `{}`, map[string]string{"X-Ratelimit-Remaining-Requests": "9999",
			"X-Ratelimit-Remaining-Tokens": "1999000"}, 500, limitConcurrency},
		{"OpenAI: requests spent, a short hint", 429, `{"error":{"code":"rate_limit_exceeded"}}`,
			map[string]string{"X-Ratelimit-Remaining-Requests": "0", "X-Ratelimit-Reset-Requests": "20ms",
				"Retry-After-Ms": "20"}, 0, limitBudget},
		{"OpenAI: tokens spent", 429, `{}`, map[string]string{"X-Ratelimit-Remaining-Requests": "12",
			"X-Ratelimit-Remaining-Tokens": "0"}, 0, limitBudget},
		{"OpenAI: fewer tokens left than the call needs", 429, `{}`,
			map[string]string{"X-Ratelimit-Remaining-Tokens": "300"}, 500, limitBudget},
		{"OpenAI: enough tokens left for the call", 429, `{}`,
			map[string]string{"X-Ratelimit-Remaining-Tokens": "300"}, 200, limitConcurrency},
		{"Anthropic: input tokens spent", 429, `{"type":"error","error":{"type":"rate_limit_error"}}`,
			map[string]string{"Anthropic-Ratelimit-Input-Tokens-Remaining": "0", "Retry-After": "1"}, 0, limitBudget},
		{"Anthropic: requests spent", 429, `{}`, map[string]string{"Anthropic-Ratelimit-Requests-Remaining": "0"}, 0, limitBudget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := &http.Response{StatusCode: tc.status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(tc.body))}
			for k, v := range tc.header {
				resp.Header.Set(k, v)
			}
			ctx := context.Background()
			if tc.tokens > 0 {
				c := &Call{}
				c.Init(ctx, false)
				c.Tokens = tc.tokens
				ctx = c
			}
			if got := rateLimitOf(ctx, resp, now); got != tc.want {
				t.Fatalf("%d %v: %v, want %v", tc.status, tc.header, got, tc.want)
			}
			if b, _ := io.ReadAll(resp.Body); string(b) != tc.body {
				t.Fatalf("body %q after the look, want it intact", b)
			}
		})
	}
}

// concurrencyOptions is an adaptive pipeline with the cooldown on and the default backoff (a
// second, then two…): a retry that waited for it would show.
func concurrencyOptions(start int) Options {
	o := adaptiveOptions(start, 1, 100)
	o.RetryCount, o.RetryBaseDelaySeconds, o.RetryMaxDelaySeconds = 3, 5, 30
	o.RateLimitCooldown = true
	o.CircuitBreakerThreshold = 1 // a failure would open it
	return o
}

// A 429 that signals too many at once, under an adaptive limit: the limit falls, nothing
// pauses, and the retry goes out without the backoff (a wait of 5 s would pass the call's
// deadline of 3 s and give up).
func TestAdaptive_AConcurrency429ShrinksTheLimitWithoutAPause(t *testing.T) {
	s := newScript(t, status(429, `{"error":{"message":"Too many concurrent requests"}}`), ok())
	var rec recorder
	c, p := client(t, concurrencyOptions(10), OnEvent(rec.observe))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	call := &Call{}
	call.Init(ctx, false)
	if code, err := doCallCtx(call, c, s.url()); code != 200 || err != nil {
		t.Fatalf("status %d, %v; events %v", code, err, rec.all())
	}
	if call.Info.Attempts != 2 || s.hits.Load() != 2 {
		t.Fatalf("%d attempts, %d sent, want 2", call.Info.Attempts, s.hits.Load())
	}
	if cc := p.Concurrency(); cc.Limit != 9 || cc.InFlight != 0 {
		t.Fatalf("%+v, want the limit lowered to 9 and no slot held", cc)
	}
	if p.CoolingFor() != 0 || len(rec.kind(EventCooldownStarted)) != 0 {
		t.Fatalf("paused %v, events %v", p.CoolingFor(), rec.kind(EventCooldownStarted))
	}
	if r := rec.kind(EventRetryScheduled); len(r) != 1 || r[0].Delay != 0 || !strings.Contains(r[0].Reason, "too many at once") {
		t.Fatalf("retries %+v", r)
	}
}

// While the limit falls towards the provider's, the calls at the front of the queue may meet
// 429 after 429: retries through the limit do not count against RetryCount, which still bounds
// the other failures — and a call allowed no retry gets none.
func TestAdaptive_RetriesThroughTheLimitDoNotSpendRetryCount(t *testing.T) {
	bare := status(429, `{}`)
	s := newScript(t, bare, bare, bare, bare, bare, status(503, `{}`), status(503, `{}`), ok())
	o := concurrencyOptions(100)
	o.RetryCount, o.RetryBaseDelaySeconds = 1, 0.001
	c, p := client(t, o)
	call := &Call{}
	call.Init(context.Background(), false)
	if code, err := doCallCtx(call, c, s.url()); code != 503 || err != nil {
		t.Fatalf("status %d, %v", code, err)
	}
	// Five 429s retried through the limit, one 503 retried, the second 503 ends it.
	if call.Info.Attempts != 7 || call.Info.GaveUp != GaveUpExhausted || p.Concurrency().Limit >= 100 {
		t.Fatalf("%+v, limit %d", call.Info, p.Concurrency().Limit)
	}

	// Nor do they spend the retry budget: they never add to the calls in flight.
	s = newScript(t, bare, bare, bare, bare, ok())
	o.RetryBudgetPercent, o.RetryBudgetFloor = 1, 0
	c, _ = client(t, o)
	if code, _ := doCallCtx(context.Background(), c, s.url()); code != 200 || s.hits.Load() != 5 {
		t.Fatalf("status %d after %d attempts with a retry budget of none", code, s.hits.Load())
	}

	s = newScript(t, bare, ok())
	o.RetryCount = 0
	c, _ = client(t, o)
	if code, _ := doCallCtx(context.Background(), c, s.url()); code != 429 || s.hits.Load() != 1 {
		t.Fatalf("status %d after %d attempts with RetryCount 0", code, s.hits.Load())
	}
}

// A 429 that says a budget ran out pauses the pipeline as before, adaptive limit or not, and
// leaves the limit alone: fewer calls at once would not refill it.
func TestAdaptive_ABudget429PausesAndLeavesTheLimit(t *testing.T) {
	for _, tc := range []struct {
		name string
		kv   []string
	}{
		{"requests at 0", []string{"X-Ratelimit-Remaining-Requests", "0", "X-Ratelimit-Reset-Requests", "300ms", "Retry-After-Ms", "300"}},
		{"a long hint", []string{"Retry-After", "3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScript(t, status(429, `{"error":{"code":"rate_limit_exceeded"}}`, tc.kv...), ok())
			o := concurrencyOptions(10)
			o.RetryCount = 0
			c, p := client(t, o)
			if code, _ := doCallCtx(context.Background(), c, s.url()); code != 429 {
				t.Fatalf("status %d", code)
			}
			if p.CoolingFor() <= 0 {
				t.Fatal("no pause after a budget 429")
			}
			if cc := p.Concurrency(); cc.Limit != 10 || cc.Decreases != 0 {
				t.Fatalf("%+v, want the limit left at 10", cc)
			}
		})
	}
}

// At its floor the adaptive limit has nothing left to give back: a provider that refuses one
// call at a time is paused for, as with a fixed limit.
func TestAdaptive_AtItsFloorAConcurrency429Pauses(t *testing.T) {
	s := newScript(t, status(429, `{}`), ok())
	o := concurrencyOptions(1)
	o.RetryCount = 0
	c, p := client(t, o)
	if code, _ := doCallCtx(context.Background(), c, s.url()); code != 429 {
		t.Fatalf("status %d", code)
	}
	if p.CoolingFor() <= 0 {
		t.Fatal("no pause at the floor")
	}
}

// heldServer holds the calls marked X-Hold until release is closed, and answers the others
// from answers, one each, then 200.
type heldServer struct {
	*script
	held    chan struct{}
	release chan struct{}
	once    sync.Once
	others  atomic.Int32
}

// free lets the held calls end (once; also at the test's end, so a failing test does not hang).
func (h *heldServer) free() { h.once.Do(func() { close(h.release) }) }

func newHeldServer(t *testing.T, answers ...int) *heldServer {
	h := &heldServer{held: make(chan struct{}, 10), release: make(chan struct{})}
	h.script = newScript(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Hold") != "" {
			h.held <- struct{}{}
			<-h.release
			w.WriteHeader(200)
			return
		}
		code := 200
		if n := int(h.others.Add(1)); n <= len(answers) {
			code = answers[n-1]
		}
		w.WriteHeader(code)
	})
	t.Cleanup(h.free) // before the server's Close, which waits for the held handlers
	return h
}

func holdCall(t *testing.T, c *http.Client, h *heldServer) <-chan error {
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, h.url(), nil)
		req.Header.Set("X-Hold", "1")
		resp, err := c.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			err = resp.Body.Close()
		}
		done <- err
	}()
	<-h.held
	return done
}

// The retry after a concurrency 429 gives its slot back and waits for one under the lowered
// limit, ahead of its class: it is not sent while the only slot left is taken. It waits even
// where new calls may not (a queue of 0 places): it is no new load.
func TestAdaptive_AConcurrency429IsRetriedThroughTheLoweredLimit(t *testing.T) {
	h := newHeldServer(t, 429)
	o := concurrencyOptions(2)
	o.BulkheadMaxQueue = 0
	c, p := client(t, o)
	held := holdCall(t, c, h)
	done := make(chan int, 1)
	go func() { code, _ := doCallCtx(context.Background(), c, h.url()); done <- code }()
	eventually(t, "the retry to wait for a slot", func() bool { return p.Concurrency().Waiting[classDefault] == 1 })
	if cc := p.Concurrency(); cc.Limit != 1 || cc.InFlight != 1 || h.others.Load() != 1 {
		t.Fatalf("%+v, %d sent besides the held call: want the limit at 1, the retry waiting unsent", cc, h.others.Load())
	}
	h.free()
	if code := <-done; code != 200 {
		t.Fatalf("status %d after the slot freed", code)
	}
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if cc := p.Concurrency(); cc.InFlight != 0 || h.others.Load() != 2 {
		t.Fatalf("%+v, %d sent: want every slot free and the retry sent once", cc, h.others.Load())
	}
}

// A retry through the limit that the bulkhead turns away fails with the bulkhead's error
// (GaveUpBulkhead), does not count against the circuit, and leaves the slots as they were.
func TestAdaptive_ARetryTheBulkheadTurnsAwayFailsAsBulkheadFull(t *testing.T) {
	h := newHeldServer(t, 429)
	var rec recorder
	c, p := client(t, concurrencyOptions(2), OnEvent(rec.observe))
	held := holdCall(t, c, h)
	call := &Call{}
	call.Init(context.Background(), false)
	call.MaxWait = -1 // a call that never waits: no slot at once, no retry
	_, err := doCallCtx(call, c, h.url())
	var be *BulkheadRejectedError
	if !errors.As(err, &be) || be.Reason != RejectedFull || call.Info.GaveUp != GaveUpBulkhead || call.Info.Attempts != 1 {
		t.Fatalf("%v (%+v), want a bulkhead refusal with GaveUp bulkhead", err, call.Info)
	}
	if g := rec.kind(EventGaveUp); len(g) != 1 || g[0].GaveUp != GaveUpBulkhead {
		t.Fatalf("gave-up events %+v", g)
	}
	if st := p.CircuitState(); st != CircuitClosed {
		t.Fatalf("circuit %v after a retry the bulkhead refused", st)
	}
	if cc := p.Concurrency(); cc.InFlight != 1 {
		t.Fatalf("%+v, want only the held call's slot taken", cc)
	}
	h.free()
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if cc := p.Concurrency(); cc.InFlight != 0 || cc.Waiting != [3]int{} {
		t.Fatalf("%+v, want every slot free", cc)
	}
}

// Calls that gave their slot back to retry wait ahead of the others of their class, in the
// order they came back; a higher class still goes first.
func TestBulkhead_RetriesThroughTheLimitWaitFirstInTheirClass(t *testing.T) {
	var l waitList
	a, b, x, y := &waiter{}, &waiter{}, &waiter{}, &waiter{}
	l.push(x)
	l.pushAgain(a)
	l.push(y)
	l.pushAgain(b)
	var got []*waiter
	for w := l.head; w != nil; w = w.next {
		got = append(got, w)
	}
	if len(got) != 4 || got[0] != a || got[1] != b || got[2] != x || got[3] != y || l.tail != y || l.n != 4 {
		t.Fatalf("order %p, want a b x y (%p %p %p %p)", got, a, b, x, y)
	}
	for w := l.tail; w != nil; w = w.prev {
		if w.prev != nil && w.prev.next != w {
			t.Fatal("links broken")
		}
	}

	p, err := New(adaptiveOptions(1, 1, 10))
	if err != nil {
		t.Fatal(err)
	}
	bh := p.bh
	bh.inflight.Store(1)
	order := make(chan string, 3)
	wait := func(ctx context.Context, name string, again bool) {
		go func() {
			if batch, err := bh.acquireAs(ctx, again); err == nil {
				order <- name
				bh.free(batch)
			}
		}()
	}
	wait(WithPriority(context.Background(), PriorityBatch), "batch", false)
	eventually(t, "the batch call to wait", func() bool { return bh.waiting.Load() == 1 })
	wait(WithPriority(context.Background(), PriorityBatch), "batch retry", true)
	eventually(t, "the retry to wait", func() bool { return bh.waiting.Load() == 2 })
	wait(WithPriority(context.Background(), PriorityInteractive), "interactive", false)
	eventually(t, "the interactive call to wait", func() bool { return bh.waiting.Load() == 3 })
	bh.finish(nil)
	for _, want := range []string{"interactive", "batch retry", "batch"} {
		if got := <-order; got != want {
			t.Fatalf("served %s, want %s", got, want)
		}
	}
}

// A batch call's slot stays counted among the batch calls' through a retry through the limit
// (given back, taken again, freed at the end), after a 429 for too many at once and after a
// 529 alike.
func TestAdaptive_ARetryThroughTheLimitKeepsTheBatchCount(t *testing.T) {
	for _, code := range []int{429, 529} {
		s := newScript(t, status(code, `{}`), ok())
		o := adaptiveOptions(10, 1, 100)
		o.RetryCount = 3
		o.PriorityReservePercent = 20
		var rec recorder
		c, p := client(t, o, OnEvent(rec.observe))
		if got, err := doCallCtx(WithPriority(context.Background(), PriorityBatch), c, s.url()); got != 200 || err != nil {
			t.Fatalf("%d: status %d, %v", code, got, err)
		}
		if r := rec.kind(EventRetryScheduled); len(r) != 1 || !strings.Contains(r[0].Reason, "retried through the lowered limit") {
			t.Fatalf("%d: retries %+v, want one through the limit", code, r)
		}
		if p.InFlight() != 0 || p.bh.batch.Load() != 0 {
			t.Fatalf("%d: %d in flight, %d of them batch, after the call ended", code, p.InFlight(), p.bh.batch.Load())
		}
	}
}

// a529Retry starts a call through an adaptive limit starting at start (floor 1) against a
// server that answers it 529, then holds what it is asked to (newHeldServer), and returns once
// the call's one retry is scheduled, 30 s later: the server, the client, its pipeline, its
// events, the call's end and what cancels it.
func a529Retry(t *testing.T, start int) (*heldServer, *http.Client, *Pipeline, *recorder, <-chan error, context.CancelFunc) {
	t.Helper()
	h := newHeldServer(t, 529)
	o := adaptiveOptions(start, 1, 100)
	o.RetryCount, o.RetryBaseDelaySeconds, o.RetryMaxDelaySeconds = 1, 30, 30
	o.TimeoutSeconds = 120 // the call's total time: room for the backoff
	rec := &recorder{}
	c, p := client(t, o, OnEvent(rec.observe))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := doCallCtx(ctx, c, h.url()); done <- err }()
	eventually(t, "the retry to be scheduled", func() bool { return len(rec.kind(EventRetryScheduled)) == 1 })
	return h, c, p, rec, done, cancel
}

// At the adaptive limit's floor there is nothing left to give back: the retry after a 529 holds
// its slot through its backoff, so that the provider that said it is overloaded gets no more
// load from this route meanwhile; a new call waits for the slot.
func TestAdaptive_A529RetryAtTheFloorKeepsItsSlot(t *testing.T) {
	h, c, p, rec, done, cancel := a529Retry(t, 1)
	defer cancel()
	if r := rec.kind(EventRetryScheduled)[0]; r.Status != 529 || strings.Contains(r.Reason, "slot given back") {
		t.Fatalf("retry %+v, want the backoff waited holding the slot", r)
	}
	if cc := p.Concurrency(); cc.Limit != 1 || cc.InFlight != 1 {
		t.Fatalf("%+v, want the limit at its floor 1 and the slot held by the retry's wait", cc)
	}
	queued := make(chan error, 1)
	go func() { _, err := doCallCtx(context.Background(), c, h.url()); queued <- err }()
	eventually(t, "the new call to wait for the slot", func() bool { return p.Concurrency().Waiting != [3]int{} })
	if n := h.others.Load(); n != 1 {
		t.Fatalf("the server saw %d calls during the backoff, want the first attempt only", n)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("%v, want the retry's wait cancelled", err)
	}
	if err := <-queued; err != nil {
		t.Fatalf("%v, want the waiting call served once the slot is free", err)
	}
	if cc := p.Concurrency(); cc.InFlight != 0 || cc.Waiting != [3]int{} {
		t.Fatalf("%+v, want every slot free", cc)
	}
}

// The retry after a 529 under an adaptive limit waits its backoff without its slot: the
// lowered limit lets another call have it meanwhile. It still counts against RetryCount.
func TestAdaptive_A529RetryGivesItsSlotBackForTheBackoff(t *testing.T) {
	h, c, p, rec, done, cancel := a529Retry(t, 2)
	defer cancel()
	eventually(t, "the slot given back for the backoff of 30 s", func() bool { return p.InFlight() == 0 })
	if r := rec.kind(EventRetryScheduled)[0]; r.Status != 529 || r.Delay != 30*time.Second || !strings.Contains(r.Reason, "slot given back") {
		t.Fatalf("retry %+v, want the backoff waited without the slot", r)
	}
	held := holdCall(t, c, h) // the only slot of the lowered limit
	if cc := p.Concurrency(); cc.Limit != 1 || cc.InFlight != 1 {
		t.Fatalf("%+v, want the limit at 1 and the slot to the new call", cc)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("%v, want the retry's wait cancelled", err)
	}
	h.free()
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if cc := p.Concurrency(); cc.InFlight != 0 || cc.Waiting != [3]int{} {
		t.Fatalf("%+v, want every slot free", cc)
	}

	s := newScript(t, status(529, `{}`), status(529, `{}`), ok())
	o := adaptiveOptions(2, 1, 100)
	o.RetryCount, o.RetryBaseDelaySeconds = 1, 0.001
	c, _ = client(t, o)
	call := &Call{}
	call.Init(context.Background(), false)
	if got, _ := doCallCtx(call, c, s.url()); got != 529 || call.Info.Attempts != 2 || call.Info.GaveUp != GaveUpExhausted {
		t.Fatalf("status %d, %+v: want RetryCount 1 to allow one retry", got, call.Info)
	}
}
