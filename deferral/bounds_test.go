package deferral_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/deferral"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// The test decider's policy backs off from 1 s with jitter: its shortest backoff, the floor,
// is half that.
const floor = 500 * time.Millisecond

func spentAt(reset time.Time) *providers.Error {
	return &providers.Error{Provider: "openai", Kind: providers.KindRateLimited,
		RateLimit: &providers.RateLimit{Tokens: providers.RateBudget{Limit: 1000, Remaining: 0, Reset: reset}}}
}

// Every time a decision gives — a hint, a reset, a circuit probe, a pause, a backoff — lies
// within [Floor, MaxDelay]: nothing far away parks a job for centuries, nothing already due
// retries at once.
func TestDecide_EveryDelayIsWithinTheFloorAndTheCap(t *testing.T) {
	d := decider(t)
	pe := func(k providers.ErrorKind, retryAfter time.Duration) *providers.Error {
		return &providers.Error{Provider: "openai", Kind: k, RetryAfter: retryAfter}
	}
	cooling := pe(providers.KindRateLimited, 400*24*time.Hour)
	cooling.Err = &resilience.CooldownError{Pipeline: "openai", RetryAfter: 400 * 24 * time.Hour}
	for _, tc := range []struct {
		name  string
		err   error
		delay time.Duration
		src   deferral.Source
		why   string
	}{
		{"a reset centuries away, no Retry-After", spentAt(time.Date(2426, 1, 1, 0, 0, 0, 0, time.UTC)), deferral.MaxDelay, deferral.SourceHint, "cut"},
		{"a reset at the end of time", spentAt(time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)), deferral.MaxDelay, deferral.SourceHint, "cut"},
		{"a reset a day and a second away", spentAt(now.Add(24*time.Hour + time.Second)), deferral.MaxDelay, deferral.SourceHint, "cut"},
		{"a reset just under the cap", spentAt(now.Add(23 * time.Hour)), 23 * time.Hour, deferral.SourceHint, ""},
		{"a reset already past", spentAt(now.Add(-time.Minute)), floor, deferral.SourceHint, "already due"},
		{"a reset now", spentAt(now), floor, deferral.SourceHint, "already due"},
		{"a reset in the year 1", spentAt(time.Date(1, 1, 1, 0, 0, 1, 0, time.UTC)), floor, deferral.SourceHint, "already due"},
		{"a reset within the floor", spentAt(now.Add(time.Millisecond)), floor, deferral.SourceHint, "floor"},
		{"a circuit probe a year away", pe(providers.KindCircuitOpen, 365*24*time.Hour), deferral.MaxDelay, deferral.SourceCircuit, "cut"},
		{"a circuit probe in a nanosecond", pe(providers.KindCircuitOpen, 1), floor, deferral.SourceCircuit, "floor"},
		{"a hint of the longest duration", pe(providers.KindOverloaded, time.Duration(1<<63-1)), deferral.MaxDelay, deferral.SourceHint, "cut"},
		{"a hint of a millisecond", pe(providers.KindRateLimited, time.Millisecond), floor, deferral.SourceHint, "floor"},
		{"a pause of 400 days", cooling, deferral.MaxDelay, deferral.SourceHint, "cut"},
		{"a hint at the cap exactly", pe(providers.KindRateLimited, deferral.MaxDelay), deferral.MaxDelay, deferral.SourceHint, ""},
	} {
		dec := d.Decide(tc.err, 1)
		if !dec.Retry || dec.Delay != tc.delay || dec.Source != tc.src || !dec.At.Equal(now.Add(tc.delay)) {
			t.Errorf("%s: %+v, want a retry in %v from %s", tc.name, dec, tc.delay, tc.src)
		}
		if tc.why != "" && !strings.Contains(dec.Reason, tc.why) {
			t.Errorf("%s: the reason %q does not say %q", tc.name, dec.Reason, tc.why)
		}
	}
}

