package resilience

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// The seed's chaos test: two 503s, then success.
func TestPipeline_HandlesIntermittentFailures(t *testing.T) {
	s := newScript(t, status(503, `x`), status(503, `x`), ok())
	c, _ := client(t, testOptions())
	code, err := doCall(t, c, s.url())
	if err != nil || code != 200 || s.hits.Load() != 3 {
		t.Fatalf("%d %v after %d calls, want 200 after 3", code, err, s.hits.Load())
	}
}

// idleCounter is a base transport that counts CloseIdleConnections calls.
type idleCounter struct {
	http.RoundTripper
	closes atomic.Int32
}

func (c *idleCounter) CloseIdleConnections() { c.closes.Add(1) }

// go-retryablehttp calls CloseIdleConnections on every give-up, flushing the whole pool.
func TestRetryEngine_NeverClosesIdleConnections(t *testing.T) {
	s := newScript(t, status(503, `x`))
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	base := &idleCounter{RoundTripper: tr}
	p, err := New(testOptions())
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: p.Wrap(base)}
	for i := 0; i < 3; i++ { // exhausted retries: a give-up each time
		doCall(t, c, s.url())
	}
	if n := base.closes.Load(); n != 0 {
		t.Fatalf("the pipeline closed the caller's idle connections %d times", n)
	}
	// Discarded responses were drained, so one connection served all 12 attempts.
	if n := s.newConns.Load(); n != 1 {
		t.Fatalf("%d connections for 12 sequential attempts, want 1 (reuse)", n)
	}
	// The caller can still flush its own pool through the pipeline.
	c.CloseIdleConnections()
	if base.closes.Load() != 1 {
		t.Fatal("CloseIdleConnections is not forwarded to the base transport")
	}
}

// go-retryablehttp's NewClient logs every request to stderr, URLs with query strings.
func TestRetryEngine_HasNoLoggerOrHooks(t *testing.T) {
	p, err := New(testOptions())
	if err != nil {
		t.Fatal(err)
	}
	rt := p.Wrap(http.DefaultTransport).(*bulkheadTransport)
	retry := rt.next.(*timeoutTransport).next.(*breakerTransport).next.(*retryTransport)
	c := retry.client
	if c.Logger != nil || c.RequestLogHook != nil || c.ResponseLogHook != nil {
		t.Fatal("the retry engine has a logger or log hooks")
	}
	if c.HTTPClient.CheckRedirect == nil {
		t.Fatal("the engine's inner client would follow redirects")
	}
	if _, ok := c.HTTPClient.Transport.(interface{ CloseIdleConnections() }); ok {
		t.Fatal("the engine could reach CloseIdleConnections")
	}
}

// Events and errors never carry the API key, whether it travels in a header or (as some
// OpenAI-compatible gateways accept) in the query string.
func TestEvents_CarryNoSecrets(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []string
	)
	record := func(e Event) {
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%+v|%v", e, e.Err))
		mu.Unlock()
	}
	done := make(chan struct{})
	defer close(done)
	flaky := newScript(t, reset(), status(429, `{"error":"`+"rate"+`"}`, "retry-after-ms", "1"), status(503, `x`, "Retry-After", "3600"))
	stalled := newScript(t, stall(done))
	o := testOptions()
	o.CircuitBreakerThreshold = 1
	o.AttemptTimeoutSeconds = 0.02
	o.TimeoutSeconds = 0.2
	o.BulkheadMaxConcurrency = 1
	o.BulkheadMaxQueue = 0
	c, p := client(t, o, OnEvent(record))
	query := "?api_key=" + sentinelKey
	var errs []error
	keep := func(resp *http.Response, err error) {
		if err != nil {
			// The caller's own http.Client wraps our error in a *url.Error naming the URL it
			// was given; that is the caller's, not ours. Check what the pipeline returned.
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			errs = append(errs, err)
			return
		}
		readAll(t, resp)
	}
	keep(post(t, c, flaky.url()+query, `{}`)) // reset, 429, 503 with a long hint: gave up
	p.Reset()
	keep(post(t, c, stalled.url()+query, `{}`)) // attempt timeouts, then the total timeout
	keep(post(t, c, stalled.url()+query, `{}`)) // circuit open
	p.Reset()
	held, err := post(t, c, flaky.url()+query, `{}`)
	if err == nil {
		keep(post(t, c, flaky.url()+query, `{}`)) // bulkhead full
		readAll(t, held)
	}
	for _, err := range errs {
		seen = append(seen, err.Error())
	}
	if len(errs) < 3 {
		t.Fatalf("expected timeout, circuit and bulkhead errors, got %v", errs)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, s := range seen {
		if strings.Contains(s, sentinelKey) || strings.Contains(s, "api_key") {
			t.Fatalf("secret leaked: %s", s)
		}
	}
	var te *TimeoutError
	found := false
	for _, err := range errs {
		found = found || errors.As(err, &te)
	}
	if !found {
		t.Fatalf("no timeout among %v", errs)
	}
}
