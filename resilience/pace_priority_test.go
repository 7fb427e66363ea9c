package resilience

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"
)

// neverWaits is a call of class prio that never waits: for a budget, it is admitted at once or
// refused.
func neverWaits(prio Priority) *Call {
	c := &Call{}
	c.Init(context.Background(), false)
	c.MaxWait, c.Priority = -1, prio
	return c
}

func paceOptions(perMinute int, reserve, minShare float64) Options {
	o := testOptions()
	o.PaceRequestsPerMinute = perMinute
	o.PaceFromHeaders = false
	o.PriorityReservePercent = reserve
	o.PriorityMinSharePercent = minShare
	return o
}

func TestPace_BatchCallsLeaveTheReserveOfABudgetToHigherClasses(t *testing.T) {
	s := newScript(t, ok())
	var rec recorder
	c, _ := client(t, paceOptions(10, 20, 10), WithClock(newManualClock()), OnEvent(rec.observe))
	for i := range 8 {
		if code, err := doCallCtx(neverWaits(PriorityBatch), c, s.url()); err != nil || code != 200 {
			t.Fatalf("batch call %d: %d %v", i, code, err)
		}
	}
	_, err := doCallCtx(neverWaits(PriorityBatch), c, s.url())
	var ce *CooldownError
	// The last 2 of 10 requests are kept: a batch call may go once the budget holds 3, in 6 s.
	if !errors.As(err, &ce) || ce.Budget != "requests" || ce.RetryAfter < 5990*time.Millisecond || ce.RetryAfter > 6010*time.Millisecond {
		t.Fatalf("the ninth batch call got %v, want a refusal with RetryAfter 6s", err)
	}
	rejected := rec.kind(EventCooldownRejected)
	if len(rejected) != 1 || rejected[0].Priority != PriorityBatch {
		t.Fatalf("events %+v", rejected)
	}
	for i := range 2 {
		if code, err := doCallCtx(neverWaits(PriorityInteractive), c, s.url()); err != nil || code != 200 {
			t.Fatalf("interactive call %d: %d %v, want the reserve", i, code, err)
		}
	}
	if _, err := doCallCtx(neverWaits(PriorityInteractive), c, s.url()); !errors.As(err, &ce) {
		t.Fatalf("with the budget spent: %v", err)
	}
	if s.hits.Load() != 10 {
		t.Fatalf("%d requests sent, want the budget's 10", s.hits.Load())
	}
}

func TestPace_WaitingBatchCallGetsItsShareOfTheReserve(t *testing.T) {
	s := newScript(t, ok())
	clock := newManualClock()
	// 60 a minute, half kept from batch calls; a waiting batch call gets a turn for each turn
	// a higher class takes from the reserve.
	c, p := client(t, paceOptions(60, 50, 50), WithClock(clock))
	for range 30 {
		if _, err := doCallCtx(neverWaits(PriorityDefault), c, s.url()); err != nil {
			t.Fatal(err)
		}
	}
	armed := clock.armed()
	batch := make(chan error, 1)
	go func() {
		_, err := doCallCtx(WithPriority(context.Background(), PriorityBatch), c, s.url())
		batch <- err
	}()
	// The batch call sleeps on the clock before the others earn it a turn: its timer armed
	// after the move below would count its wait from the later time, and never fire.
	eventually(t, "the batch call to sleep", func() bool {
		return p.pace.reserve.waiting.Load() == 1 && clock.armed() > armed
	})
	for range 2 {
		if _, err := doCallCtx(neverWaits(PriorityInteractive), c, s.url()); err != nil {
			t.Fatal(err)
		}
	}
	// A second later the budget holds 29, still inside the reserve of 30; the batch call's
	// turns earned meanwhile let it through.
	clock.Advance(time.Second)
	select {
	case err := <-batch:
		if err != nil {
			t.Fatalf("batch call: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the batch call still waits a second later: its turns earned meanwhile were not taken")
	}
	if s.hits.Load() != 33 {
		t.Fatalf("%d requests sent", s.hits.Load())
	}
}

// doCallCtx makes a call with ctx and reads its body; safe on any goroutine.
func doCallCtx(ctx context.Context, c *http.Client, url string) (int, error) {
	resp, err := postCtx(ctx, c, url, `{}`)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Body.Close()
}
