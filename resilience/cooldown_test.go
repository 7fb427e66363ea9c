package resilience

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// cooldownServer answers 429 with a hint of hint (none when 0) to the first n calls, then 200,
// and counts the calls.
func cooldownServer(t *testing.T, n int32, hint string) (*script, *atomic.Int32) {
	var calls atomic.Int32
	s := newScript(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= n {
			if hint != "" {
				w.Header().Set("Retry-After", hint)
			}
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	return s, &calls
}

func doCtx(t *testing.T, c *http.Client, ctx context.Context, url string) (*http.Response, error) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	resp, err := c.Do(req)
	if err == nil {
		_ = resp.Body.Close()
	}
	return resp, err
}

// After a 429 with a hint, a call that cannot wait for the pause is refused without being
// sent; one that can wait is sent when the pause is over.
func TestCooldown_PausesThePipelineAfterA429(t *testing.T) {
	s, calls := cooldownServer(t, 1, "5")
	clock := newInstantClock()
	o := instantOptions()
	o.RetryCount = 0
	var rec recorder
	c, p := client(t, o, WithClock(clock), OnEvent(rec.observe))
	resp, err := doCtx(t, c, context.Background(), s.url())
	if err != nil || resp.StatusCode != 429 {
		t.Fatalf("first call: %v %v", resp, err)
	}
	if ev := rec.kind(EventCooldownStarted); len(ev) != 1 || ev[0].Delay != 5*time.Second || !ev[0].ServerHint {
		t.Fatalf("cooldown events %+v", ev)
	}
	if p.CircuitState() != CircuitClosed {
		t.Fatal("a 429 counted against the circuit")
	}

	// A caller that may wait one second at most: refused at once, nothing sent.
	call := &Call{}
	call.Init(context.Background(), false)
	call.MaxWait = time.Second
	_, err = doCtx(t, c, call, s.url())
	var ce *CooldownError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCoolingDown) || ce.RetryAfter != 5*time.Second || ce.ErrorKind() != "rate_limited" {
		t.Fatalf("impatient call: %v", err)
	}
	if calls.Load() != 1 {
		t.Fatalf("the refused call was sent (%d calls)", calls.Load())
	}
	// A caller that never waits: refused too.
	call.Init(context.Background(), false)
	call.MaxWait = -1
	if _, err := doCtx(t, c, call, s.url()); !errors.Is(err, ErrCoolingDown) {
		t.Fatalf("a call that never waits: %v", err)
	}

	// A patient caller waits the pause out (the instant clock moves by the wait), then sends.
	resp, err = doCtx(t, c, context.Background(), s.url())
	if err != nil || resp.StatusCode != 200 || calls.Load() != 2 {
		t.Fatalf("patient call: %v %v (%d calls)", resp, err, calls.Load())
	}
	if w := rec.kind(EventCooldownWaited); len(w) != 1 || w[0].Delay != 5*time.Second {
		t.Fatalf("waited events %+v", w)
	}
	if r := rec.kind(EventCooldownRejected); len(r) != 2 {
		t.Fatalf("rejected events %+v", r)
	}
}

// Without a hint the pause is the first backoff delay; a pause longer than the policy's
// RetryMaxDelaySeconds is never waited for; a quota 429 and RateLimitCooldown false do not
// pause the pipeline.
func TestCooldown_LengthsAndExceptions(t *testing.T) {
	t.Run("no hint", func(t *testing.T) {
		s, _ := cooldownServer(t, 1, "")
		o := instantOptions()
		o.RetryCount, o.RetryBaseDelaySeconds = 0, 2
		var rec recorder
		c, _ := client(t, o, WithClock(newInstantClock()), OnEvent(rec.observe))
		_, _ = doCtx(t, c, context.Background(), s.url())
		if ev := rec.kind(EventCooldownStarted); len(ev) != 1 || ev[0].Delay != 2*time.Second || ev[0].ServerHint {
			t.Fatalf("events %+v", ev)
		}
	})
	t.Run("above the max delay", func(t *testing.T) {
		s, calls := cooldownServer(t, 1, "60")
		o := instantOptions()
		o.RetryCount, o.RetryMaxDelaySeconds = 0, 30
		c, _ := client(t, o, WithClock(newInstantClock()))
		_, _ = doCtx(t, c, context.Background(), s.url())
		_, err := doCtx(t, c, context.Background(), s.url())
		var ce *CooldownError
		if !errors.As(err, &ce) || ce.RetryAfter != time.Minute || calls.Load() != 1 {
			t.Fatalf("%v (%d calls)", err, calls.Load())
		}
	})
	t.Run("quota", func(t *testing.T) {
		s := newScript(t, status(429, `{"error":{"code":"insufficient_quota","message":"You exceeded your current quota"}}`, "Retry-After", "30"), ok())
		o := instantOptions()
		c, _ := client(t, o, WithClock(newInstantClock()))
		_, _ = doCtx(t, c, context.Background(), s.url())
		if _, err := doCtx(t, c, context.Background(), s.url()); err != nil {
			t.Fatalf("an exhausted quota paused the pipeline: %v", err)
		}
	})
	t.Run("off", func(t *testing.T) {
		s, calls := cooldownServer(t, 1, "60")
		o := instantOptions()
		o.RetryCount, o.RateLimitCooldown = 0, false
		c, _ := client(t, o, WithClock(newInstantClock()))
		_, _ = doCtx(t, c, context.Background(), s.url())
		if _, err := doCtx(t, c, context.Background(), s.url()); err != nil || calls.Load() != 2 {
			t.Fatalf("%v (%d calls)", err, calls.Load())
		}
	})
}

// A call whose caller allows a shorter wait than the server's hint gives up at once
// (wait_too_long) instead of sleeping, so its client can send it elsewhere.
func TestCooldown_MaxWaitStopsTheRetryWait(t *testing.T) {
	s, calls := cooldownServer(t, 1, "10")
	clock := newInstantClock()
	o := instantOptions()
	c, _ := client(t, o, WithClock(clock))
	call := &Call{}
	call.Init(context.Background(), false)
	call.MaxWait = 2 * time.Second
	resp, err := doCtx(t, c, call, s.url())
	if err != nil || resp.StatusCode != 429 || call.Info.GaveUp != GaveUpWaitTooLong || call.Info.Attempts != 1 || calls.Load() != 1 {
		t.Fatalf("%v %v, info %+v, %d calls", resp, err, call.Info, calls.Load())
	}
	if len(clock.waits()) != 0 {
		t.Fatalf("the call slept: %v", clock.waits())
	}
}