// A bare pipeline's outcome is bounded alike: an RFC 3339 reset centuries away in a 429's
// headers, a pipeline's hint of years, a hint shorter than the floor.
func TestDecideResponse_EveryDelayIsWithinTheFloorAndTheCap(t *testing.T) {
	d := decider(t)
	h := http.Header{}
	h.Set("Anthropic-Ratelimit-Requests-Limit", "50")
	h.Set("Anthropic-Ratelimit-Requests-Remaining", "0")
	h.Set("Anthropic-Ratelimit-Requests-Reset", "2426-01-01T00:00:00Z")
	far := &http.Response{StatusCode: http.StatusTooManyRequests, Header: h}
	past := http.Header{}
	past.Set("X-Ratelimit-Limit-Tokens", "50")
	past.Set("X-Ratelimit-Remaining-Tokens", "0")
	past.Set("X-Ratelimit-Reset-Tokens", "2000-01-01T00:00:00Z")
	short := http.Header{}
	short.Set("Retry-After-Ms", "1")
	for _, tc := range []struct {
		name  string
		resp  *http.Response
		err   error
		delay time.Duration
	}{
		{"a reset centuries away", far, nil, deferral.MaxDelay},
		{"a reset in the past", &http.Response{StatusCode: http.StatusTooManyRequests, Header: past}, nil, floor},
		{"a hint of a millisecond", &http.Response{StatusCode: http.StatusServiceUnavailable, Header: short}, nil, floor},
		{"a pipeline's pause of years", nil, &resilience.CooldownError{Pipeline: "p", RetryAfter: 5 * 365 * 24 * time.Hour}, deferral.MaxDelay},
		{"a circuit probe in a nanosecond", nil, &resilience.CircuitOpenError{Pipeline: "p", RetryAfter: 1}, floor},
	} {
		dec := d.DecideResponse(tc.resp, tc.err, 1)
		if !dec.Retry || dec.Delay != tc.delay || !dec.At.Equal(now.Add(tc.delay)) {
			t.Errorf("%s: %+v, want a retry in %v", tc.name, dec, tc.delay)
		}
	}
}

// The floor is the policy's shortest backoff (its first retry, with the least jitter), so it
// never raises a backoff; a policy without any backoff gets MinDelay, not a loop.
func TestDecider_FloorIsThePolicysShortestBackoffAndAtLeastMinDelay(t *testing.T) {
	policy := func(base float64, jitter bool) *resilience.Policy {
		o := resilience.DefaultOptions()
		o.RetryBaseDelaySeconds, o.RetryUseJitter = base, jitter
		p, err := resilience.NewPolicy("p", o)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name   string
		policy *resilience.Policy
		want   time.Duration
	}{
		{"the default policy (nil)", nil, 500 * time.Millisecond},
		{"2 s with jitter", policy(2, true), time.Second},
		{"2 s without jitter", policy(2, false), 2 * time.Second},
		{"no backoff at all", policy(0, false), deferral.MinDelay},
		{"a backoff below the minimum", policy(0.01, true), deferral.MinDelay},
	} {
		d := deferral.Decider{Policy: tc.policy, Now: func() time.Time { return now }, Random: func() float64 { return 0 }}
		if got := d.Floor(); got != tc.want {
			t.Errorf("%s: floor %v, want %v", tc.name, got, tc.want)
		}
		// The backoff with the least jitter is the floor itself: not raised, not lowered.
		dec := d.Decide(errors.New("connection reset"), 1)
		if dec.Delay != tc.want || dec.Delay <= 0 {
			t.Errorf("%s: the first backoff %v, want %v", tc.name, dec.Delay, tc.want)
		}
	}
}

// Wait is what an adapter hands its queue: never zero or negative, never above MaxDelay,
// whatever At is.
func TestDecision_WaitIsNeverZeroNorOverflows(t *testing.T) {
	for _, tc := range []struct {
		name string
		dec  deferral.Decision
		want time.Duration
	}{
		{"due in 5 s", deferral.Decision{Retry: true, At: now.Add(5 * time.Second), Delay: 5 * time.Second}, 5 * time.Second},
		{"due centuries away", deferral.Decision{Retry: true, At: time.Date(2426, 1, 1, 0, 0, 0, 0, time.UTC)}, deferral.MaxDelay},
		{"due in the year 200000", deferral.Decision{Retry: true, At: time.Date(200000, 1, 1, 0, 0, 0, 0, time.UTC)}, deferral.MaxDelay},
		{"already past", deferral.Decision{Retry: true, At: now.Add(-time.Hour), Delay: time.Second}, deferral.MinDelay},
		{"due now", deferral.Decision{Retry: true, At: now}, deferral.MinDelay},
		{"made by hand with a Delay only", deferral.Decision{Retry: true, Delay: 3 * time.Second}, 3 * time.Second},
		{"made by hand with a negative Delay", deferral.Decision{Retry: true, Delay: -time.Hour}, deferral.MinDelay},
		{"made by hand with nothing", deferral.Decision{Retry: true}, deferral.MinDelay},
		{"made by hand with a huge Delay", deferral.Decision{Retry: true, Delay: time.Duration(1<<63 - 1)}, deferral.MaxDelay},
		{"not to be retried", deferral.Decision{At: now.Add(time.Hour)}, 0},
	} {
		if got := tc.dec.Wait(now); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
