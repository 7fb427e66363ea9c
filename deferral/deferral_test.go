package deferral_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/deferral"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// decider is deterministic: a fixed clock, a jitter draw of 0.5 (a factor of 1), and an
// exponential policy from 1 s capped at 30 s.
func decider(t *testing.T) deferral.Decider {
	o := resilience.DefaultOptions()
	p, err := resilience.NewPolicy("batch", o)
	if err != nil {
		t.Fatal(err)
	}
	return deferral.Decider{Policy: p, Now: func() time.Time { return now }, Random: func() float64 { return 0.5 }}
}

func TestDecide_EveryKindAndHint(t *testing.T) {
	d := decider(t)
	pe := func(k providers.ErrorKind, retryAfter time.Duration) *providers.Error {
		return &providers.Error{Provider: "openai", Kind: k, RetryAfter: retryAfter}
	}
	spent := pe(providers.KindRateLimited, 0)
	spent.RateLimit = &providers.RateLimit{Requests: providers.RateBudget{Limit: 60, Remaining: 0, Reset: now.Add(20 * time.Second)},
		Tokens: providers.RateBudget{Limit: 1000, Remaining: 500, Reset: now.Add(time.Hour)}}
	cooling := pe(providers.KindRateLimited, 9*time.Second)
	cooling.Err = &resilience.CooldownError{Pipeline: "openai", RetryAfter: 9 * time.Second}
	chain := &client.ChainError{Cause: pe(providers.KindOverloaded, 0),
		Failures: []*providers.Error{pe(providers.KindOverloaded, 0), pe(providers.KindAuth, 0)}}

	type want struct {
		retry bool
		delay time.Duration
		src   deferral.Source
	}
	for _, tc := range []struct {
		name    string
		err     error
		attempt int
		want    want
	}{
		{"rate limited with a hint", pe(providers.KindRateLimited, 7*time.Second), 1, want{true, 7 * time.Second, deferral.SourceHint}},
		{"rate limited, a spent budget's reset", spent, 1, want{true, 20 * time.Second, deferral.SourceHint}},
		{"rate limited, nothing known", pe(providers.KindRateLimited, 0), 3, want{true, 4 * time.Second, deferral.SourceBackoff}},
		{"a rate-limit pause", cooling, 1, want{true, 9 * time.Second, deferral.SourceHint}},
		{"overloaded", pe(providers.KindOverloaded, 0), 1, want{true, time.Second, deferral.SourceBackoff}},
		{"unavailable, late attempt capped", pe(providers.KindUnavailable, 0), 10, want{true, 30 * time.Second, deferral.SourceBackoff}},
		{"timeout", pe(providers.KindTimeout, 0), 2, want{true, 2 * time.Second, deferral.SourceBackoff}},
		{"circuit open", pe(providers.KindCircuitOpen, 12*time.Second), 1, want{true, 12 * time.Second, deferral.SourceCircuit}},
		{"bulkhead full", pe(providers.KindBulkheadFull, 0), 1, want{true, time.Second, deferral.SourceBackoff}},
		{"stream truncated", pe(providers.KindStreamTruncated, 0), 1, want{true, time.Second, deferral.SourceBackoff}},
		{"canceled", pe(providers.KindCanceled, 0), 1, want{true, time.Second, deferral.SourceBackoff}},
		{"a chain leads with its cause", chain, 2, want{true, 2 * time.Second, deferral.SourceBackoff}},
		{"not a provider error", errors.New("connection reset"), 1, want{true, time.Second, deferral.SourceBackoff}},
		{"bad request", pe(providers.KindBadRequest, 0), 1, want{false, 0, deferral.SourcePermanent}},
		{"auth", pe(providers.KindAuth, 0), 1, want{false, 0, deferral.SourcePermanent}},
		{"quota", pe(providers.KindQuotaExhausted, time.Hour), 1, want{false, 0, deferral.SourcePermanent}},
		{"not found", pe(providers.KindNotFound, 0), 1, want{false, 0, deferral.SourcePermanent}},
		{"context too long", pe(providers.KindContextTooLong, 0), 1, want{false, 0, deferral.SourcePermanent}},
		{"content filtered", pe(providers.KindContentFiltered, 0), 1, want{false, 0, deferral.SourcePermanent}},
		{"redirected", pe(providers.KindRedirected, 0), 1, want{false, 0, deferral.SourcePermanent}},
		{"no failure", nil, 1, want{false, 0, deferral.SourcePermanent}},
	} {
		dec := d.Decide(tc.err, tc.attempt)
		got := want{dec.Retry, dec.Delay, dec.Source}
		if got != tc.want || (dec.Retry && !dec.At.Equal(now.Add(dec.Delay))) || dec.Reason == "" {
			t.Errorf("%s: %+v, want %+v", tc.name, dec, tc.want)
		}
	}
}

