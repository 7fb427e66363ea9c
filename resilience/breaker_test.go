package resilience

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"
)

func breakerOptions(threshold int, durationSeconds float64) Options {
	o := testOptions()
	o.RetryCount = 0
	o.CircuitBreakerThreshold = threshold
	o.CircuitBreakerDurationSeconds = durationSeconds
	o.CircuitBreakerMinDurationSeconds = durationSeconds // a constant break, unless a test grows it
	return o
}

func doCall(t *testing.T, c *http.Client, url string) (int, error) {
	t.Helper()
	resp, err := post(t, c, url, `{}`)
	if err != nil {
		return 0, err
	}
	readAll(t, resp)
	return resp.StatusCode, nil
}

func TestCircuitBreaker_OpensAfterThreshold(t *testing.T) {
	s := newScript(t, status(500, `boom`))
	c, p := client(t, breakerOptions(5, 3600))
	for i := 1; i <= 5; i++ {
		if p.CircuitState() != CircuitClosed {
			t.Fatalf("circuit %v after %d failures, want closed", p.CircuitState(), i-1)
		}
		if code, err := doCall(t, c, s.url()); err != nil || code != 500 {
			t.Fatalf("call %d: %d %v", i, code, err)
		}
	}
	if p.CircuitState() != CircuitOpen {
		t.Fatalf("circuit %v after 5 failures, want open", p.CircuitState())
	}
}

func TestCircuitBreaker_RejectsWhenOpenWithoutNetwork(t *testing.T) {
	s := newScript(t, status(503, `down`))
	var rec recorder
	c, p := client(t, breakerOptions(2, 3600), OnEvent(rec.observe))
	doCall(t, c, s.url())
	doCall(t, c, s.url())
	hits := s.hits.Load()
	_, err := doCall(t, c, s.url())
	if !errors.Is(err, ErrCircuitOpen) {
		t.Fatalf("got %v, want ErrCircuitOpen", err)
	}
	var coe *CircuitOpenError
	if !errors.As(err, &coe) || coe.State != CircuitOpen || coe.RetryAfter <= 59*time.Minute {
		t.Fatalf("error %#v: want state open and about an hour until the next probe", coe)
	}
	if s.hits.Load() != hits {
		t.Fatal("an open circuit let a call reach the server")
	}
	if info := p.CircuitInfo(); info.State != CircuitOpen || info.NextProbeIn <= 59*time.Minute {
		t.Fatalf("info %+v", info)
	}
	if len(rec.kind(EventBreakerRejected)) != 1 {
		t.Fatalf("rejection events: %+v", rec.kind(EventBreakerRejected))
	}
	changes := rec.kind(EventBreakerStateChanged)
	if len(changes) != 1 || changes[0].From != CircuitClosed || changes[0].To != CircuitOpen {
		t.Fatalf("state change events: %+v", changes)
	}
}

// The seed's chaos test: every call fails; once the threshold is reached the rest fail fast.
func TestCircuitBreaker_FailsFastAfterThreshold(t *testing.T) {
	s := newScript(t, status(500, `boom`))
	c, _ := client(t, breakerOptions(5, 3600))
	var rejected int
	for i := 0; i < 10; i++ {
		if _, err := doCall(t, c, s.url()); errors.Is(err, ErrCircuitOpen) {
			rejected++
		}
	}
	if s.hits.Load() != 5 || rejected != 5 {
		t.Fatalf("%d calls reached the server and %d were rejected, want 5 and 5", s.hits.Load(), rejected)
	}
}

func TestCircuitBreaker_HalfOpensAfterDurationWithoutTraffic(t *testing.T) {
	s := newScript(t, status(500, `boom`), status(500, `boom`), ok())
	c, p := client(t, breakerOptions(2, 0.05))
	doCall(t, c, s.url())
	doCall(t, c, s.url())
	// Only reads: no call passes through, yet the state must move on its own.
	eventually(t, "half-open", func() bool { return p.CircuitState() == CircuitHalfOpen })
	if code, err := doCall(t, c, s.url()); err != nil || code != 200 {
		t.Fatalf("probe: %d %v", code, err)
	}
	if p.CircuitState() != CircuitClosed {
		t.Fatalf("circuit %v after a successful probe, want closed", p.CircuitState())
	}
}

