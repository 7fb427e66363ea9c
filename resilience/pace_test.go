package resilience

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

func countingServer(t *testing.T, headers ...string) (*script, *atomic.Int32) {
	var calls atomic.Int32
	s := newScript(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.WriteHeader(http.StatusOK)
	})
	return s, &calls
}

// impatient returns a Call context that waits at most d.
func impatient(d time.Duration, tokens int) *Call {
	c := &Call{}
	c.Init(context.Background(), false)
	c.MaxWait, c.Tokens = d, tokens
	return c
}

func TestPace_RequestsPerMinute(t *testing.T) {
	s, calls := countingServer(t)
	o := instantOptions()
	o.PaceRequestsPerMinute = 2
	o.RetryMaxDelaySeconds = 60
	var rec recorder
	c, p := client(t, o, WithClock(newInstantClock()), OnEvent(rec.observe))
	for range 2 {
		if _, err := doCtx(t, c, context.Background(), s.url()); err != nil {
			t.Fatal(err)
		}
	}
	if h := p.Headroom(); h.Requests != 0 || h.RequestsPerMinute != 2 || h.Tokens != -1 {
		t.Fatalf("headroom %+v", h)
	}
	_, err := doCtx(t, c, impatient(time.Second, 0), s.url())
	var ce *CooldownError
	if !errors.As(err, &ce) || ce.Budget != "requests" || ce.RetryAfter != 30*time.Second || calls.Load() != 2 {
		t.Fatalf("%v (%d calls)", err, calls.Load())
	}
	// A patient call waits for the room (the instant clock moves by the wait), then is sent.
	if _, err := doCtx(t, c, context.Background(), s.url()); err != nil || calls.Load() != 3 {
		t.Fatalf("%v (%d calls)", err, calls.Load())
	}
	if w := rec.kind(EventCooldownWaited); len(w) != 1 || w[0].Reason != "requests per minute" || w[0].Delay != 30*time.Second {
		t.Fatalf("waited %+v", w)
	}
}

func TestPace_TokensPerMinute(t *testing.T) {
	s, calls := countingServer(t)
	o := instantOptions()
	o.PaceTokensPerMinute = 100
	c, _ := client(t, o, WithClock(newInstantClock()))
	if _, err := doCtx(t, c, impatient(time.Second, 60), s.url()); err != nil {
		t.Fatal(err)
	}
	_, err := doCtx(t, c, impatient(time.Second, 60), s.url())
	var ce *CooldownError
	if !errors.As(err, &ce) || ce.Budget != "tokens" || ce.RetryAfter != 12*time.Second || calls.Load() != 1 {
		t.Fatalf("%v (%d calls)", err, calls.Load())
	}
	// A call without an estimate debits no tokens.
	if _, err := doCtx(t, c, impatient(time.Second, 0), s.url()); err != nil {
		t.Fatal(err)
	}
}

// The budgets are learnt from the answers' headers: the limit, and what remains.
func TestPace_LearnsFromHeaders(t *testing.T) {
	s, calls := countingServer(t, "X-Ratelimit-Limit-Requests", "3", "X-Ratelimit-Remaining-Requests", "0",
		"X-Ratelimit-Limit-Tokens", "1000", "X-Ratelimit-Remaining-Tokens", "500")
	o := instantOptions()
	c, p := client(t, o, WithClock(newInstantClock()))
	if h := p.Headroom(); h.Requests != -1 || h.Tokens != -1 {
		t.Fatalf("headroom before any answer %+v", h)
	}
	if _, err := doCtx(t, c, context.Background(), s.url()); err != nil {
		t.Fatal(err)
	}
	h := p.Headroom()
	if h.RequestsPerMinute != 3 || h.Requests != 0 || h.TokensPerMinute != 1000 || h.Tokens != 0.5 {
		t.Fatalf("headroom %+v", h)
	}
	_, err := doCtx(t, c, impatient(time.Second, 0), s.url())
	var ce *CooldownError
	if !errors.As(err, &ce) || ce.Budget != "requests" || ce.RetryAfter != 20*time.Second || calls.Load() != 1 {
		t.Fatalf("%v (%d calls)", err, calls.Load())
	}

	off := instantOptions()
	off.PaceFromHeaders = false
	c, p = client(t, off, WithClock(newInstantClock()))
	if _, err := doCtx(t, c, context.Background(), s.url()); err != nil {
		t.Fatal(err)
	}
	if h := p.Headroom(); h.Requests != -1 {
		t.Fatalf("learnt with PaceFromHeaders off: %+v", h)
	}
}

func TestPace_OptionsAreValidated(t *testing.T) {
	o := DefaultOptions()
	o.PaceTokensPerMinute = -1
	var ve *ValidationError
	if err := o.Validate(); !errors.As(err, &ve) || ve.Problems[0].Field != "PaceTokensPerMinute" {
		t.Fatalf("%v", err)
	}
}