func TestDecide_IsDeterministicAndFollowsThePolicy(t *testing.T) {
	o := resilience.DefaultOptions()
	o.RetryBackoff, o.RetryBaseDelaySeconds, o.RetryMaxDelaySeconds = resilience.BackoffLinear, 2, 5
	p, _ := resilience.NewPolicy("linear", o)
	d := deferral.Decider{Policy: p, Now: func() time.Time { return now }, Random: func() float64 { return 0.25 }}
	err := &providers.Error{Kind: providers.KindOverloaded}
	// Linear: attempt n waits 2n s, capped at 5 s, then jittered by 0.75.
	for attempt, want := range map[int]time.Duration{1: 1500 * time.Millisecond, 2: 3 * time.Second, 5: 3750 * time.Millisecond} {
		if got := d.Decide(err, attempt).Delay; got != want {
			t.Errorf("attempt %d: %v, want %v", attempt, got, want)
		}
		if d.Decide(err, attempt) != d.Decide(err, attempt) {
			t.Error("not deterministic")
		}
	}
	if got := p.Backoff(2, 0.25); got != 3*time.Second {
		t.Errorf("the policy's own backoff %v", got)
	}
}

func TestDecideResponse_ABarePipelinesOutcome(t *testing.T) {
	d := decider(t)
	resp := func(code int, kv ...string) *http.Response {
		h := http.Header{}
		for i := 0; i+1 < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return &http.Response{StatusCode: code, Header: h}
	}
	for _, tc := range []struct {
		name  string
		resp  *http.Response
		err   error
		retry bool
		delay time.Duration
		src   deferral.Source
	}{
		{"429 Retry-After", resp(429, "Retry-After", "3"), nil, true, 3 * time.Second, deferral.SourceHint},
		{"429 retry-after-ms", resp(429, "Retry-After-Ms", "1500"), nil, true, 1500 * time.Millisecond, deferral.SourceHint},
		{"429 spent budget", resp(429, "X-Ratelimit-Limit-Requests", "60", "X-Ratelimit-Remaining-Requests", "0",
			"X-Ratelimit-Reset-Requests", "6m0s"), nil, true, 6 * time.Minute, deferral.SourceHint},
		{"503 without a hint", resp(503), nil, true, time.Second, deferral.SourceBackoff},
		{"529", resp(529), nil, true, time.Second, deferral.SourceBackoff},
		{"400", resp(400), nil, false, 0, deferral.SourcePermanent},
		{"200", resp(200), nil, false, 0, deferral.SourcePermanent},
		{"open circuit", nil, fmt.Errorf("wrapped: %w", &resilience.CircuitOpenError{Pipeline: "p", RetryAfter: 8 * time.Second}),
			true, 8 * time.Second, deferral.SourceCircuit},
		{"network error", nil, errors.New("dial tcp: refused"), true, time.Second, deferral.SourceBackoff},
	} {
		dec := d.DecideResponse(tc.resp, tc.err, 1)
		if dec.Retry != tc.retry || dec.Delay != tc.delay || dec.Source != tc.src {
			t.Errorf("%s: %+v", tc.name, dec)
		}
	}
}

func TestError_FoundAndSeenThrough(t *testing.T) {
	inner := &providers.Error{Kind: providers.KindRateLimited}
	var err error = fmt.Errorf("job: %w", &deferral.Error{Decision: deferral.Decision{Retry: true}, Err: inner})
	var de *deferral.Error
	var pe *providers.Error
	if !errors.As(err, &de) || !errors.As(err, &pe) || pe != inner {
		t.Fatal("not found through the wrapping")
	}
}
