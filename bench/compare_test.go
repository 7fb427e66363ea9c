// Package bench compares steady's resilience pipeline with failsafe-go's HTTP support, both
// with the same four policies in the same order (bulkhead → timeout → circuit breaker →
// retry) over the same in-memory base transport. It is its own module so that users of
// steady never inherit failsafe-go.
//
//	cd bench && go test -bench . -benchmem -count 5
package bench

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/bulkhead"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/failsafe-go/failsafe-go/timeout"

	"github.com/steadyllm/steady/resilience"
)

// The settings both chains enforce: steady's DefaultOptions.
const (
	maxConcurrency   = 10
	totalTimeout     = 30 * time.Second
	breakerThreshold = 5
	breakerDelay     = 30 * time.Second
	retryCount       = 3
	retryBaseDelay   = time.Second
	retryMaxDelay    = 30 * time.Second
	jitterFactor     = 0.5 // steady's jitter multiplies by [0.5, 1.5)
)

var retryableStatus = map[int]bool{429: true, 502: true, 503: true, 504: true, 529: true}

// body is a small chat-completion-shaped JSON body shared by every response; the base wraps
// it in a fresh reader per call, so nothing is copied.
var body = []byte(`{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o-mini",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`)

var contentType = []string{"application/json"}

// memTransport is the base transport of every chain: it answers in memory with a fresh
// *http.Response, header map and body reader per call, as a real transport would allocate.
type memTransport struct{ status int }

func (t memTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return &http.Response{
		Status:        strconv.Itoa(t.status),
		StatusCode:    t.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": contentType},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}, nil
}

// steadyChain builds steady's pipeline with DefaultOptions, changed only as maxConc and
// maxQueue say (maxQueue < 0 keeps the default queue of 100).
func steadyChain(tb testing.TB, base http.RoundTripper, maxConc, maxQueue int) (*resilience.Pipeline, http.RoundTripper) {
	tb.Helper()
	opts := resilience.DefaultOptions()
	opts.BulkheadMaxConcurrency = maxConc
	if maxQueue >= 0 {
		opts.BulkheadMaxQueue = maxQueue
	}
	p, err := resilience.New(opts, resilience.WithName("bench"))
	if err != nil {
		tb.Fatal(err)
	}
	return p, p.Wrap(base)
}

// failsafeChain holds failsafe-go's four policies and the RoundTripper composed of them.
type failsafeChain struct {
	bulkhead bulkhead.Bulkhead[*http.Response]
	breaker  circuitbreaker.CircuitBreaker[*http.Response]
	rt       http.RoundTripper
}

// newFailsafeChain builds the same policy with failsafe-go: bulkhead (outermost), total
// timeout, circuit breaker (5 consecutive failures, 30 s open; a failure is an error or a
// 5xx), retry (3 retries on errors and 429/502/503/504/529, backoff 1 s..30 s with jitter,
// Retry-After honoured, the last response returned when exhausted).
func newFailsafeChain(base http.RoundTripper, maxConc uint, maxWait time.Duration) *failsafeChain {
	bh := bulkhead.NewBuilder[*http.Response](maxConc).WithMaxWaitTime(maxWait).Build()
	to := timeout.New[*http.Response](totalTimeout)
	cb := circuitbreaker.NewBuilder[*http.Response]().
		HandleIf(func(r *http.Response, err error) bool { return err != nil || r.StatusCode >= 500 }).
		WithFailureThreshold(breakerThreshold).
		WithDelay(breakerDelay).
		Build()
	rp := retrypolicy.NewBuilder[*http.Response]().
		HandleIf(func(r *http.Response, err error) bool { return err != nil || retryableStatus[r.StatusCode] }).
		WithMaxRetries(retryCount).
		WithBackoff(retryBaseDelay, retryMaxDelay).
		WithJitterFactor(jitterFactor).
		WithDelayFunc(failsafehttp.DelayFunc).
		ReturnLastFailure().
		Build()
	return &failsafeChain{
		bulkhead: bh,
		breaker:  cb,
		rt:       failsafehttp.NewRoundTripper(base, failsafe.Policy[*http.Response](bh), to, cb, rp),
	}
}

// request is built once and reused: neither chain mutates the caller's request.
func request(tb testing.TB) *http.Request {
	tb.Helper()
	req, err := http.NewRequest(http.MethodGet, "https://api.example.com/v1/chat/completions", nil)
	if err != nil {
		tb.Fatal(err)
	}
	return req
}

// call makes one call and reads the body to EOF and closes it, as a JSON client would.
func call(rt http.RoundTripper, req *http.Request) (int, error) {
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	if cerr := resp.Body.Close(); err == nil {
		err = cerr
	}
	return resp.StatusCode, err
}

func ok(rt http.RoundTripper, req *http.Request) error {
	status, err := call(rt, req)
	if err == nil && status != http.StatusOK {
		err = errors.New("status " + strconv.Itoa(status))
	}
	return err
}

func benchSuccess(b *testing.B, rt http.RoundTripper) {
	req := request(b)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := ok(rt, req); err != nil {
			b.Fatal(err)
		}
	}
}

