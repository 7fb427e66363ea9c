package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestDemo_ShowsClosedOpenHalfOpenClosed(t *testing.T) {
	var out strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := runDemo(ctx, &out, 2, 100*time.Millisecond); err != nil {
		t.Fatalf("runDemo: %v\n%s", err, out.String())
	}
	got := out.String()

	// The /readyz answers appear in the scenario's order.
	rest := got
	for _, want := range []string{
		`"observedValue": "closed"`,
		"HTTP/1.1 503 Service Unavailable", // /chat refused by the open circuit
		`"observedValue": "open"`,
		`"nextProbeIn": "`,
		`{"status":"pass"}`, // liveness still passes
		`"observedValue": "half-open"`,
		`"status": "warn"`,
		`"observedValue": "closed"`,
	} {
		i := strings.Index(rest, want)
		if i < 0 {
			t.Fatalf("output lacks %q after the previous step:\n%s", want, got)
		}
		rest = rest[i+len(want):]
	}
	if strings.Contains(got, demoAPIKey) || strings.Contains(got, "sk-") {
		t.Errorf("the API key leaked into the output:\n%s", got)
	}
}

func TestChat_RefusedWhileIsolatedButLivenessPasses(t *testing.T) {
	a, err := newApp(3, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	h := a.routes()
	a.pipeline.Isolate()

	for path, want := range map[string]int{"/chat": 503, "/readyz": 503, "/livez": 200} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != want {
			t.Errorf("%s: %d %s, want %d", path, rec.Code, rec.Body, want)
		}
	}
}

func TestListenLoopback_RefusesOtherAddresses(t *testing.T) {
	for _, addr := range []string{":8081", "0.0.0.0:8081", "[::]:8081", "example.com:80", "8081"} {
		if ln, err := listenLoopback(addr); err == nil {
			_ = ln.Close()
			t.Errorf("listenLoopback(%q) succeeded, want an error", addr)
		}
	}
	ln, err := listenLoopback("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_ = ln.Close()
}

func TestServe_StopsWhenContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, "127.0.0.1:0", 3, time.Second) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
}

func TestStatusPage_ShowsTheCircuitAndNoKey(t *testing.T) {
	a, err := newApp(1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	h := a.routes()
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec
	}
	get("/chat?fail=1") // one failure opens the circuit
	page := get("/debug/steady")
	if page.Code != http.StatusOK || !strings.Contains(page.Body.String(), `data-name="openai" data-status="fail" data-circuit="open"`) {
		t.Fatalf("/debug/steady: %d\n%s", page.Code, page.Body)
	}
	js := get("/debug/steady?format=json").Body.String()
	if !strings.Contains(js, `"detail": "closed → open for `) {
		t.Errorf("the page's events lack the opening:\n%s", js)
	}
	for _, body := range []string{page.Body.String(), js} {
		if strings.Contains(body, demoAPIKey) || strings.Contains(body, "sk-") {
			t.Errorf("the API key leaked onto the status page:\n%s", body)
		}
	}
}
