package resilience

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// script is a loopback server that answers each request with the next handler of a script,
// repeating the last one, and records what it received.
type script struct {
	srv      *httptest.Server
	mu       sync.Mutex
	handlers []http.HandlerFunc
	bodies   [][]byte
	headers  []http.Header
	hits     atomic.Int32
	newConns atomic.Int32
}

func newScript(t *testing.T, handlers ...http.HandlerFunc) *script {
	t.Helper()
	s := &script{handlers: handlers}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.newConns.Add(1)
		}
	}
	s.srv.Start()
	t.Cleanup(s.srv.Close)
	return s
}

func (s *script) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	n := int(s.hits.Add(1))
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	s.headers = append(s.headers, r.Header.Clone())
	h := s.handlers[min(n, len(s.handlers))-1]
	s.mu.Unlock()
	h(w, r)
}

func (s *script) url() string { return s.srv.URL + "/v1/chat/completions" }

func (s *script) recordedBodies() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.bodies...)
}

// status answers with code, optional header pairs, and a JSON body.
func status(code int, body string, kv ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(kv); i += 2 {
			w.Header().Set(kv[i], kv[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

func ok() http.HandlerFunc { return status(200, `{"ok":true}`) }

// reset closes the connection abruptly (RST) before any response.
func reset() http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		_ = conn.Close()
	}
}

// stall blocks until the client goes away or the test ends.
func stall(done <-chan struct{}) http.HandlerFunc {
	return func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}
}

// testOptions are fast, deterministic defaults for tests: no jitter, no budget, tiny delays.
func testOptions() Options {
	o := DefaultOptions()
	o.RetryBaseDelaySeconds = 0.001
	o.RetryMaxDelaySeconds = 30
	o.RetryUseJitter = false
	o.RetryBudgetPercent = 0
	o.TimeoutSeconds = 10
	o.StreamIdleTimeoutSeconds = 10
	o.BulkheadQueueTimeoutSeconds = 0
	return o
}

// recorder collects events.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) observe(e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) all() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

func (r *recorder) kind(k EventType) []Event {
	var out []Event
	for _, e := range r.all() {
		if e.Type == k {
			out = append(out, e)
		}
	}
	return out
}

// instantClock makes every wait end at once while recording it, and moves its own time
// forward by the wait. Use it only with the timeouts that would also run through it turned
// off (TimeoutSeconds, StreamIdleTimeoutSeconds, BulkheadQueueTimeoutSeconds, attempt).
type instantClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newInstantClock() *instantClock { return &instantClock{now: time.Now()} }

func (c *instantClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *instantClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.sleeps = append(c.sleeps, d)
	c.mu.Unlock()
	go f()
	return firedTimer{}
}

func (c *instantClock) waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

type firedTimer struct{}

func (firedTimer) Stop() bool               { return false }
func (firedTimer) Reset(time.Duration) bool { return false }

// instantOptions turns off the limits that would run through an instantClock.
func instantOptions() Options {
	o := testOptions()
	o.TimeoutSeconds = 0
	o.StreamIdleTimeoutSeconds = 0
	return o
}

// client builds an http.Client over a new pipeline.
func client(t *testing.T, o Options, opts ...Option) (*http.Client, *Pipeline) {
	t.Helper()
	p, err := New(o, opts...)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: p.Wrap(tr)}, p
}

func post(t *testing.T, c *http.Client, url, body string) (*http.Response, error) {
	t.Helper()
	return postCtx(context.Background(), c, url, body)
}

func postCtx(ctx context.Context, c *http.Client, url, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+sentinelKey)
	req.Header.Set("Content-Type", "application/json")
	return c.Do(req)
}

// readAll reads and closes a response body.
func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return string(b)
}

const sentinelKey = "sk-SENTINEL-4f1c9e"

// eventually polls cond until it holds or a generous deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
