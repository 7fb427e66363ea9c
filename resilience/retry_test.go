package resilience

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestRetry_Retries429(t *testing.T) {
	s := newScript(t, status(429, `{"error":{"type":"rate_limit"}}`), ok())
	c, _ := client(t, testOptions())
	resp, err := post(t, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || readAll(t, resp) != `{"ok":true}` || s.hits.Load() != 2 {
		t.Fatalf("status %d after %d attempts, want 200 after 2", resp.StatusCode, s.hits.Load())
	}
}

func TestRetry_Retries503(t *testing.T) {
	s := newScript(t, status(503, `down`), ok())
	c, _ := client(t, testOptions())
	resp, err := post(t, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if resp.StatusCode != 200 || s.hits.Load() != 2 {
		t.Fatalf("status %d after %d attempts, want 200 after 2", resp.StatusCode, s.hits.Load())
	}
}

func TestRetry_RetriesGatewayAndOverloadStatuses(t *testing.T) {
	for _, code := range []int{502, 504, 529} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			s := newScript(t, status(code, `x`), ok())
			c, _ := client(t, testOptions())
			resp, err := post(t, c, s.url(), `{}`)
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			if resp.StatusCode != 200 || s.hits.Load() != 2 {
				t.Fatalf("%d: status %d after %d attempts, want 200 after 2", code, resp.StatusCode, s.hits.Load())
			}
		})
	}
}

// go-retryablehttp's default policy retries 500 and 501; ours must not.
func TestRetry_NoRetryOn400_500_501AndOther4xx(t *testing.T) {
	for _, code := range []int{400, 401, 403, 404, 409, 413, 422, 500, 501, 505} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			s := newScript(t, status(code, `{"error":"nope"}`), ok())
			c, _ := client(t, testOptions())
			resp, err := post(t, c, s.url(), `{}`)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != code || readAll(t, resp) != `{"error":"nope"}` || s.hits.Load() != 1 {
				t.Fatalf("status %d after %d attempts, want %d after 1", resp.StatusCode, s.hits.Load(), code)
			}
		})
	}
}

func TestRetry_Backoff(t *testing.T) {
	for _, tc := range []struct {
		backoff string
		want    []time.Duration
	}{
		{BackoffExponential, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}},
		{BackoffLinear, []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}},
		{BackoffConstant, []time.Duration{time.Second, time.Second, time.Second}},
	} {
		t.Run(tc.backoff, func(t *testing.T) {
			s := newScript(t, status(503, `down`))
			clk := newInstantClock()
			o := instantOptions()
			o.RetryBaseDelaySeconds = 1
			o.RetryBackoff = tc.backoff
			c, _ := client(t, o, WithClock(clk))
			resp, err := post(t, c, s.url(), `{}`)
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			if got := clk.waits(); !equalDurations(got, tc.want) {
				t.Fatalf("waits %v, want %v", got, tc.want)
			}
			if s.hits.Load() != 4 {
				t.Fatalf("%d attempts, want 4", s.hits.Load())
			}
		})
	}
}

func TestRetry_BackoffCappedAtMaxDelay(t *testing.T) {
	s := newScript(t, status(503, `down`))
	clk := newInstantClock()
	o := instantOptions()
	o.RetryCount = 5
	o.RetryBaseDelaySeconds = 1
	o.RetryMaxDelaySeconds = 3
	c, _ := client(t, o, WithClock(clk))
	resp, err := post(t, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second, 3 * time.Second}
	if got := clk.waits(); !equalDurations(got, want) {
		t.Fatalf("waits %v, want %v", got, want)
	}
}

func TestRetry_JitterStaysWithinHalfToOneAndAHalf(t *testing.T) {
	o := instantOptions()
	o.RetryBaseDelaySeconds = 1
	o.RetryUseJitter = true
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[time.Duration]bool{}
	for i := 0; i < 200; i++ {
		d, hint := p.policy.delay(2, nil, time.Now()) // nominal 2 s
		if hint || d < time.Second || d >= 3*time.Second {
			t.Fatalf("jittered delay %v outside [1s, 3s)", d)
		}
		seen[d] = true
	}
	if len(seen) < 10 {
		t.Fatalf("only %d distinct delays in 200 draws: jitter is not random", len(seen))
	}
}