func benchSuccessParallel(b *testing.B, rt http.RoundTripper) {
	req := request(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := ok(rt, req); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func benchRejected(b *testing.B, rt http.RoundTripper, want error) {
	b.Helper()
	req := request(b)
	if _, err := rt.RoundTrip(req); !errors.Is(err, want) {
		b.Fatalf("got %v, want %v", err, want)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if resp, err := rt.RoundTrip(req); err == nil {
			_ = resp.Body.Close()
			b.Fatal("call was not rejected")
		}
	}
}

// BenchmarkSuccess: one successful call. Overhead = steady − base, failsafe − base.
func BenchmarkSuccess(b *testing.B) {
	base := memTransport{status: http.StatusOK}
	b.Run("base", func(b *testing.B) { benchSuccess(b, base) })
	b.Run("steady", func(b *testing.B) {
		_, rt := steadyChain(b, base, maxConcurrency, -1)
		benchSuccess(b, rt)
	})
	b.Run("failsafe", func(b *testing.B) {
		benchSuccess(b, newFailsafeChain(base, maxConcurrency, totalTimeout).rt)
	})
}

// BenchmarkSuccessParallel: the same with GOMAXPROCS goroutines sharing one chain.
func BenchmarkSuccessParallel(b *testing.B) {
	base := memTransport{status: http.StatusOK}
	b.Run("base", func(b *testing.B) { benchSuccessParallel(b, base) })
	b.Run("steady", func(b *testing.B) {
		_, rt := steadyChain(b, base, maxConcurrency, -1)
		benchSuccessParallel(b, rt)
	})
	b.Run("failsafe", func(b *testing.B) {
		benchSuccessParallel(b, newFailsafeChain(base, maxConcurrency, totalTimeout).rt)
	})
}

// tripBreaker makes threshold calls that answer 500 (a failure neither chain retries).
func tripBreaker(b *testing.B, rt http.RoundTripper) {
	b.Helper()
	req := request(b)
	for range breakerThreshold {
		if status, err := call(rt, req); err != nil || status != http.StatusInternalServerError {
			b.Fatalf("tripping call: status %d, err %v", status, err)
		}
	}
}

// BenchmarkCircuitOpen: a call rejected by a circuit opened by 5 consecutive 500s.
func BenchmarkCircuitOpen(b *testing.B) {
	base := memTransport{status: http.StatusInternalServerError}
	b.Run("steady", func(b *testing.B) {
		p, rt := steadyChain(b, base, maxConcurrency, -1)
		tripBreaker(b, rt)
		if s := p.CircuitState(); s != resilience.CircuitOpen {
			b.Fatalf("circuit %s, want open", s)
		}
		benchRejected(b, rt, resilience.ErrCircuitOpen)
	})
	b.Run("failsafe", func(b *testing.B) {
		c := newFailsafeChain(base, maxConcurrency, totalTimeout)
		tripBreaker(b, c.rt)
		if !c.breaker.IsOpen() {
			b.Fatal("circuit not open")
		}
		benchRejected(b, c.rt, circuitbreaker.ErrOpen)
	})
}

// BenchmarkBulkheadFull: a call rejected by a bulkhead of 1 whose slot is held and which
// does not queue. steady holds a slot until the body is closed, so an open body holds it;
// failsafe-go releases its permit when RoundTrip returns, so the permit is taken directly.
func BenchmarkBulkheadFull(b *testing.B) {
	base := memTransport{status: http.StatusOK}
	b.Run("steady", func(b *testing.B) {
		_, rt := steadyChain(b, base, 1, 0)
		held, err := rt.RoundTrip(request(b))
		if err != nil {
			b.Fatal(err)
		}
		defer held.Body.Close()
		benchRejected(b, rt, resilience.ErrBulkheadRejected)
	})
	b.Run("failsafe", func(b *testing.B) {
		c := newFailsafeChain(base, 1, 0)
		if !c.bulkhead.TryAcquirePermit() {
			b.Fatal("no permit")
		}
		defer c.bulkhead.ReleasePermit()
		benchRejected(b, c.rt, bulkhead.ErrFull)
	})
}

// TestChainsAgree checks that both chains pass a 200 with its body through, retry a 503,
// open on 500s and reject when the bulkhead is full.
func TestChainsAgree(t *testing.T) {
	ok200 := memTransport{status: http.StatusOK}
	_, steady := steadyChain(t, ok200, maxConcurrency, -1)
	chains := map[string]http.RoundTripper{
		"steady":   steady,
		"failsafe": newFailsafeChain(ok200, maxConcurrency, totalTimeout).rt,
	}
	for name, rt := range chains {
		resp, err := rt.RoundTrip(request(t))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(got, body) {
			t.Fatalf("%s: status %d, body %q, err %v", name, resp.StatusCode, got, err)
		}
	}

	// Circuit: five 500s open both.
	fail := memTransport{status: http.StatusInternalServerError}
	_, steady = steadyChain(t, fail, maxConcurrency, -1)
	fs := newFailsafeChain(fail, maxConcurrency, totalTimeout)
	for name, c := range map[string]struct {
		rt   http.RoundTripper
		want error
	}{"steady": {steady, resilience.ErrCircuitOpen}, "failsafe": {fs.rt, circuitbreaker.ErrOpen}} {
		for i := range breakerThreshold {
			if status, err := call(c.rt, request(t)); status != http.StatusInternalServerError || err != nil {
				t.Fatalf("%s call %d: status %d, err %v", name, i, status, err)
			}
		}
		if _, err := c.rt.RoundTrip(request(t)); !errors.Is(err, c.want) {
			t.Fatalf("%s: after %d failures got %v, want %v", name, breakerThreshold, err, c.want)
		}
	}

	// Bulkhead: a second call while the only slot is held is rejected at once.
	_, steady = steadyChain(t, ok200, 1, 0)
	held, err := steady.RoundTrip(request(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := steady.RoundTrip(request(t)); !errors.Is(err, resilience.ErrBulkheadRejected) {
		t.Fatalf("steady: got %v, want ErrBulkheadRejected", err)
	}
	_ = held.Body.Close()
	fs = newFailsafeChain(ok200, 1, 0)
	fs.bulkhead.TryAcquirePermit()
	if _, err := fs.rt.RoundTrip(request(t)); !errors.Is(err, bulkhead.ErrFull) {
		t.Fatalf("failsafe: got %v, want bulkhead.ErrFull", err)
	}
	fs.bulkhead.ReleasePermit()
}