func TestCircuitBreaker_FailedProbeReopens(t *testing.T) {
	s := newScript(t, status(502, `bad`))
	o := breakerOptions(1, 0.05)
	c, p := client(t, o)
	doCall(t, c, s.url())
	eventually(t, "half-open", func() bool { return p.CircuitState() == CircuitHalfOpen })
	doCall(t, c, s.url())
	if st := p.CircuitState(); st != CircuitOpen && st != CircuitHalfOpen {
		t.Fatalf("circuit %v after a failed probe, want open", st)
	}
}

// A probe whose body is read to EOF but never closed still reports, so the breaker cannot
// stick in half-open (go-openai leaves some error bodies unclosed).
func TestCircuitBreaker_ProbeReportsAtEOFWithoutClose(t *testing.T) {
	s := newScript(t, status(500, `boom`), status(400, `bad request`), ok())
	c, p := client(t, breakerOptions(1, 0.05))
	doCall(t, c, s.url())
	eventually(t, "half-open", func() bool { return p.CircuitState() == CircuitHalfOpen })
	resp, err := post(t, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(resp.Body); err != nil { // read to EOF, deliberately not closed
		t.Fatal(err)
	}
	if p.CircuitState() != CircuitClosed {
		t.Fatalf("circuit %v, want closed after the probe's body reached EOF", p.CircuitState())
	}
	resp.Body.Close()
}

func TestCircuitBreaker_RateLimitsAndClientErrorsAreNotFailures(t *testing.T) {
	for _, code := range []int{400, 404, 409, 413, 422, 429} {
		s := newScript(t, status(code, `{}`))
		c, p := client(t, breakerOptions(1, 3600))
		for i := 0; i < 3; i++ {
			doCall(t, c, s.url())
		}
		if p.CircuitState() != CircuitClosed {
			t.Fatalf("%d opened the circuit", code)
		}
	}
}

func TestCircuitBreaker_CallerCancellationIsNotAFailure(t *testing.T) {
	done := make(chan struct{})
	defer close(done)
	s := newScript(t, stall(done))
	c, p := client(t, breakerOptions(1, 3600))
	for i := 0; i < 3; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		go func() { time.Sleep(5 * time.Millisecond); cancel() }()
		if _, err := postCtx(ctx, c, s.url(), `{}`); !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
		cancel()
	}
	if p.CircuitState() != CircuitClosed {
		t.Fatal("the caller's cancellation opened the circuit")
	}
}

func TestCircuitBreaker_OwnTimeoutIsAFailure(t *testing.T) {
	done := make(chan struct{})
	defer close(done)
	s := newScript(t, stall(done))
	o := breakerOptions(1, 3600)
	o.TimeoutSeconds = 0.05
	c, p := client(t, o)
	if _, err := doCall(t, c, s.url()); !errors.Is(err, ErrTimeout) {
		t.Fatalf("got %v, want ErrTimeout", err)
	}
	if p.CircuitState() != CircuitOpen {
		t.Fatalf("circuit %v after our own timeout, want open", p.CircuitState())
	}
}