func TestRetry_HonoursServerHints(t *testing.T) {
	start := time.Now()
	date := start.Add(5 * time.Second).UTC().Format(http.TimeFormat)
	for _, tc := range []struct {
		name   string
		code   int
		header []string
		min    time.Duration
		max    time.Duration
	}{
		{"retry-after-ms", 429, []string{"retry-after-ms", "1500"}, 1500 * time.Millisecond, 1500 * time.Millisecond},
		{"retry-after-ms wins over Retry-After", 429, []string{"retry-after-ms", "250", "Retry-After", "9"}, 250 * time.Millisecond, 250 * time.Millisecond},
		{"Retry-After seconds", 503, []string{"Retry-After", "7"}, 7 * time.Second, 7 * time.Second},
		{"Retry-After fractional seconds", 429, []string{"Retry-After", "1.5"}, 1500 * time.Millisecond, 1500 * time.Millisecond},
		{"Retry-After HTTP date", 429, []string{"Retry-After", date}, 4 * time.Second, 5 * time.Second},
		// go-retryablehttp only honours the header on 429 and 503.
		{"Retry-After on 502", 502, []string{"Retry-After", "3"}, 3 * time.Second, 3 * time.Second},
		{"Retry-After on 529", 529, []string{"Retry-After", "2"}, 2 * time.Second, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScript(t, status(tc.code, `{}`, tc.header...), ok())
			clk := &instantClock{now: start}
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
			if resp.StatusCode != 200 || len(waits) != 1 || waits[0] < tc.min || waits[0] > tc.max {
				t.Fatalf("status %d, waits %v; want 200 after one wait in [%v, %v]", resp.StatusCode, waits, tc.min, tc.max)
			}
			sched := rec.kind(EventRetryScheduled)
			if len(sched) != 1 || !sched[0].ServerHint || sched[0].Delay != waits[0] {
				t.Fatalf("retry events %+v: want one with ServerHint and Delay %v", sched, waits[0])
			}
		})
	}
}

// go-retryablehttp sleeps for any Retry-After, even an hour. A hint above the cap must end
// the call at once, handing back the response with its hint.
func TestRetry_HintAboveCapGivesUpAtOnceWithHintIntact(t *testing.T) {
	s := newScript(t, status(429, `{"error":"slow down"}`, "Retry-After", "3600"), ok())
	clk := newInstantClock()
	var rec recorder
	c, _ := client(t, instantOptions(), WithClock(clk), OnEvent(rec.observe))
	resp, err := post(t, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3600" || readAll(t, resp) != `{"error":"slow down"}` {
		t.Fatalf("got %d with Retry-After %q, want the 429 intact", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if s.hits.Load() != 1 || len(clk.waits()) != 0 {
		t.Fatalf("%d attempts and waits %v, want 1 attempt and no wait", s.hits.Load(), clk.waits())
	}
	gave := rec.kind(EventGaveUp)
	if len(gave) != 1 || gave[0].GaveUp != GaveUpHintTooLong || gave[0].Delay != time.Hour {
		t.Fatalf("gave-up events %+v", gave)
	}
}

func TestRetry_HintBeyondDeadlineGivesUpAtOnce(t *testing.T) {
	s := newScript(t, status(503, `busy`, "Retry-After", "20"), ok())
	o := testOptions()
	o.TimeoutSeconds = 5 // the hint (20 s) is within the cap (30 s) but beyond the deadline
	var rec recorder
	c, _ := client(t, o, OnEvent(rec.observe))
	resp, err := post(t, c, s.url(), `{}`)
	if err != nil {
		t.Fatalf("got %v; a wait past the deadline must not be started, so no timeout either", err)
	}
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "20" || readAll(t, resp) != "busy" || s.hits.Load() != 1 {
		t.Fatalf("got %d after %d attempts, want the 503 after 1", resp.StatusCode, s.hits.Load())
	}
	if gave := rec.kind(EventGaveUp); len(gave) != 1 || gave[0].GaveUp != GaveUpDeadline {
		t.Fatalf("gave-up events %+v", gave)
	}
}

func TestRetry_XShouldRetryOverridesStatus(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first http.HandlerFunc
		hits  int32
	}{
		{"false on 503", status(503, `x`, "x-should-retry", "false"), 1},
		{"true on 500", status(500, `x`, "x-should-retry", "true"), 2},
		{"true on 409", status(409, `x`, "x-should-retry", "true"), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScript(t, tc.first, ok())
			c, _ := client(t, testOptions())
			resp, err := post(t, c, s.url(), `{}`)
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			if s.hits.Load() != tc.hits {
				t.Fatalf("%d attempts, want %d", s.hits.Load(), tc.hits)
			}
		})
	}
}

