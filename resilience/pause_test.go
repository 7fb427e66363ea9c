package resilience

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// A 429 that asks for a day pauses the pipeline for RateLimitMaxPauseSeconds only; then one
// call probes while the others are still refused, and the probe's answer ends the pause.
func TestCooldown_LongHintPausesForTheMaximumThenOneProbe(t *testing.T) {
	var answer atomic.Int32 // the status the server gives: 429 with a day's hint, or 200
	answer.Store(http.StatusTooManyRequests)
	release := make(chan struct{})
	var calls atomic.Int32
	s := newScript(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Header.Get("X-Hold") != "" {
			<-release
		}
		if code := int(answer.Load()); code == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "86400")
			w.WriteHeader(code)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	clock := newManualClock()
	o := testOptions()
	o.RetryCount = 0
	o.TimeoutSeconds = 0
	o.StreamIdleTimeoutSeconds = 0
	o.RateLimitMaxPauseSeconds = 120
	var rec recorder
	c, p := client(t, o, WithClock(clock), OnEvent(rec.observe))

	resp, err := doCtx(t, c, context.Background(), s.url())
	if err != nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("first call: %v %v", resp, err)
	}
	if got := p.CoolingFor(); got != 120*time.Second {
		t.Fatalf("paused for %s, want the maximum of 2m0s", got)
	}
	if ev := rec.kind(EventCooldownStarted); len(ev) != 1 || ev[0].Delay != 120*time.Second {
		t.Fatalf("cooldown events %+v", ev)
	}

	// Within the pause a call that may not wait that long is refused, nothing sent.
	impatient := func() error {
		call := &Call{}
		call.Init(context.Background(), false)
		call.MaxWait = -1
		_, err := doCtx(t, c, call, s.url())
		return err
	}
	if err := impatient(); !errors.Is(err, ErrCoolingDown) || calls.Load() != 1 {
		t.Fatalf("during the pause: %v (%d calls)", err, calls.Load())
	}

	// The pause ends at the maximum: one call goes through as the probe (held by the
	// server here), and the others are refused while it is out.
	clock.Advance(120 * time.Second)
	answer.Store(http.StatusOK)
	probe := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, s.url(), nil)
		req.Header.Set("X-Hold", "1")
		resp, err := c.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = errors.New(resp.Status)
			}
		}
		probe <- err
	}()
	eventually(t, "the probe to reach the server", func() bool { return calls.Load() == 2 })
	var ce *CooldownError
	if err := impatient(); !errors.As(err, &ce) || ce.RetryAfter <= 0 {
		t.Fatalf("a second call while the probe is out: %v", err)
	}
	if calls.Load() != 2 {
		t.Fatalf("a call besides the probe was sent (%d calls)", calls.Load())
	}
	close(release)
	if err := <-probe; err != nil {
		t.Fatalf("probe: %v", err)
	}
	// The probe was answered: calls flow again.
	for i := 0; i < 3; i++ {
		if err := impatient(); err != nil {
			t.Fatalf("after the probe: %v", err)
		}
	}
	if calls.Load() != 5 {
		t.Fatalf("calls %d, want 5", calls.Load())
	}
}

// A probe answered 429 again starts the next pause, again no longer than the maximum.
func TestCooldown_ProbeMetByAnother429PausesAgain(t *testing.T) {
	s, calls := cooldownServer(t, 100, "86400")
	clock := newManualClock()
	o := testOptions()
	o.RetryCount = 0
	o.TimeoutSeconds = 0
	o.StreamIdleTimeoutSeconds = 0
	o.RateLimitMaxPauseSeconds = 60
	c, p := client(t, o, WithClock(clock))
	if resp, err := doCtx(t, c, context.Background(), s.url()); err != nil || resp.StatusCode != 429 {
		t.Fatalf("first call: %v %v", resp, err)
	}
	clock.Advance(60 * time.Second)
	if resp, err := doCtx(t, c, context.Background(), s.url()); err != nil || resp.StatusCode != 429 {
		t.Fatalf("probe: %v %v", resp, err)
	}
	if got := p.CoolingFor(); got != 60*time.Second {
		t.Fatalf("paused again for %s, want 1m0s", got)
	}
	if calls.Load() != 2 {
		t.Fatalf("%d calls, want 2", calls.Load())
	}
}

// Reset ends a pause as it ends isolation: the operator's word is final.
func TestPipeline_ResetEndsAPause(t *testing.T) {
	s, calls := cooldownServer(t, 1, "3600")
	clock := newManualClock()
	o := testOptions()
	o.RetryCount = 0
	o.TimeoutSeconds = 0
	o.StreamIdleTimeoutSeconds = 0
	c, p := client(t, o, WithClock(clock))
	if resp, err := doCtx(t, c, context.Background(), s.url()); err != nil || resp.StatusCode != 429 {
		t.Fatalf("first call: %v %v", resp, err)
	}
	if p.CoolingFor() != 300*time.Second {
		t.Fatalf("paused for %s, want the default maximum of 5m0s", p.CoolingFor())
	}
	p.Reset()
	if p.CoolingFor() != 0 || p.CircuitInfo().CoolingFor != 0 {
		t.Fatalf("still pausing after Reset: %s", p.CoolingFor())
	}
	call := &Call{}
	call.Init(context.Background(), false)
	call.MaxWait = -1
	if resp, err := doCtx(t, c, call, s.url()); err != nil || resp.StatusCode != 200 || calls.Load() != 2 {
		t.Fatalf("after Reset: %v %v (%d calls)", resp, err, calls.Load())
	}
}