func TestCircuitBreaker_ReportedStreamFailureCounts(t *testing.T) {
	s := newScript(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}\n\n")
	})
	// Without a reporter the 200 stream is a success once read to EOF.
	c, p := client(t, breakerOptions(1, 3600))
	resp, err := post(t, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	if p.CircuitState() != CircuitClosed {
		t.Fatalf("circuit %v after a plain 200 stream", p.CircuitState())
	}
	resp.Body.Close()

	// With one, the reader parses the error event — here after the body reached EOF, as a
	// buffered reader may — reports it, then closes: the breaker counts a failure.
	ctx, report := WithFailureReporter(context.Background())
	resp, err = postCtx(ctx, c, s.url(), `{}`)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v", err)
	}
	io.ReadAll(resp.Body)
	if p.CircuitState() != CircuitClosed {
		t.Fatal("the outcome was settled at EOF although a reporter may still report")
	}
	report(errors.New("overloaded inside the stream"))
	resp.Body.Close()
	if p.CircuitState() != CircuitOpen {
		t.Fatalf("circuit %v, want open after a reported in-stream overload", p.CircuitState())
	}
	report(errors.New("late")) // after Close: ignored, no panic
}

func TestCircuitBreaker_IsolateAndReset(t *testing.T) {
	s := newScript(t, ok())
	var rec recorder
	c, p := client(t, breakerOptions(5, 3600), OnEvent(rec.observe))
	p.Isolate()
	if p.CircuitState() != CircuitIsolated {
		t.Fatalf("state %v", p.CircuitState())
	}
	_, err := doCall(t, c, s.url())
	var coe *CircuitOpenError
	if !errors.As(err, &coe) || coe.State != CircuitIsolated || s.hits.Load() != 0 {
		t.Fatalf("got %v with %d hits, want an isolated rejection and no traffic", err, s.hits.Load())
	}
	p.Reset()
	if code, err := doCall(t, c, s.url()); err != nil || code != 200 || p.CircuitState() != CircuitClosed {
		t.Fatalf("after Reset: %d %v %v", code, err, p.CircuitState())
	}
	changes := rec.kind(EventBreakerStateChanged)
	if len(changes) != 2 || changes[0].To != CircuitIsolated || changes[1].From != CircuitIsolated || changes[1].To != CircuitClosed {
		t.Fatalf("state changes %+v", changes)
	}
}

func TestCircuitBreaker_ResetClosesAnOpenCircuit(t *testing.T) {
	s := newScript(t, status(500, `x`), ok())
	c, p := client(t, breakerOptions(1, 3600))
	doCall(t, c, s.url())
	if p.CircuitState() != CircuitOpen {
		t.Fatal("not open")
	}
	p.Reset()
	if code, err := doCall(t, c, s.url()); err != nil || code != 200 {
		t.Fatalf("%d %v", code, err)
	}
}

func TestCircuitBreaker_RatioMode(t *testing.T) {
	// Alternate successes and failures: never 3 in a row, but half of the calls fail.
	// (The ratio is checked when a failure is recorded.)
	s := newScript(t, ok(), status(500, `x`), ok(), status(500, `x`), ok(), status(500, `x`))
	o := breakerOptions(3, 3600)
	o.CircuitBreakerFailureRatio = 0.5
	o.CircuitBreakerSamplingSeconds = 60
	o.CircuitBreakerMinThroughput = 6
	c, p := client(t, o)
	for i := 0; i < 5; i++ {
		doCall(t, c, s.url())
		if p.CircuitState() != CircuitClosed {
			t.Fatalf("opened after %d calls, before the minimum throughput", i+1)
		}
	}
	doCall(t, c, s.url()) // 6th call: 3 of 6 failed
	if p.CircuitState() != CircuitOpen {
		t.Fatalf("circuit %v with 50%% failures over 6 calls, want open", p.CircuitState())
	}
}

// A refused key fails every call the same way: 401 and 403 count against the circuit, so the
// provider's trouble shows in its state and health.
func TestCircuitBreaker_RefusedCredentialsAreFailures(t *testing.T) {
	for _, code := range []int{401, 403} {
		s := newScript(t, status(code, `{}`))
		c, p := client(t, breakerOptions(2, 3600))
		doCall(t, c, s.url())
		doCall(t, c, s.url())
		if p.CircuitState() != CircuitOpen {
			t.Fatalf("%d twice: circuit %v, want open", code, p.CircuitState())
		}
	}
}
