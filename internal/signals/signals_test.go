package signals

import (
	"net/http"
	"testing"
	"time"
)

var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func TestRetryAfter_EveryForm(t *testing.T) {
	date := func(d time.Duration) string { return now.Add(d).Format(http.TimeFormat) }
	cases := []struct {
		name string
		h    http.Header
		want time.Duration
		ok   bool
	}{
		{"none", header(), 0, false},
		{"ms", header("retry-after-ms", "250"), 250 * time.Millisecond, true},
		{"ms fractional", header("retry-after-ms", "1.5"), 1500 * time.Microsecond, true},
		{"ms wins over seconds", header("retry-after-ms", "250", "Retry-After", "9"), 250 * time.Millisecond, true},
		{"bad ms falls back to seconds", header("retry-after-ms", "soon", "Retry-After", "2"), 2 * time.Second, true},
		{"seconds", header("Retry-After", "3"), 3 * time.Second, true},
		{"seconds with spaces", header("Retry-After", "  3 "), 3 * time.Second, true},
		{"fractional seconds", header("Retry-After", "0.5"), 500 * time.Millisecond, true},
		{"exponent", header("Retry-After", "1e1"), 10 * time.Second, true},
		{"http date", header("Retry-After", date(90*time.Second)), 90 * time.Second, true},
		{"rfc850 date", header("Retry-After", now.Add(time.Minute).Format("Monday, 02-Jan-06 15:04:05 GMT")), time.Minute, true},
		{"past date", header("Retry-After", date(-time.Hour)), 0, false},
		{"date far ahead", header("Retry-After", "Fri, 31 Dec 9999 23:59:59 GMT"), MaxHint, true},
		{"zero", header("Retry-After", "0"), 0, false},
		{"zero ms", header("retry-after-ms", "0"), 0, false},
		{"below a millisecond", header("retry-after-ms", "0.0001"), 0, false},
		{"negative", header("Retry-After", "-5"), 0, false},
		{"negative ms", header("retry-after-ms", "-1"), 0, false},
		{"NaN", header("Retry-After", "NaN"), 0, false},
		{"Inf", header("Retry-After", "Inf"), 0, false},
		{"+Inf ms", header("retry-after-ms", "+Inf"), 0, false},
		{"hex float", header("Retry-After", "0x1p4"), 0, false},
		{"plus sign", header("Retry-After", "+5"), 0, false},
		{"garbage", header("Retry-After", "later, please"), 0, false},
		{"empty", header("Retry-After", ""), 0, false},
		{"overflowing seconds", header("Retry-After", "99999999999999999999999"), MaxHint, true},
		{"overflowing ms", header("retry-after-ms", "1e300"), MaxHint, true},
		{"out of float range", header("Retry-After", "1e400"), MaxHint, true},
		{"above the clamp", header("Retry-After", "172800"), MaxHint, true},
		{"huge value text", header("Retry-After", string(make([]byte, 1<<16))), 0, false},
		{"twice, same", header("Retry-After", "4", "Retry-After", "4"), 4 * time.Second, true},
		{"twice, different: the longest", header("Retry-After", "1", "Retry-After", "30"), 30 * time.Second, true},
		{"twice, one garbage", header("Retry-After", "x", "Retry-After", "2"), 2 * time.Second, true},
		{"twice, one negative", header("retry-after-ms", "-100", "retry-after-ms", "100"), 100 * time.Millisecond, true},
		{"comma list is garbage", header("Retry-After", "1, 2"), 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := RetryAfter(tc.h, now)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("RetryAfter = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestShouldRetry(t *testing.T) {
	cases := []struct {
		h         http.Header
		retry, ok bool
	}{
		{header(), false, false},
		{header("x-should-retry", "true"), true, true},
		{header("x-should-retry", "TRUE "), true, true},
		{header("x-should-retry", "false"), false, true},
		{header("x-should-retry", "maybe"), false, false},
		{header("x-should-retry", "true", "x-should-retry", "true"), true, true},
		{header("x-should-retry", "true", "x-should-retry", "false"), false, false},
	}
	for _, tc := range cases {
		retry, ok := ShouldRetry(tc.h)
		if retry != tc.retry || ok != tc.ok {
			t.Errorf("ShouldRetry(%v) = %v, %v; want %v, %v", tc.h, retry, ok, tc.retry, tc.ok)
		}
	}
}

func TestMentionsQuota(t *testing.T) {
	for _, s := range []string{
		`{"error":{"code":"insufficient_quota"}}`,
		"You EXCEEDED your current quota",
		`{"error":{"type":"invalid_request_error","message":"Your credit balance is too low"}}`,
		"billing_hard_limit_reached",
	} {
		if !MentionsQuota(s) || !MentionsQuotaBytes([]byte(s)) {
			t.Errorf("MentionsQuota(%q) = false", s)
		}
	}
	if MentionsQuota(`{"error":{"code":"rate_limit_exceeded"}}`) {
		t.Error("a plain rate limit mentions no quota")
	}
}

// FuzzRetryAfter: whatever the server sends, the wait is either absent or within
// [MinHint, MaxHint] — never negative, never overflowing, never a spin.
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"1", "0.25", "-1", "NaN", "Inf", "1e400", "99999999999999999999",
		"Wed, 21 Oct 2015 07:28:00 GMT", "", " 7 ", "0x10", "1e-9"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, secs, ms string) {
		h := http.Header{}
		h.Add("Retry-After", secs)
		h.Add("Retry-After-Ms", ms)
		h.Add("Retry-After", ms)
		d, ok := RetryAfter(h, now)
		if !ok {
			if d != 0 {
				t.Fatalf("no hint but a wait of %v", d)
			}
			return
		}
		if d < MinHint || d > MaxHint {
			t.Fatalf("wait %v out of [%v, %v] for %q / %q", d, MinHint, MaxHint, secs, ms)
		}
	})
}

// A rate-limit reset is never further ahead than MaxHint, whatever the server writes.
func TestParseRateLimits_ResetIsAtMostMaxHintAhead(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	for _, v := range []string{"2200-01-01T00:00:00Z", "876000h", "99999999"} {
		h := http.Header{"X-Ratelimit-Reset-Requests": {v}, "X-Ratelimit-Limit-Requests": {"10"}}
		rl, ok := ParseRateLimits(h, now)
		if !ok || rl.Requests.Reset.After(now.Add(MaxHint)) || rl.Requests.Reset.IsZero() {
			t.Errorf("reset %q read as %v", v, rl.Requests.Reset)
		}
	}
}