// A call that used fewer tokens than its estimate leaves the rest to the next calls; one that
// used more is debited the difference.
func TestPace_SettleCorrectsTheTokenBudget(t *testing.T) {
	s, calls := countingServer(t)
	o := instantOptions()
	o.PaceTokensPerMinute = 100
	c, p := client(t, o, WithClock(newInstantClock()))
	if _, err := doCtx(t, c, impatient(time.Second, 90), s.url()); err != nil {
		t.Fatal(err)
	}
	p.SettleTokens(90, 30) // 60 back
	if _, err := doCtx(t, c, impatient(time.Second, 60), s.url()); err != nil || calls.Load() != 2 {
		t.Fatalf("the credit was not spent: %v", err)
	}
	p.SettleTokens(60, 70) // 10 more spent: 0 left of the 10 the bucket held
	if h := p.Headroom(); h.Tokens > 0.001 {
		t.Fatalf("headroom %+v", h)
	}
	p.SettleTokens(0, 50) // nothing debited (sent before the budget was known): all of it is owed
	if h := p.Headroom(); h.Tokens > 0.001 {
		t.Fatalf("headroom %+v after a debt of 50", h)
	}
	if _, err := doCtx(t, c, impatient(-1, 10), s.url()); err == nil {
		t.Fatal("a call was admitted while the budget owed 50 tokens")
	}
}

// What a call was debited is on its CallInfo: the tokens admitted (credit included, at most a
// whole budget), 0 when no tokens-per-minute limit was known as it was sent; a call refused for the token
// budget gives back the credit it had taken.
func TestPace_TheDebitIsOnTheCallInfo(t *testing.T) {
	s, _ := countingServer(t)
	o := instantOptions()
	o.PaceTokensPerMinute = 100
	c, p := client(t, o, WithClock(newInstantClock()))
	debit := func(tokens int) (int, error) {
		call := impatient(-1, tokens) // never waits: refused when there is no room
		_, err := doCtx(t, c, call, s.url())
		return call.Info.TokensDebited, err
	}
	if n, err := debit(500); err != nil || n != 100 {
		t.Fatalf("a call of 500 tokens under a budget of 100 was debited %d (%v), want the whole budget", n, err)
	}
	p.SettleTokens(100, 40) // 60 of credit
	if n, err := debit(80); err == nil || n != 0 {
		t.Fatalf("a call of 80 with 60 of credit and an empty bucket was admitted (debited %d, %v)", n, err)
	}
	if got := p.pace.credit.Load(); got != 60 {
		t.Fatalf("credit %d after a refused call, want the 60 it had taken back", got)
	}
	if n, err := debit(50); err != nil || n != 50 {
		t.Fatalf("a call of 50 covered by the credit was debited %d (%v), want 50", n, err)
	}
}

// A call that read the clock, then was held up while a later call changed the budget, does
// not hand the budget its earlier time: the budget would move its own clock back and refill
// the time between twice. Calls change the budgets in the order of their times, so after
// 20 s of a 60-a-minute budget drained at the start, exactly 20 calls go through.
func TestPace_ABudgetIsChangedInTheOrderOfItsTimes(t *testing.T) {
	clock := newManualClock()
	o := testOptions()
	o.PaceRequestsPerMinute = 60
	o.PriorityReservePercent = 0
	p, err := New(o, WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	never := func() time.Duration { return 0 } // a call that would wait is refused
	admitted := func() int {
		n := 0
		for p.pace.admit(context.Background(), 0, never) == nil {
			n++
		}
		return n
	}
	if n := admitted(); n != 60 {
		t.Fatalf("%d calls through a full budget of 60", n)
	}
	clock.Advance(10 * time.Second)
	var hold atomic.Bool
	hold.Store(true)
	reading, release := make(chan struct{}), make(chan struct{})
	hook := func() {
		if hold.CompareAndSwap(true, false) {
			close(reading)
			<-release
		}
	}
	testHookPaceRead.Store(&hook)
	defer testHookPaceRead.Store(nil)
	held := make(chan error, 1)
	go func() { held <- p.pace.admit(context.Background(), 0, never) }() // reads 10 s, is held up
	<-reading
	clock.Advance(10 * time.Second)
	later := make(chan error, 1)
	go func() { later <- p.pace.admit(context.Background(), 0, never) }() // at 20 s
	select {
	case err := <-later: // it did not wait for the held call
		close(release)
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(100 * time.Millisecond): // it waits for the held call, as it should
		close(release)
		if err := <-later; err != nil {
			t.Fatal(err)
		}
	}
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if n := admitted(); n != 18 {
		t.Fatalf("%d more calls through after 20 s of a budget of 60 a minute and 2 calls, want 18", n)
	}
}
