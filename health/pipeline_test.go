package health

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/resilience"
)

const sentinelKey = "sk-SENTINEL-123"

// A pipeline must keep offering CircuitInfo, or the checker silently stops reporting
// nextProbeIn: the method is found through an optional interface.
var _ circuitInfoSource = (*resilience.Pipeline)(nil)

// upstream is a 127.0.0.1 server that answers every request with 503, and fails the test
// if a request arrives without the sentinel key, so we know the key really went out.
func upstream(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+sentinelKey {
			t.Errorf("upstream got Authorization %q", r.Header.Get("Authorization"))
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"error":{"message":"overloaded","type":"server_error"}}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// newPipeline builds a real pipeline that opens after threshold failures and stays open
// for brk, without retries, so each request is one failure.
func newPipeline(t *testing.T, name string, threshold int, brk time.Duration) *resilience.Pipeline {
	t.Helper()
	opts := resilience.DefaultOptions()
	opts.RetryCount = 0
	opts.CircuitBreakerThreshold = threshold
	opts.CircuitBreakerDurationSeconds = brk.Seconds()
	p, err := resilience.New(opts, resilience.WithName(name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// trip sends threshold failing calls, carrying the sentinel key in a header, the URL's
// user info and its query, through p to srv.
func trip(t *testing.T, p *resilience.Pipeline, srv *httptest.Server, threshold int) {
	t.Helper()
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	client := &http.Client{Transport: p.Wrap(base)}
	u, _ := url.Parse(srv.URL + "/v1/chat/completions?api_key=" + sentinelKey)
	u.User = url.UserPassword("user", sentinelKey)
	for range threshold {
		req, _ := http.NewRequest(http.MethodPost, u.String(), strings.NewReader(`{"model":"gpt-4o-mini"}`))
		req.Header.Set("Authorization", "Bearer "+sentinelKey)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("call: %v", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("call: status %d, want 503", resp.StatusCode)
		}
	}
	if s := p.CircuitState(); s != resilience.CircuitOpen && s != resilience.CircuitHalfOpen {
		t.Fatalf("after %d failures the circuit is %s, want open", threshold, s)
	}
}

// assertNoSecret fails if the output shows the key or where the upstream lives.
func assertNoSecret(t *testing.T, out string, srv *httptest.Server) {
	t.Helper()
	for _, s := range []string{"SENTINEL", sentinelKey, strings.TrimPrefix(srv.URL, "http://"), "user"} {
		if strings.Contains(out, s) {
			t.Errorf("output contains %q:\n%s", s, out)
		}
	}
}

func TestHandler_OpenTurnsHalfOpenWithoutTraffic(t *testing.T) {
	const brk = 300 * time.Millisecond
	srv := upstream(t)
	p := newPipeline(t, "openai", 2, brk)
	c := NewChecker()
	c.Add("openai", p)
	h := c.Handler()

	rec, doc := serve(t, h, http.MethodGet)
	if rec.Code != 200 || checkEntry(t, doc, "openai:circuit")["observedValue"] != "closed" {
		t.Fatalf("before any call: %d %s, want 200 closed", rec.Code, rec.Body)
	}

	trip(t, p, srv, 2)
	tripped := time.Now()
	rec, doc = serve(t, h, http.MethodGet)
	assertNoSecret(t, rec.Body.String(), srv)
	if time.Since(tripped) < brk { // otherwise the break elapsed already on a slow machine
		entry := checkEntry(t, doc, "openai:circuit")
		if rec.Code != 503 || doc["status"] != "fail" || entry["observedValue"] != "open" {
			t.Fatalf("just tripped: %d %s, want 503 fail open", rec.Code, rec.Body)
		}
		d, err := time.ParseDuration(entry["nextProbeIn"].(string))
		if err != nil || d <= 0 || d > brk {
			t.Errorf("nextProbeIn = %v (%v), want in (0, %s]", entry["nextProbeIn"], err, brk)
		}
		if err := c.Check(context.Background()); !errors.Is(err, ErrUnhealthy) {
			t.Errorf("Check = %v, want ErrUnhealthy", err)
		} else {
			assertNoSecret(t, err.Error(), srv)
		}
	}

	// No call goes through the pipeline from here on: only reads.
	deadline := time.Now().Add(10 * time.Second)
	for {
		rec, doc = serve(t, h, http.MethodGet)
		if checkEntry(t, doc, "openai:circuit")["observedValue"] == "half-open" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("circuit never showed half-open: %s", rec.Body)
		}
		time.Sleep(5 * time.Millisecond)
	}
	entry := checkEntry(t, doc, "openai:circuit")
	if rec.Code != 200 || doc["status"] != "warn" || entry["status"] != "warn" {
		t.Errorf("half-open: %d %s, want 200 warn", rec.Code, rec.Body)
	}
	if _, ok := entry["nextProbeIn"]; ok {
		t.Errorf("half-open shows nextProbeIn: %s", rec.Body)
	}
	if err := c.Check(context.Background()); err != nil {
		t.Errorf("Check(half-open) = %v, want nil", err)
	}
	assertNoSecret(t, rec.Body.String(), srv)
}

func TestHandler_IsolateAndResetOfRealPipeline(t *testing.T) {
	p := newPipeline(t, "openai", 5, time.Minute)
	c := NewChecker()
	c.Add("openai", p)

	p.Isolate()
	rec, doc := serve(t, c.Handler(), http.MethodGet)
	entry := checkEntry(t, doc, "openai:circuit")
	if rec.Code != 503 || entry["observedValue"] != "isolated" || entry["status"] != "fail" {
		t.Errorf("isolated: %d %s, want 503 isolated fail", rec.Code, rec.Body)
	}
	if _, ok := entry["nextProbeIn"]; ok {
		t.Errorf("isolated shows nextProbeIn: %s", rec.Body)
	}

	p.Reset()
	rec, doc = serve(t, c.Handler(), http.MethodGet)
	if rec.Code != 200 || checkEntry(t, doc, "openai:circuit")["observedValue"] != "closed" {
		t.Errorf("after Reset: %d %s, want 200 closed", rec.Code, rec.Body)
	}
}

// circuits is a CircuitSet, as the client will be.
type circuits map[string]*resilience.Pipeline

func (c circuits) Circuits() map[string]*resilience.Pipeline { return c }

func TestChecker_FallbackChainOfRealPipelines(t *testing.T) {
	srv := upstream(t)
	primary := newPipeline(t, "openai", 1, time.Minute)
	secondary := newPipeline(t, "anthropic", 1, time.Minute)
	c := NewChecker(WithFallback())
	c.AddSet(circuits{"openai": primary, "anthropic": secondary})

	trip(t, primary, srv, 1)
	rec, doc := serve(t, c.Handler(), http.MethodGet)
	if rec.Code != 200 || doc["status"] != "warn" {
		t.Errorf("primary open, secondary closed: %d %s, want 200 warn", rec.Code, rec.Body)
	}
	if e := checkEntry(t, doc, "openai:circuit"); e["status"] != "fail" || e["nextProbeIn"] == nil {
		t.Errorf("the open member must still show fail and its next probe: %s", rec.Body)
	}
	if err := c.Check(context.Background()); err != nil {
		t.Errorf("Check = %v, want nil while the fallback passes", err)
	}

	secondary.Isolate()
	rec, doc = serve(t, c.Handler(), http.MethodGet)
	if rec.Code != 503 || doc["status"] != "fail" {
		t.Errorf("whole chain down: %d %s, want 503 fail", rec.Code, rec.Body)
	}
	assertNoSecret(t, rec.Body.String(), srv)
}

func TestHandler_OverRealServer(t *testing.T) {
	p := newPipeline(t, "openai", 5, time.Minute)
	c := NewChecker()
	c.AddAll(map[string]*resilience.Pipeline{"openai": p})
	srv := httptest.NewServer(c.Handler())
	defer srv.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	for _, method := range []string{http.MethodGet, http.MethodHead} {
		req, _ := http.NewRequest(method, srv.URL, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != ContentType {
			t.Errorf("%s: %d %q", method, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if (method == http.MethodHead) != (len(body) == 0) {
			t.Errorf("%s: body %q", method, body)
		}
	}
}

// A pipeline pausing after a rate limit is a warning, with the time left of the pause.
func TestChecker_RateLimitPauseIsAWarning(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	p := newPipeline(t, "openai", 5, time.Minute)
	getThrough(t, p, srv.URL)
	c := NewChecker()
	c.Add("openai", p)
	r := c.Report()
	if r.Status != StatusWarn || r.Checks[0].State != resilience.CircuitClosed || r.Checks[0].CoolingFor <= 25*time.Second {
		t.Fatalf("report %+v", r)
	}
	b, _ := r.MarshalJSON()
	if !strings.Contains(string(b), `"coolingFor":"`) || !strings.Contains(string(b), `"status":"warn"`) {
		t.Fatalf("document %s", b)
	}
}

// A pacing pipeline reports what is left of its per-minute limits.
func TestChecker_ReportsHeadroom(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	opts := resilience.DefaultOptions()
	opts.PaceRequestsPerMinute = 10
	p, err := resilience.New(opts, resilience.WithName("openai/key-1"))
	if err != nil {
		t.Fatal(err)
	}
	getThrough(t, p, srv.URL)
	c := NewChecker()
	c.Add("openai/key-1", p)
	r := c.Report()
	if r.Checks[0].RequestsLeft < 0.89 || r.Checks[0].RequestsLeft > 0.91 || r.Checks[0].TokensLeft != -1 {
		t.Fatalf("report %+v", r.Checks[0])
	}
	b, _ := r.MarshalJSON()
	if !strings.Contains(string(b), `"requestsLeft":"0.9`) || strings.Contains(string(b), "tokensLeft") {
		t.Fatalf("document %s", b)
	}
}

// getThrough sends one GET to url through pipeline p over a transport of its own, closed
// when the test ends.
func getThrough(t *testing.T, p *resilience.Pipeline, url string) {
	t.Helper()
	tr := p.Wrap(&http.Transport{})
	t.Cleanup(tr.(interface{ CloseIdleConnections() }).CloseIdleConnections)
	resp, err := (&http.Client{Transport: tr}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
}
