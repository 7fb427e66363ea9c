package resilience

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func adaptiveOptions(start, lo, hi int) Options {
	o := testOptions()
	o.AdaptiveConcurrency = true
	o.BulkheadMaxConcurrency = start
	o.AdaptiveMinConcurrency, o.AdaptiveMaxConcurrency = lo, hi
	o.BulkheadMaxQueue = 1000
	o.RetryCount = 0
	o.CircuitBreakerThreshold = 1000
	return o
}

func TestAdaptive_AnOverloadLowersTheLimitOncePerGenerationOfAttempts(t *testing.T) {
	g := newGate(529)
	s := newScript(t, g.handler, g.handler, g.handler, g.handler, g.handler, status(529, `{}`))
	var rec recorder
	c, p := client(t, adaptiveOptions(10, 1, 100), OnEvent(rec.observe))
	var wg sync.WaitGroup
	for range 5 {
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = doCallCtx(context.Background(), c, s.url()) }()
	}
	for range 5 {
		<-g.arrived
	}
	close(g.release) // five 529s at once, all sent under the limit of 10
	wg.Wait()
	if cc := p.Concurrency(); cc.Limit != 9 || cc.Decreases != 1 || !cc.Adaptive {
		t.Fatalf("after a burst of 529s sent together: %+v, want one decrease to 9", cc)
	}
	// An attempt sent after the decrease that meets an overload again lowers it again.
	if code, _ := doCallCtx(context.Background(), c, s.url()); code != 529 {
		t.Fatalf("status %d", code)
	}
	if cc := p.Concurrency(); cc.Limit != 8 || cc.Decreases != 2 {
		t.Fatalf("%+v, want 8", cc)
	}
	changes := rec.kind(EventConcurrencyLimitChanged)
	if len(changes) != 2 || changes[0].PrevLimit != 10 || changes[0].Limit != 9 || changes[0].Reason != reasonStatus529 {
		t.Fatalf("events %+v", changes)
	}
}

func TestAdaptive_QuotaSpentIsNoOverload(t *testing.T) {
	s := newScript(t, status(429, `{"error":{"code":"insufficient_quota"}}`), status(429, `{"error":{"type":"rate_limit"}}`))
	o := adaptiveOptions(10, 1, 100)
	o.RateLimitCooldown = false
	c, p := client(t, o)
	_, _ = doCallCtx(context.Background(), c, s.url())
	if p.Concurrency().Limit != 10 {
		t.Fatal("a spent quota lowered the limit")
	}
	_, _ = doCallCtx(context.Background(), c, s.url())
	if p.Concurrency().Limit != 9 {
		t.Fatal("a rate limit did not lower the limit")
	}
}

func TestAdaptive_AnOverloadReportedInsideTheStreamLowersTheLimit(t *testing.T) {
	s := newScript(t, ok())
	c, p := client(t, adaptiveOptions(10, 1, 100))
	call := &Call{}
	call.Init(context.Background(), true)
	resp, err := postCtx(call, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadAll(resp.Body)
	call.ReportOverload() // an overloaded_error event in the 200 answer
	resp.Body.Close()
	if p.Concurrency().Limit != 9 {
		t.Fatalf("limit %d, want 9", p.Concurrency().Limit)
	}
}

func TestAdaptive_GrowsWhileTheSlotsAreBusyUpToItsMaximum(t *testing.T) {
	s := newScript(t, func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(time.Millisecond)
		_, _ = io.WriteString(w, "ok")
	})
	var rec recorder
	c, p := client(t, adaptiveOptions(2, 1, 6), OnEvent(rec.observe))
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if _, err := doCallCtx(context.Background(), c, s.url()); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	eventually(t, "the limit to reach its maximum", func() bool { return p.Concurrency().Limit == 6 })
	stop.Store(true)
	wg.Wait()
	for _, e := range rec.kind(EventConcurrencyLimitChanged) {
		if e.Limit <= e.PrevLimit || e.Reason != reasonSlowStart || e.Limit > 6 {
			t.Errorf("change %d → %d (%s)", e.PrevLimit, e.Limit, e.Reason)
		}
	}
}

// busy makes the limiter of p see its slots in use, so that answers count towards rounds.
func busy(p *Pipeline) { p.bh.inflight.Store(1000) }

func answers(l *limiter, n int64) {
	for range n {
		l.answered()
	}
}

