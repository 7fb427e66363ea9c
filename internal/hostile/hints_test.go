package hostile_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadyllm/steady/providers"
)

// Rule 5: server hints cannot break the clock. An unusable hint counts as absent (the
// pipeline backs off and retries), a hint beyond the cap gives up at once, and the error's
// RetryAfter is always a sane, clamped value.
func TestHints_CannotBreakTheClock(t *testing.T) {
	past := time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)
	cases := []struct {
		name     string
		headers  [][2]string
		requests int32         // with RetryCount 2
		retry    time.Duration // the error's RetryAfter
	}{
		{"negative", [][2]string{{"Retry-After", "-30"}}, 3, 0},
		{"NaN", [][2]string{{"Retry-After", "NaN"}}, 3, 0},
		{"Inf", [][2]string{{"Retry-After-Ms", "Inf"}}, 3, 0},
		{"garbage", [][2]string{{"Retry-After", "tomorrow-ish"}}, 3, 0},
		{"past date", [][2]string{{"Retry-After", past}}, 3, 0},
		{"zero", [][2]string{{"Retry-After", "0"}}, 3, 0},
		{"overflowing", [][2]string{{"Retry-After", "99999999999999999999999999"}}, 1, 24 * time.Hour},
		{"overflowing ms", [][2]string{{"Retry-After-Ms", "1e308"}}, 1, 24 * time.Hour},
		{"beyond the cap", [][2]string{{"Retry-After", "120"}}, 1, 2 * time.Minute},
		{"twice, different", [][2]string{{"Retry-After", "0.01"}, {"Retry-After", "0.02"}}, 3, 20 * time.Millisecond},
	}
	for _, tc := range cases {
		for _, k := range kinds {
			var hits atomic.Int32
			srv := server(t, func(w http.ResponseWriter, _ *http.Request) {
				hits.Add(1)
				for _, h := range tc.headers {
					w.Header().Add(h[0], h[1])
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(429)
				_, _ = w.Write([]byte(`{"error":{"message":"slow down","type":"rate_limit_error"},"type":"error"}`))
			})
			o := policy()
			o.RetryCount = 2
			o.RetryMaxDelaySeconds = 1
			c := newClient(t, k, srv.URL, o, providers.Limits{})
			err := run(context.Background(), c, "chat")
			e := asError(t, err)
			if e.Kind != providers.KindRateLimited || hits.Load() != tc.requests || e.RetryAfter != tc.retry {
				t.Fatalf("%s, %s: %s after %d requests with RetryAfter %v; want rate_limited after %d with %v",
					tc.name, k.name, e.Kind, hits.Load(), e.RetryAfter, tc.requests, tc.retry)
			}
		}
	}
}
