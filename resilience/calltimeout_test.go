package resilience

import (
	"context"
	"errors"
	"testing"
	"time"
)

// What the pipeline tells the steady client about its whole-call deadline, a deadline of the
// context: the wait it refused and the deadline that wait would have passed.

func TestRetry_ARefusedWaitNamesItsDeadlineInCallInfo(t *testing.T) {
	s := newScript(t, status(429, `slow down`, "Retry-After", "20"), ok())
	o := testOptions()
	o.RateLimitCooldown = false // no pause after the 429: each call meets it
	c, _ := client(t, o)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // before TimeoutSeconds (10 s)
	defer cancel()
	dl, _ := ctx.Deadline()
	ctx, info := WithCallInfo(ctx)
	resp, err := postCtx(ctx, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if info.GaveUp != GaveUpDeadline || info.Wait != 20*time.Second || !info.Deadline.Equal(dl) || info.Attempts != 1 {
		t.Fatalf("CallInfo %+v, want the refused 20 s and the context's deadline %v", *info, dl)
	}

	// A wait that the pipeline's own TimeoutSeconds refuses names that deadline instead.
	s = newScript(t, status(429, `slow down`, "Retry-After", "20"), ok())
	ctx, info = WithCallInfo(context.Background())
	resp, err = postCtx(ctx, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if info.GaveUp != GaveUpDeadline || info.Deadline.IsZero() || info.Deadline.Equal(dl) {
		t.Fatalf("CallInfo %+v, want the pipeline's own deadline", *info)
	}
}

func TestCooldown_ARefusalForTheDeadlineNamesIt(t *testing.T) {
	s := newScript(t, status(429, `slow down`, "Retry-After", "20"), ok())
	o := testOptions()
	o.RetryCount = 0
	c, _ := client(t, o)
	resp, err := post(t, c, s.url(), `{}`) // the 429 starts a 20 s pause
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	dl, _ := ctx.Deadline()
	_, err = postCtx(ctx, c, s.url(), `{}`)
	var ce *CooldownError
	if !errors.As(err, &ce) || !ce.Deadline.Equal(dl) || s.hits.Load() != 1 {
		t.Fatalf("err = %v (%+v), want a refusal naming the deadline, nothing sent", err, ce)
	}

	// When the call's own MaxWait is what refuses the wait, the deadline is not to blame.
	call := &Call{}
	call.Init(ctx, false)
	call.MaxWait = time.Second
	_, err = postCtx(call, c, s.url(), `{}`)
	if !errors.As(err, &ce) || !ce.Deadline.IsZero() {
		t.Fatalf("err = %v (%+v), want a refusal that does not name the deadline", err, ce)
	}
}

// The client's whole-call deadline ends the context with a *TimeoutError of its own
// (TimeoutCall): the caller's budget, which must not count against the provider's circuit,
// unlike the pipeline's own timeouts.
func TestBreaker_TheCallersDeadlineIsNotAFailure(t *testing.T) {
	done := make(chan struct{})
	defer close(done)
	s := newScript(t, stall(done))
	o := testOptions()
	o.CircuitBreakerThreshold = 1
	c, p := client(t, o)
	ctx, cancel := context.WithCancelCause(context.Background())
	errs := make(chan error, 1)
	go func() {
		_, err := postCtx(ctx, c, s.url(), `{}`)
		errs <- err
	}()
	eventually(t, "the request", func() bool { return s.hits.Load() == 1 })
	cancel(&TimeoutError{Limit: TimeoutCall, After: time.Second})
	err := <-errs
	var te *TimeoutError
	if !errors.As(err, &te) || te.Limit != TimeoutCall {
		t.Fatalf("err = %v, want the caller's cause as it is", err)
	}
	if st := p.CircuitState(); st != CircuitClosed {
		t.Fatalf("circuit %s: the caller's deadline counted as the provider's failure", st)
	}
}

func TestOptions_CallTimeoutSecondsIsBounded(t *testing.T) {
	for _, v := range []float64{-1, 86401} {
		o := DefaultOptions()
		o.CallTimeoutSeconds = v
		var ve *ValidationError
		if err := o.Validate(); !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0].Field != "CallTimeoutSeconds" ||
			ve.Problems[0].Allowed != "must be a number between 0 and 86400" {
			t.Errorf("CallTimeoutSeconds %v: %v", v, err)
		}
	}
	o := DefaultOptions()
	o.CallTimeoutSeconds = 2.5
	p, err := NewPolicy("p", o)
	if err != nil || p.CallTimeout() != 2500*time.Millisecond {
		t.Fatalf("%v, %v", p, err)
	}
}
