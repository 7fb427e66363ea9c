package resilience

import (
	"net/http"
	"testing"
	"time"
)

// A success was billed: no header can make the pipeline send it again.
func TestRetry_SuccessIsNeverRetried(t *testing.T) {
	for _, code := range []int{200, 201, 202, 204, 206} {
		for _, hint := range [][]string{
			{"X-Should-Retry", "true"},
			{"X-Should-Retry", "true", "Retry-After", "1"},
			{"Retry-After-Ms", "10"},
		} {
			s := newScript(t, status(code, `{"ok":true}`, hint...), ok())
			c, _ := client(t, testOptions())
			resp, err := post(t, c, s.url(), `{}`)
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			if resp.StatusCode != code || s.hits.Load() != 1 {
				t.Fatalf("%d with %v: %d requests sent, want exactly 1", code, hint, s.hits.Load())
			}
		}
	}
}

// A hint the pipeline cannot use is no hint: backoff applies, never a negative, overflowing
// or zero wait.
func TestRetry_UnusableHintsFallBackToBackoff(t *testing.T) {
	past := time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)
	for _, hint := range [][]string{
		{"Retry-After", "-5"},
		{"Retry-After", "NaN"},
		{"Retry-After", "Inf"},
		{"Retry-After", "0x1p3"},
		{"Retry-After", "soon"},
		{"Retry-After", past},
		{"Retry-After", "0"},
		{"Retry-After-Ms", "-250"},
		{"Retry-After-Ms", "0.00001"},
		{"Retry-After-Ms", "NaN", "Retry-After", "garbage"},
	} {
		s := newScript(t, status(503, `{}`, hint...), ok())
		clk := &instantClock{now: time.Now()}
		o := instantOptions()
		o.RetryBaseDelaySeconds = 0.5
		var rec recorder
		c, _ := client(t, o, WithClock(clk), OnEvent(rec.observe))
		resp, err := post(t, c, s.url(), `{}`)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		waits := clk.waits()
		if resp.StatusCode != 200 || len(waits) != 1 || waits[0] != 500*time.Millisecond {
			t.Fatalf("%v: status %d, waits %v; want 200 after the 500ms backoff", hint, resp.StatusCode, waits)
		}
		if ev := rec.kind(EventRetryScheduled); len(ev) != 1 || ev[0].ServerHint {
			t.Fatalf("%v: retry events %+v, want one that is not a server hint", hint, ev)
		}
	}
}

// Values too large for a time.Duration mean "longer than any cap": the call gives up at once
// and the response comes back with the hint intact.
func TestRetry_AbsurdHintsGiveUpAtOnce(t *testing.T) {
	for _, hint := range [][]string{
		{"Retry-After", "99999999999999999999999999"},
		{"Retry-After", "1e400"},
		{"Retry-After-Ms", "1e300"},
		{"Retry-After", "Fri, 31 Dec 9999 23:59:59 GMT"},
	} {
		s := newScript(t, status(429, `{}`, hint...), ok())
		clk := &instantClock{now: time.Now()}
		var rec recorder
		c, _ := client(t, instantOptions(), WithClock(clk), OnEvent(rec.observe))
		resp, err := post(t, c, s.url(), `{}`)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		if resp.StatusCode != 429 || s.hits.Load() != 1 || len(clk.waits()) != 0 {
			t.Fatalf("%v: status %d after %d requests and waits %v; want the 429 at once", hint, resp.StatusCode, s.hits.Load(), clk.waits())
		}
		if resp.Header.Get(hint[0]) != hint[1] {
			t.Fatalf("%v: hint not intact on the returned response", hint)
		}
		gave := rec.kind(EventGaveUp)
		if len(gave) != 1 || gave[0].GaveUp != GaveUpHintTooLong || gave[0].Delay <= 0 || gave[0].Delay > 24*time.Hour {
			t.Fatalf("%v: gave-up events %+v, want hint too long with a clamped delay", hint, gave)
		}
	}
}

// Two copies of a hint that disagree: the longest counts, so a proxy cannot shorten the
// upstream's wait.
func TestRetry_DuplicateHintsTakeTheLongest(t *testing.T) {
	s := newScript(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Add("Retry-After", "1")
		w.Header().Add("Retry-After", "3")
		w.WriteHeader(503)
	}, ok())
	clk := &instantClock{now: time.Now()}
	c, _ := client(t, instantOptions(), WithClock(clk))
	resp, err := post(t, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if w := clk.waits(); len(w) != 1 || w[0] != 3*time.Second {
		t.Fatalf("waits %v, want [3s]", w)
	}
}

// x-should-retry copies that disagree are no answer: the status decides.
func TestRetry_ConflictingShouldRetryIsIgnored(t *testing.T) {
	s := newScript(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Add("X-Should-Retry", "true")
		w.Header().Add("X-Should-Retry", "false")
		w.WriteHeader(400)
	}, ok())
	c, _ := client(t, testOptions())
	resp, err := post(t, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if resp.StatusCode != 400 || s.hits.Load() != 1 {
		t.Fatalf("status %d after %d requests, want the 400 at once", resp.StatusCode, s.hits.Load())
	}
}
