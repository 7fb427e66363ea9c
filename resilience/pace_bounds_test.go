package resilience

import (
	"context"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// limitServer answers 200 with the rate-limit headers the test sets.
func limitServer(t *testing.T, headers *atomic.Pointer[http.Header]) *script {
	return newScript(t, func(w http.ResponseWriter, r *http.Request) {
		if h := headers.Load(); h != nil {
			for k, vs := range *h {
				w.Header()[k] = vs
			}
		}
		w.WriteHeader(http.StatusOK)
	})
}

// A configured limit is a ceiling: the headers may lower the budget, never raise it above it.
func TestPace_ConfiguredLimitIsACeiling(t *testing.T) {
	var headers atomic.Pointer[http.Header]
	s := limitServer(t, &headers)
	o := instantOptions()
	o.PaceRequestsPerMinute, o.PaceTokensPerMinute = 60, 6000
	c, p := client(t, o, WithClock(newInstantClock()))
	send := func(reqLimit, tokLimit int) Headroom {
		t.Helper()
		h := http.Header{
			"X-Ratelimit-Limit-Requests": {strconv.Itoa(reqLimit)}, "X-Ratelimit-Remaining-Requests": {strconv.Itoa(reqLimit - 1)},
			"X-Ratelimit-Limit-Tokens": {strconv.Itoa(tokLimit)}, "X-Ratelimit-Remaining-Tokens": {strconv.Itoa(tokLimit - 10)},
		}
		headers.Store(&h)
		if _, err := doCtx(t, c, context.Background(), s.url()); err != nil {
			t.Fatal(err)
		}
		return p.Headroom()
	}
	if h := send(10_000, 2_000_000); h.RequestsPerMinute != 60 || h.TokensPerMinute != 6000 {
		t.Fatalf("a server stating higher limits raised the budgets to %+v", h)
	}
	if h := send(30, 3000); h.RequestsPerMinute != 30 || h.TokensPerMinute != 3000 {
		t.Fatalf("a server stating lower limits: %+v, want 30 and 3000", h)
	}
	if h := send(500, 500_000); h.RequestsPerMinute != 60 || h.TokensPerMinute != 6000 {
		t.Fatalf("back to higher limits: %+v, want the configured 60 and 6000", h)
	}
}

// A server that states what remains of its tokens-per-minute limit is the truth: an unused estimate is
// never credited back to it (OpenAI debits max_tokens and never refunds), while a server that
// states nothing gets the credit — at most what the call was debited.
func TestPace_CreditOnlyForServersThatStateNoBudget(t *testing.T) {
	var headers atomic.Pointer[http.Header]
	s := limitServer(t, &headers)
	o := instantOptions()
	o.PaceTokensPerMinute = 1000
	c, p := client(t, o, WithClock(newInstantClock()))

	// A server that states nothing: a call estimated at 5,000 tokens was debited the whole
	// budget of 1,000, and used 100: at most 900 come back.
	if _, err := doCtx(t, c, impatient(0, 5000), s.url()); err != nil {
		t.Fatal(err)
	}
	p.SettleTokens(5000, 100)
	if got := p.pace.credit.Load(); got != 900 {
		t.Fatalf("credit %d, want 900: the 1,000 debited less the 100 used", got)
	}

	// Once the server states its budget, nothing is credited back, even when the usage arrives
	// after the headers (as it always does: the headers come first, the usage at the end).
	h := http.Header{"X-Ratelimit-Limit-Tokens": {"1000"}, "X-Ratelimit-Remaining-Tokens": {"400"}}
	headers.Store(&h)
	if _, err := doCtx(t, c, impatient(0, 300), s.url()); err != nil {
		t.Fatal(err)
	}
	p.SettleTokens(300, 20)
	if got := p.pace.credit.Load(); got != 0 {
		t.Fatalf("credit %d after a server stated its budget, want 0", got)
	}
	if left := p.Headroom().Tokens * 1000; left > 400 {
		t.Fatalf("%.0f tokens left, more than the 400 the server stated", left)
	}
}

// grantAll is a shared store whose fleet budgets grant whatever is asked.
type grantAll struct{ memShared }

func (*grantAll) TakeBudget(_ context.Context, _ string, _, want int64, _ time.Time) (int64, time.Duration, error) {
	return want, 0, nil
}
func (*grantAll) FailClosed() bool { return false }

// A server that states its remaining tokens corrects the instance's own budget, but nothing
// corrects the fleet's budget in the store but the instance: a call that used more than its
// estimate is debited the rest from the fleet's lease, whatever the headers say.
func TestPace_AnUnderestimateIsDebitedFromTheFleetEvenWhenTheServerStatesItsBudget(t *testing.T) {
	o := testOptions()
	o.PaceTokensPerMinute = 60000
	p, err := New(o, WithName("openai"), WithSharedState(&grantAll{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.pace.admit(context.Background(), 100, func() time.Duration { return time.Second }); err != nil {
		t.Fatal(err)
	}
	p.pace.observe(http.Header{"X-Ratelimit-Limit-Tokens": {"60000"}, "X-Ratelimit-Remaining-Tokens": {"59000"}})
	l := &p.pace.fleet.tok
	l.mu.Lock()
	before := l.have
	l.mu.Unlock()
	p.SettleTokens(100, 1000)
	l.mu.Lock()
	after := l.have
	l.mu.Unlock()
	if before-after != 900 {
		t.Fatalf("the fleet's lease went from %d to %d: debited %d of the 900 tokens used beyond the estimate",
			before, after, before-after)
	}
}