func TestAdaptive_SettlesUnderTheLimitWhereTheLastOverloadCame(t *testing.T) {
	p, err := New(adaptiveOptions(20, 1, 100))
	if err != nil {
		t.Fatal(err)
	}
	busy(p)
	l := p.bh.adaptive
	answers(l, 20) // slow start: half again
	if got := p.Concurrency().Limit; got != 30 {
		t.Fatalf("slow start: %d", got)
	}
	l.overload(l.gen.Load(), reasonStatus529) // the capacity is below 30
	if got := p.Concurrency().Limit; got != 27 {
		t.Fatalf("after the overload: %d", got)
	}
	answers(l, 27) // one a round now
	answers(l, 28)
	if got := p.Concurrency().Limit; got != 29 {
		t.Fatalf("climbing back: %d", got)
	}
	answers(l, 29*(adaptiveHold-1))
	if got := p.Concurrency().Limit; got != 29 {
		t.Fatalf("one below the last overload's limit it holds: %d", got)
	}
	answers(l, 29)
	if got := p.Concurrency().Limit; got != 30 {
		t.Fatalf("after %d clean rounds it tries again: %d", adaptiveHold, got)
	}
	answers(l, 30) // clean at 30: the capacity grew, climb freely
	answers(l, 31)
	if got := p.Concurrency().Limit; got != 32 {
		t.Fatalf("past the old ceiling: %d", got)
	}
}

func TestAdaptive_StaysWithinItsBoundsAndIdleAnswersTeachNothing(t *testing.T) {
	p, err := New(adaptiveOptions(50, 3, 8)) // the start is kept within the bounds
	if err != nil {
		t.Fatal(err)
	}
	l := p.bh.adaptive
	if got := p.Concurrency(); got.Limit != 8 || got.Min != 3 || got.Max != 8 {
		t.Fatalf("%+v", got)
	}
	answers(l, 100) // nothing in flight: the provider's capacity was not tested
	if l.increases.Load() != 0 {
		t.Fatal("an idle pipeline grew its limit")
	}
	for range 20 {
		l.overload(l.gen.Load(), reasonStatus503)
	}
	if got := p.Concurrency().Limit; got != 3 {
		t.Fatalf("floor: %d", got)
	}
}

func TestAdaptive_FirstTokensThreeTimesSlowerLowerTheLimit(t *testing.T) {
	p, err := New(adaptiveOptions(10, 1, 100))
	if err != nil {
		t.Fatal(err)
	}
	busy(p)
	for range MinLatencySamples {
		p.ObserveLatency(LatencySample{FirstContent: 100 * time.Millisecond, Stream: true})
	}
	for range 8 {
		p.ObserveLatency(LatencySample{FirstContent: 250 * time.Millisecond, Stream: true}) // over twice
	}
	answers(p.bh.adaptive, 50)
	if cc := p.Concurrency(); cc.Limit != 10 {
		t.Fatalf("slower first tokens let the limit grow: %+v", cc)
	}
	for range 5 { // at most one decrease a round (as many samples as the limit)
		p.ObserveLatency(LatencySample{FirstContent: time.Second, Stream: true})
	}
	if cc := p.Concurrency(); cc.Limit != 9 || cc.Decreases != 1 {
		t.Fatalf("three times slower: %+v, want one decrease", cc)
	}
}

func TestAdaptive_ARaisedLimitHandsSlotsToTheWaiters(t *testing.T) {
	g := gated{release: make(chan struct{})}
	s := newScript(t, g.handler)
	c, p := client(t, adaptiveOptions(1, 1, 4))
	done := make(chan error, 3)
	for range 3 {
		go func() { _, err := doCallCtx(context.Background(), c, s.url()); done <- err }()
	}
	eventually(t, "one in flight, two waiting", func() bool {
		cc := p.Concurrency()
		return cc.InFlight == 1 && cc.Waiting[classDefault] == 2
	})
	l := p.bh.adaptive
	l.mu.Lock()
	l.limit = 3
	l.b.setLimit(3)
	l.mu.Unlock()
	eventually(t, "the waiters to get the new slots", func() bool { return p.InFlight() == 3 })
	close(g.release)
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

func TestOptions_AdaptiveBoundsAndPriorityAreChecked(t *testing.T) {
	o := DefaultOptions()
	o.AdaptiveConcurrency = true
	o.AdaptiveMinConcurrency, o.AdaptiveMaxConcurrency = 50, 10
	o.Priority = "urgent"
	o.PriorityReservePercent = 95
	o.PriorityMinSharePercent = -1
	var ve *ValidationError
	if err := o.Validate(); !errors.As(err, &ve) {
		t.Fatal(err)
	}
	want := map[string]bool{"AdaptiveMinConcurrency": true, "Priority": true, "PriorityReservePercent": true,
		"PriorityMinSharePercent": true}
	for _, p := range ve.Problems {
		delete(want, p.Field)
	}
	if len(want) != 0 {
		t.Fatalf("not reported: %v in %v", want, ve)
	}
	o = DefaultOptions()
	o.AdaptiveMinConcurrency = 0 // unused while AdaptiveConcurrency is off
	o.Priority = ""              // the default class
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
}
