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

// arrivals is a loopback server that notes the X-Tag of each request in the order they
// arrive, and answers at once.
type arrivals struct {
	mu   sync.Mutex
	tags []string
}

func (a *arrivals) handler(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.tags = append(a.tags, r.Header.Get("X-Tag"))
	a.mu.Unlock()
	_, _ = io.WriteString(w, "ok")
}

func (a *arrivals) order() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return strings.Join(a.tags, " ")
}

// tagged sends a call tagged tag in class prio (the pipeline's when ""), reading and closing
// its body before it reports the outcome.
func tagged(ctx context.Context, c *http.Client, url, tag string, prio Priority) error {
	if prio != "" {
		ctx = WithPriority(ctx, prio)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{}`))
	if err != nil {
		return err
	}
	req.Header.Set("X-Tag", tag)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// queueInOrder starts a call per tag (class from classes) and waits until each has joined the
// queue before starting the next, so they queue in this order. It returns their outcomes.
func queueInOrder(t *testing.T, c *http.Client, p *Pipeline, url string, tags []string, classes map[string]Priority) map[string]chan error {
	t.Helper()
	out := map[string]chan error{}
	for _, tag := range tags {
		ch := make(chan error, 1)
		out[tag] = ch
		before := p.bh.waiting.Load()
		go func() { ch <- tagged(context.Background(), c, url, tag, classes[tag]) }()
		eventually(t, tag+" to queue", func() bool { return p.bh.waiting.Load() == before+1 })
	}
	return out
}

var classOfTag = map[string]Priority{
	"i1": PriorityInteractive, "i2": PriorityInteractive, "i3": PriorityInteractive, "i4": PriorityInteractive,
	"i5": PriorityInteractive, "i6": PriorityInteractive,
	"d1": PriorityDefault, "d2": PriorityDefault, "b1": PriorityBatch, "b2": PriorityBatch, "b3": PriorityBatch,
}

func priorityOptions(limit, queue int, minShare float64) Options {
	o := bulkheadOptions(limit, queue)
	o.PriorityMinSharePercent = minShare
	return o
}

func TestBulkhead_ServesHigherClassesFirstAndEachClassInArrivalOrder(t *testing.T) {
	var a arrivals
	s := newScript(t, a.handler)
	c, p := client(t, priorityOptions(1, 10, 0))
	held, err := post(t, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	outs := queueInOrder(t, c, p, s.url(), []string{"b1", "d1", "b2", "i1", "d2", "i2"}, classOfTag)
	if w := p.Concurrency().Waiting; w != [3]int{2, 2, 2} {
		t.Fatalf("waiting by class %v", w)
	}
	readAll(t, held) // frees the slot: it passes from waiter to waiter
	for tag, ch := range outs {
		if err := <-ch; err != nil {
			t.Fatalf("%s: %v", tag, err)
		}
	}
	if got, want := a.order(), " i1 i2 d1 d2 b1 b2"; got != want {
		t.Fatalf("served %q, want %q", got, want)
	}
}

func TestBulkhead_WaitingLowerClassGetsItsMinimumShare(t *testing.T) {
	var a arrivals
	s := newScript(t, a.handler)
	c, p := client(t, priorityOptions(1, 10, 20)) // one turn in five for a waiting batch call
	held, err := post(t, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	outs := queueInOrder(t, c, p, s.url(), []string{"b1", "i1", "i2", "i3", "i4", "i5", "i6"}, classOfTag)
	readAll(t, held)
	for _, ch := range outs {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	if got, want := a.order(), " i1 i2 i3 i4 b1 i5 i6"; got != want {
		t.Fatalf("served %q, want %q", got, want)
	}
}

func TestBulkhead_BatchCallsLeaveTheReserveToHigherClasses(t *testing.T) {
	s := newScript(t, ok())
	o := priorityOptions(5, 10, 10)
	o.PriorityReservePercent = 20 // batch calls hold at most 4 of the 5 slots
	c, p := client(t, o)
	batch := WithPriority(context.Background(), PriorityBatch)
	for i := range 4 {
		resp, err := postCtx(batch, c, s.url(), `{}`)
		if err != nil {
			t.Fatalf("batch call %d: %v", i, err)
		}
		defer resp.Body.Close()
	}
	never := &Call{}
	never.Init(batch, false)
	never.MaxWait = -1
	_, err := postCtx(never, c, s.url(), `{}`)
	var be *BulkheadRejectedError
	if !errors.As(err, &be) || be.Reason != RejectedFull || be.Priority != PriorityBatch {
		t.Fatalf("a fifth batch call got %v, want a rejection: the last slot is kept", err)
	}
	resp, err := postCtx(WithPriority(context.Background(), PriorityInteractive), c, s.url(), `{}`)
	if err != nil {
		t.Fatalf("an interactive call got %v, want the reserved slot", err)
	}
	readAll(t, resp)
	if p.InFlight() != 4 {
		t.Fatalf("%d in flight", p.InFlight())
	}
}

func TestBulkhead_FullQueueShedsTheNewestWaiterOfTheLowestClass(t *testing.T) {
	var a arrivals
	s := newScript(t, a.handler)
	var rec recorder
	c, p := client(t, priorityOptions(1, 2, 0), OnEvent(rec.observe))
	held, err := post(t, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	outs := queueInOrder(t, c, p, s.url(), []string{"b1", "b2"}, classOfTag)
	i1 := make(chan error, 1)
	go func() { i1 <- tagged(context.Background(), c, s.url(), "i1", PriorityInteractive) }()

	var be *BulkheadRejectedError
	if err := <-outs["b2"]; !errors.As(err, &be) || be.Reason != RejectedShed || be.Priority != PriorityBatch {
		t.Fatalf("b2: %v, want shed", err)
	}
	// A call that would shed only its own class or a higher one is turned away itself.
	if err := tagged(context.Background(), c, s.url(), "b3", PriorityBatch); !errors.As(err, &be) || be.Reason != RejectedFull {
		t.Fatalf("b3: %v, want full", err)
	}
	readAll(t, held)
	if err := <-i1; err != nil {
		t.Fatal(err)
	}
	if err := <-outs["b1"]; err != nil {
		t.Fatal(err)
	}
	if got := a.order(); got != " i1 b1" {
		t.Fatalf("served %q", got)
	}
	shed := 0
	for _, e := range rec.kind(EventBulkheadRejected) {
		if e.Rejected == RejectedShed && e.Priority == PriorityBatch {
			shed++
		}
	}
	if shed != 1 || len(rec.kind(EventBulkheadQueued)) != 3 {
		t.Fatalf("%d shed events, %d queued", shed, len(rec.kind(EventBulkheadQueued)))
	}
}

func TestBulkhead_AClassWithNoWaiterStillGetsAPlaceInAFullQueue(t *testing.T) {
	var a arrivals
	s := newScript(t, a.handler)
	c, p := client(t, priorityOptions(1, 3, 20))
	held, err := post(t, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	outs := queueInOrder(t, c, p, s.url(), []string{"i1", "i2", "i3"}, classOfTag)
	b1 := make(chan error, 1)
	go func() { b1 <- tagged(context.Background(), c, s.url(), "b1", PriorityBatch) }()
	var be *BulkheadRejectedError
	if err := <-outs["i3"]; !errors.As(err, &be) || be.Reason != RejectedShed || be.Priority != PriorityInteractive {
		t.Fatalf("i3: %v, want shed for the batch call", err)
	}
	// The batch class has its place now; another batch call finds the queue full, and so does
	// an interactive one: the batch class keeps its one place, where it earns its share.
	if err := tagged(context.Background(), c, s.url(), "b2", PriorityBatch); !errors.As(err, &be) || be.Reason != RejectedFull {
		t.Fatalf("b2: %v, want full", err)
	}
	if err := tagged(context.Background(), c, s.url(), "i4", PriorityInteractive); !errors.As(err, &be) || be.Reason != RejectedFull {
		t.Fatalf("i4: %v, want full", err)
	}
	readAll(t, held)
	for _, ch := range []chan error{outs["i1"], outs["i2"], b1} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	if got := a.order(); got != " i1 i2 b1" {
		t.Fatalf("served %q", got)
	}
}

// gated answers each request when the test releases it, so the test decides when slots free.
type gated struct{ release chan struct{} }

func (g gated) handler(w http.ResponseWriter, r *http.Request) {
	select {
	case <-g.release:
	case <-r.Context().Done():
	}
	_, _ = io.WriteString(w, "ok")
}

func TestBulkhead_RejectionEstimatesWhenASlotWouldBeFree(t *testing.T) {
	g := gated{release: make(chan struct{})}
	s := newScript(t, g.handler)
	clock := newManualClock()
	c, p := client(t, priorityOptions(1, 10, 0), WithClock(clock))
	first := make(chan error, 1)
	go func() { first <- tagged(context.Background(), c, s.url(), "first", "") }()
	eventually(t, "the first call to hold the slot", func() bool { return p.InFlight() == 1 })
	outs := queueInOrder(t, c, p, s.url(), []string{"d1", "d2", "d3", "d4"}, classOfTag)
	// Two slots freed 100 ms apart while calls wait: the queue moves a place every 100 ms.
	for i := range 2 {
		clock.Advance(100 * time.Millisecond)
		g.release <- struct{}{}
		eventually(t, "the next call to take the slot", func() bool { return p.bh.waiting.Load() == int64(3-i) })
	}
	never := &Call{}
	never.Init(context.Background(), false)
	never.MaxWait = -1
	err := tagged(never, c, s.url(), "never", "")
	var be *BulkheadRejectedError
	// Two default calls wait ahead of it: its turn would come in three places, 300 ms.
	if !errors.As(err, &be) || be.RetryAfter != 300*time.Millisecond || be.RetryAfterHint() != be.RetryAfter {
		t.Fatalf("got %v (%+v), want a rejection with RetryAfter 300ms", err, be)
	}
	never.Priority = PriorityInteractive
	if err := tagged(never, c, s.url(), "never", ""); !errors.As(err, &be) ||
		be.RetryAfter != 100*time.Millisecond {
		t.Fatalf("an interactive call waits for nobody: got %v", err)
	}
	close(g.release)
	for _, ch := range append([]chan error{first}, outs["d1"], outs["d2"], outs["d3"], outs["d4"]) {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
}

func TestBulkhead_ClassComesFromTheCallThenItsPolicyThenThePipeline(t *testing.T) {
	o := testOptions()
	o.Priority = PriorityBatch
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	po := testOptions()
	po.Priority = PriorityInteractive
	pol, err := NewPolicy("interactive", po)
	if err != nil {
		t.Fatal(err)
	}
	bg := context.Background()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want Priority
	}{
		{"nothing set: the pipeline's", bg, PriorityBatch},
		{"the call's policy", WithPolicy(bg, pol), PriorityInteractive},
		{"the call's own over its policy", WithPriority(WithPolicy(bg, pol), PriorityDefault), PriorityDefault},
		{"an inner call's over an outer one's", WithPriority(WithPriority(bg, PriorityBatch), PriorityInteractive), PriorityInteractive},
		{"an empty class leaves the policy's", WithPriority(WithPolicy(bg, pol), ""), PriorityInteractive},
	} {
		if got := classOf(tc.ctx, p.policy).priority(); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	if pol.Priority() != PriorityInteractive {
		t.Errorf("Policy.Priority = %s", pol.Priority())
	}
}

func TestParsePriority(t *testing.T) {
	for in, want := range map[string]Priority{"": PriorityDefault, "batch": PriorityBatch, "interactive": PriorityInteractive} {
		if got, err := ParsePriority(in); err != nil || got != want {
			t.Errorf("ParsePriority(%q) = %s, %v", in, got, err)
		}
	}
	if _, err := ParsePriority("urgent"); err == nil {
		t.Error("urgent parsed")
	}
}

// neverBatch is the context of a batch call that never waits: a slot at once, or a refusal.
func neverBatch() context.Context {
	c := &Call{}
	c.Init(WithPriority(context.Background(), PriorityBatch), false)
	c.MaxWait = -1
	return c
}

// The reserve is counted against the batch calls in flight, not against every call: while an
// interactive call holds a slot, batch calls take every other one; once they hold the slots
// outside the reserve, the last one stays free for the higher classes.
func TestBulkhead_TheReserveIsCountedAgainstTheBatchCalls(t *testing.T) {
	s := newScript(t, ok())
	o := priorityOptions(5, 10, 0)
	o.PriorityReservePercent = 20 // batch calls hold at most 4 of the 5 slots
	c, p := client(t, o)
	interactive, err := postCtx(WithPriority(context.Background(), PriorityInteractive), c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	var held []*http.Response
	for i := range 4 {
		resp, err := postCtx(neverBatch(), c, s.url(), `{}`)
		if err != nil {
			t.Fatalf("batch call %d: %v, want a slot: the interactive call holds the reserve", i, err)
		}
		held = append(held, resp)
	}
	var be *BulkheadRejectedError
	if _, err := postCtx(neverBatch(), c, s.url(), `{}`); !errors.As(err, &be) || be.Reason != RejectedFull {
		t.Fatalf("a batch call with every slot taken: %v, want a refusal", err)
	}
	readAll(t, interactive)
	if _, err := postCtx(neverBatch(), c, s.url(), `{}`); !errors.As(err, &be) || be.Reason != RejectedFull {
		t.Fatalf("a batch call with only the reserve free: %v, want a refusal", err)
	}
	if p.InFlight() != 4 || p.bh.batch.Load() != 4 {
		t.Fatalf("%d in flight, %d of them batch", p.InFlight(), p.bh.batch.Load())
	}
	resp, err := postCtx(WithPriority(context.Background(), PriorityInteractive), c, s.url(), `{}`)
	if err != nil {
		t.Fatalf("an interactive call: %v, want the reserved slot", err)
	}
	readAll(t, resp)
	for _, resp := range held {
		readAll(t, resp)
	}
	if p.InFlight() != 0 || p.bh.batch.Load() != 0 {
		t.Fatalf("%d in flight, %d of them batch, after every call ended", p.InFlight(), p.bh.batch.Load())
	}
}

// A slot a higher class frees goes to a waiting batch call while the batch calls hold fewer
// than the slots outside the reserve, though the higher classes still hold the others.
func TestBulkhead_AWaitingBatchCallGetsTheSlotAHigherClassFrees(t *testing.T) {
	var a arrivals
	s := newScript(t, a.handler)
	o := priorityOptions(2, 10, 0)
	o.PriorityReservePercent = 50 // batch calls hold at most 1 of the 2 slots
	c, p := client(t, o)
	var held []*http.Response
	for range 2 {
		resp, err := postCtx(WithPriority(context.Background(), PriorityInteractive), c, s.url(), `{}`)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, resp)
	}
	outs := queueInOrder(t, c, p, s.url(), []string{"b1", "b2"}, classOfTag)
	readAll(t, held[0])
	for _, tag := range []string{"b1", "b2"} {
		select {
		case err := <-outs[tag]:
			if err != nil {
				t.Fatalf("%s: %v", tag, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s still waits with a slot free and no batch call in flight: the reserve kept it", tag)
		}
	}
	if got := a.order(); got != "  b1 b2" {
		t.Fatalf("served %q", got)
	}
	readAll(t, held[1])
	if p.InFlight() != 0 || p.bh.batch.Load() != 0 {
		t.Fatalf("%d in flight, %d of them batch, after every call ended", p.InFlight(), p.bh.batch.Load())
	}
}

// Batch and interactive calls racing for the slots: the batch calls never hold more than the
// slots outside the reserve, and every slot and every count is given back.
func TestBulkhead_TheBatchCountHoldsUnderRaces(t *testing.T) {
	o := priorityOptions(4, 1000, 0)
	o.PriorityReservePercent = 25 // batch calls hold at most 3 of the 4 slots
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	bh := p.bh
	var over atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			prio := PriorityBatch
			if g%4 == 0 {
				prio = PriorityInteractive
			}
			bounded, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a lost slot fails, not hangs
			defer cancel()
			ctx := WithPriority(bounded, prio)
			for range 2000 {
				batch, err := bh.acquire(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				if bh.batch.Load() > bh.open.Load() {
					over.Add(1)
				}
				bh.free(batch)
			}
		}()
	}
	wg.Wait()
	if over.Load() != 0 || bh.inflight.Load() != 0 || bh.batch.Load() != 0 || bh.waiting.Load() != 0 {
		t.Fatalf("%d looks saw more batch calls than %d; at the end %d in flight, %d batch, %d waiting",
			over.Load(), bh.open.Load(), bh.inflight.Load(), bh.batch.Load(), bh.waiting.Load())
	}
}