func TestRetry_InsufficientQuota429IsNotRetried(t *testing.T) {
	body := `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`
	s := newScript(t, status(429, body), ok())
	c, _ := client(t, testOptions())
	resp, err := post(t, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, resp); resp.StatusCode != 429 || got != body || s.hits.Load() != 1 {
		t.Fatalf("status %d, body %q after %d attempts; want the 429 intact after 1", resp.StatusCode, got, s.hits.Load())
	}
}

func TestRetry_QuotaPeekKeepsLargeBodyIntact(t *testing.T) {
	body := strings.Repeat("a", 3*quotaPeekLimit) + "insufficient_quota"
	s := newScript(t, status(429, body), ok())
	c, _ := client(t, testOptions())
	resp, err := post(t, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	// The marker lies beyond the peek, so this is a plain rate limit: retried.
	if readAll(t, resp); resp.StatusCode != 200 || s.hits.Load() != 2 {
		t.Fatalf("status %d after %d attempts", resp.StatusCode, s.hits.Load())
	}
	s2 := newScript(t, status(429, body))
	o := testOptions()
	o.RetryCount = 0
	c2, _ := client(t, o)
	resp, err = post(t, c2, s2.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, resp); got != body {
		t.Fatalf("body of %d bytes came back as %d bytes", len(body), len(got))
	}
}

func TestRetry_ConnectionResetIsRetried(t *testing.T) {
	s := newScript(t, reset(), ok())
	c, _ := client(t, testOptions())
	resp, err := post(t, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if resp.StatusCode != 200 || s.hits.Load() != 2 {
		t.Fatalf("status %d after %d attempts, want 200 after 2", resp.StatusCode, s.hits.Load())
	}
}

func TestRetry_ConnectionRefusedIsRetriedThenReturned(t *testing.T) {
	s := newScript(t, ok())
	addr := s.srv.URL
	s.srv.Close() // nothing listens there any more
	var rec recorder
	c, _ := client(t, testOptions(), OnEvent(rec.observe))
	_, err := post(t, c, addr+"/v1/chat/completions", `{}`)
	if err == nil {
		t.Fatal("want an error from a closed port")
	}
	if n := len(rec.kind(EventAttemptStarted)); n != 4 {
		t.Fatalf("%d attempts, want 4", n)
	}
	if errors.Is(err, ErrTimeout) || errors.Is(err, ErrCircuitOpen) {
		t.Fatalf("error %v misclassified", err)
	}
}

// countingBody lets a test see how the pipeline used the request body.
type countingBody struct {
	io.Reader
	closed bool
}

func (b *countingBody) Close() error { b.closed = true; return nil }

// go-retryablehttp buffers the whole body and ignores GetBody; ours replays with GetBody and
// leaves the caller's request alone.
func TestRetry_ReplaysBodyWithGetBodyByteIdentical(t *testing.T) {
	s := newScript(t, status(503, `x`), status(502, `x`), ok())
	payload := `{"model":"m","messages":[{"role":"user","content":"héllo"}]}`
	first := &countingBody{Reader: strings.NewReader(payload)}
	getBodyCalls := 0
	req, _ := http.NewRequest(http.MethodPost, s.url(), nil)
	req.Body = first
	req.ContentLength = int64(len(payload))
	req.GetBody = func() (io.ReadCloser, error) {
		getBodyCalls++
		return io.NopCloser(strings.NewReader(payload)), nil
	}
	req.Header.Set("X-Test", "1")
	before := *req
	c, _ := client(t, testOptions())
	resp, err := c.Transport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	bodies := s.recordedBodies()
	if len(bodies) != 3 {
		t.Fatalf("%d attempts, want 3", len(bodies))
	}
	for i, b := range bodies {
		if !bytes.Equal(b, []byte(payload)) {
			t.Fatalf("attempt %d sent %q", i+1, b)
		}
	}
	if getBodyCalls != 2 {
		t.Fatalf("GetBody called %d times, want 2 (once per retry; the first attempt sends the body itself)", getBodyCalls)
	}
	if !first.closed {
		t.Fatal("the caller's body was not closed")
	}
	if req.Body != before.Body || req.Context() != before.Context() || len(req.Header) != 1 || req.URL != before.URL {
		t.Fatal("the caller's request was modified")
	}
}

func TestRetry_BodyWithoutGetBodyIsBufferedAndReplayed(t *testing.T) {
	s := newScript(t, status(503, `x`), ok())
	payload := strings.Repeat("z", 100_000)
	req, _ := http.NewRequest(http.MethodPost, s.url(), io.NopCloser(strings.NewReader(payload)))
	req.GetBody = nil
	c, _ := client(t, testOptions())
	resp, err := c.Transport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	for i, b := range s.recordedBodies() {
		if string(b) != payload {
			t.Fatalf("attempt %d sent %d bytes, want %d", i+1, len(b), len(payload))
		}
	}
}

// go-retryablehttp replaces the last response with "giving up after N attempts".
func TestRetry_ReturnsLastResponseIntactWhenExhausted(t *testing.T) {
	body := `{"error":{"message":"overloaded","type":"overloaded_error"}}`
	s := newScript(t, status(529, body, "Request-Id", "req_123"))
	var rec recorder
	c, _ := client(t, testOptions(), OnEvent(rec.observe))
	resp, err := post(t, c, s.url(), `{}`)
	if err != nil {
		t.Fatalf("exhausted retries must return the response, got error %v", err)
	}
	if got := readAll(t, resp); resp.StatusCode != 529 || got != body || resp.Header.Get("Request-Id") != "req_123" {
		t.Fatalf("got %d %q", resp.StatusCode, got)
	}
	if s.hits.Load() != 4 {
		t.Fatalf("%d attempts, want 4", s.hits.Load())
	}
	if gave := rec.kind(EventGaveUp); len(gave) != 1 || gave[0].GaveUp != GaveUpExhausted || gave[0].Attempt != 4 {
		t.Fatalf("gave-up events %+v", gave)
	}
}

func TestRetry_StopsWhenBreakerTrippedByOtherCalls(t *testing.T) {
	s := newScript(t, status(503, `down`))
	o := testOptions()
	o.CircuitBreakerThreshold = 1
	var (
		rec     recorder
		started atomic.Bool
		other   *http.Client
	)
	var otherResult error
	observer := func(e Event) {
		rec.observe(e)
		if e.Type == EventRetryScheduled {
			// While the first call waits to retry, a second call fails and trips the breaker.
			if started.CompareAndSwap(false, true) {
				resp, err := post(t, other, s.url(), `{}`)
				if err == nil {
					readAll(t, resp)
				}
				otherResult = err
			}
		}
	}
	p, err := New(o, OnEvent(observer))
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: p.Wrap(tr)}
	other = c
	resp, err := post(t, c, s.url(), `{}`)
	if err != nil || otherResult != nil {
		t.Fatalf("errors %v / %v", err, otherResult)
	}
	if resp.StatusCode != 503 || readAll(t, resp) != "down" {
		t.Fatalf("got %d, want the last 503 intact", resp.StatusCode)
	}
	if p.CircuitState() != CircuitOpen {
		t.Fatalf("circuit %v, want open", p.CircuitState())
	}
	var stoppedByBreaker bool
	for _, e := range rec.kind(EventGaveUp) {
		stoppedByBreaker = stoppedByBreaker || e.GaveUp == GaveUpCircuitOpen
	}
	if !stoppedByBreaker {
		t.Fatalf("no gave-up event for the open circuit: %+v", rec.kind(EventGaveUp))
	}
	// First call: 1 attempt; second call: 4 attempts (it ran while the circuit was closed).
	if s.hits.Load() != 5 {
		t.Fatalf("%d attempts in all, want 5", s.hits.Load())
	}
}

func TestRetry_BudgetCapsRetriesDuringOutage(t *testing.T) {
	s := newScript(t, status(503, `down`))
	o := instantOptions()
	o.RetryBaseDelaySeconds = 0
	o.RetryBudgetPercent = 20
	o.CircuitBreakerThreshold = 1000
	var rec recorder
	c, _ := client(t, o, WithClock(newInstantClock()), OnEvent(rec.observe))
	const calls = 20
	for i := 0; i < calls; i++ {
		resp, err := post(t, c, s.url(), `{}`)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
	}
	// Without a budget: 20 × 4 = 80 attempts. With it: floor 3 + 20 % of 20 calls = 7 retries.
	if got := s.hits.Load(); got != calls+7 {
		t.Fatalf("%d attempts, want %d", got, calls+7)
	}
	var budgetStops int
	for _, e := range rec.kind(EventGaveUp) {
		if e.GaveUp == GaveUpBudget {
			budgetStops++
		}
	}
	if budgetStops == 0 {
		t.Fatal("no gave-up event for the budget")
	}
}

// A bucket of the retry budget counts in 32 bits and stops at the largest rather than wrap into
// a negative count, which would refuse every retry.
func TestRetry_BudgetCountsStopAtTheLargest(t *testing.T) {
	p, err := New(DefaultOptions(), WithClock(newInstantClock())) // a clock that stays in one bucket
	if err != nil {
		t.Fatal(err)
	}
	b := p.retry.budget
	now := p.ev.now()
	b.recordCall(now)
	b.slot(now.UnixNano() / int64(b.bucket)).calls = math.MaxInt32 - 1
	b.recordCall(now)
	b.recordCall(now)
	if c := b.slot(now.UnixNano() / int64(b.bucket)).calls; c != math.MaxInt32 {
		t.Fatalf("%d calls counted, want the largest int32", c)
	}
	if !b.tryRetry() {
		t.Fatal("no retry allowed after two billion calls")
	}
}

func TestRetry_CallerCancelMidBackoffReturnsPromptly(t *testing.T) {
	s := newScript(t, status(503, `x`, "Retry-After", "20"), ok())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := testOptions()
	o.TimeoutSeconds = 60
	c, _ := client(t, o, OnEvent(func(e Event) {
		if e.Type == EventRetryScheduled {
			go cancel()
		}
	}))
	done := make(chan error, 1)
	go func() {
		resp, err := postCtx(ctx, c, s.url(), `{}`)
		if resp != nil {
			resp.Body.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
			t.Fatalf("got %v, want context.Canceled and not ErrTimeout", err)
		}
	case <-time.After(10 * time.Second): // the wait was 20 s: this only catches a hang
		t.Fatal("cancellation during the backoff did not end the call")
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRetry_CallInfoCountsAttempts(t *testing.T) {
	s := newScript(t, status(503, `x`), status(503, `x`), ok())
	c, _ := client(t, testOptions())
	ctx, info := WithCallInfo(context.Background())
	resp, err := postCtx(ctx, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if info.Attempts != 3 {
		t.Fatalf("Attempts = %d, want 3", info.Attempts)
	}
}
