package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/steadyllm/steady/mocks"
)

// The files as docs/first-service.md runs them: the configuration, then the Development
// overlay that points both providers at a local fake server.
var devFiles = []string{"appsettings.json", "appsettings.Development.json"}

// setenv sets the environment of a test: placeholder keys, as the guide exports them, and the
// fake server's address in place of the overlay's fixed 127.0.0.1:8080 (its port is chosen by
// the test). The backoff is shortened so an outage takes milliseconds rather than seconds.
func setenv(t *testing.T, fake *mocks.Server) {
	t.Setenv("OPENAI_API_KEY", "sk-fake")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-fake")
	t.Setenv("LLM__Providers__openai__BaseURL", fake.OpenAIBaseURL())
	t.Setenv("LLM__Providers__anthropic__BaseURL", fake.AnthropicBaseURL())
	t.Setenv("LLM__Resilience__RetryBaseDelaySeconds", "0.001")
}

// syncBuffer is a log sink the service's goroutines and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// service runs the first service on a loopback port until the test ends.
func service(t *testing.T, configs []string) (base string, logs *syncBuffer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs = &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, slog.New(slog.NewTextHandler(logs, nil)), ln, configs) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	return "http://" + ln.Addr().String(), logs
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// readiness returns /readyz's status code and overall status.
func readiness(t *testing.T, base string) (int, string) {
	t.Helper()
	code, body := get(t, base+"/readyz")
	var report struct{ Status string }
	if err := json.Unmarshal([]byte(body), &report); err != nil {
		t.Fatalf("/readyz: %v\n%s", err, body)
	}
	return code, report.Status
}

func TestFirstService_AnswersThroughTheFirstProvider(t *testing.T) {
	fake := mocks.NewServer(mocks.WithReply("Hello from the fake."))
	defer fake.Close()
	setenv(t, fake)
	base, _ := service(t, devFiles)

	code, body := get(t, base+"/chat?q=hello")
	var a answer
	if err := json.Unmarshal([]byte(body), &a); code != http.StatusOK || err != nil {
		t.Fatalf("/chat: %d %s", code, body)
	}
	if a.Answer != "Hello from the fake." || a.Provider != "openai" || a.Model != "gpt-4o-mini" {
		t.Fatalf("/chat answered %+v", a)
	}
	if code, status := readiness(t, base); code != http.StatusOK || status != "pass" {
		t.Fatalf("/readyz: %d %s", code, status)
	}
	if code, _ := get(t, base+"/livez"); code != http.StatusOK {
		t.Fatalf("/livez: %d", code)
	}
}

// steer sends one request to the fake's admin API, as the guide's curl commands do, and
// fails the test unless the fake applied it.
func steer(t *testing.T, fake *mocks.Server, method, path, body string) {
	t.Helper()
	req, err := http.NewRequest(method, fake.AdminURL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := fake.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
}

// chatFrom asks the service once and returns the provider that answered.
func chatFrom(t *testing.T, base string) string {
	t.Helper()
	code, body := get(t, base+"/chat?q=hello")
	var a answer
	if err := json.Unmarshal([]byte(body), &a); code != http.StatusOK || err != nil {
		t.Fatalf("/chat: %d %s", code, body)
	}
	return a.Provider
}

// The guide's second step: openai-down.json, sent to the running fake's admin API, answers
// every OpenAI call 503. Calls fall back to Anthropic and the logs say so; once OpenAI's
// circuit is open, readiness warns (the chain still serves) and liveness passes. A reset
// brings OpenAI back: after the circuit's break a call probes it and OpenAI serves again.
func TestFirstService_FallsBackWhileOpenAIIsDownAndComesBack(t *testing.T) {
	down, err := os.ReadFile("openai-down.json")
	if err != nil {
		t.Fatal(err)
	}
	fake := mocks.NewServer()
	defer fake.Close()
	setenv(t, fake)
	// The guide's 5 s break, shortened to 2 s: the checks below that read the circuit open
	// must all run within it, and they take tens of milliseconds (a 0.1 s break could run out
	// under them on a loaded machine: the status page then read half-open). The reset then
	// waits it out.
	t.Setenv("LLM__Resilience__CircuitBreakerMinDurationSeconds", "2")
	base, logs := service(t, devFiles)
	if p := chatFrom(t, base); p != "openai" {
		t.Fatalf("before the outage %s answered, want openai", p)
	}

	steer(t, fake, http.MethodPut, "script", string(down))
	for i := range 6 { // the default CircuitBreakerThreshold is 5 failed calls
		if p := chatFrom(t, base); p != "anthropic" {
			t.Fatalf("call %d during the outage: %s answered, want anthropic", i+1, p)
		}
	}
	for _, want := range []string{"falling back from openai to anthropic", "circuit for openai (gpt-4o-mini) opened"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the logs lack %q:\n%s", want, logs.String())
		}
	}
	code, status := readiness(t, base)
	if code != http.StatusOK || status != "warn" {
		t.Fatalf("/readyz with OpenAI's circuit open: %d %s", code, status)
	}
	if code, _ := get(t, base+"/livez"); code != http.StatusOK {
		t.Fatalf("/livez during the outage: %d", code)
	}
	_, body := get(t, base+"/readyz")
	if strings.Contains(body, "sk-fake") || strings.Contains(logs.String(), "sk-fake") {
		t.Fatal("a key reached the health output or the logs")
	}
	// The status page shows OpenAI's circuit open, and no key.
	code, page := get(t, base+"/debug/steady?format=json")
	if code != http.StatusOK || !strings.Contains(page, `"circuit": "open"`) || strings.Contains(page, "sk-fake") {
		t.Fatalf("/debug/steady during the outage: %d\n%s", code, page)
	}
	if code, html := get(t, base+"/debug/steady"); code != http.StatusOK || !strings.Contains(html, "openai") || strings.Contains(html, "sk-fake") {
		t.Fatalf("/debug/steady (HTML) during the outage: %d", code)
	}

	steer(t, fake, http.MethodPost, "reset", "")
	// The circuit's break is real time: ask until a call probes OpenAI, within a generous guard.
	for guard := time.Now().Add(30 * time.Second); chatFrom(t, base) != "openai"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(guard) {
			t.Fatalf("OpenAI did not serve again 30 s after the reset:\n%s", logs.String())
		}
	}
	if code, status := readiness(t, base); code != http.StatusOK || status != "pass" {
		t.Fatalf("/readyz once OpenAI serves again: %d %s", code, status)
	}
}

// The guide's deadline step: with every answer a minute away, the interactive policy's
// CallTimeoutSeconds ends the whole call — OpenAI's try, its fallback to Anthropic — and the
// service answers 504 with the kind timeout (client.WriteError). The deadline is shortened from the guide's 30 s
// (and each try's limit from 20 s) so the test takes seconds; the log names the deadline, not
// a try's own limit.
func TestFirstService_TheInteractiveDeadlineBoundsTheWholeCall(t *testing.T) {
	fake := mocks.NewServer()
	defer fake.Close()
	setenv(t, fake)
	t.Setenv("LLM__Policies__interactive__TimeoutSeconds", "2")
	t.Setenv("LLM__Policies__interactive__CallTimeoutSeconds", "3")
	base, logs := service(t, devFiles)

	steer(t, fake, http.MethodPut, "latency", `{"profile":{"firstTokenMs":60000}}`)
	code, body := get(t, base+"/chat?q=hello")
	if code != http.StatusGatewayTimeout ||
		strings.TrimSpace(body) != `{"error":{"kind":"timeout","message":"the language model did not answer in time"}}` {
		t.Fatalf("/chat with every answer a minute away: %d %s", code, body)
	}
	if want := "the call's deadline of 3s ran out"; !strings.Contains(logs.String(), want) {
		t.Errorf("the logs lack %q:\n%s", want, logs.String())
	}
	steer(t, fake, http.MethodPost, "reset", "")
	if p := chatFrom(t, base); p != "openai" && p != "anthropic" {
		t.Fatalf("after the reset %q answered", p)
	}
}

// A caller's mistake is the caller's: a prompt no provider would take is 400, never a 5xx,
// and nothing falls back.
func TestFirstService_ACallersMistakeIsABadRequest(t *testing.T) {
	fake := mocks.NewServer(mocks.WithScript(mocks.Status(http.StatusBadRequest)))
	defer fake.Close()
	setenv(t, fake)
	base, _ := service(t, devFiles)
	if code, body := get(t, base+"/chat?q=hello"); code != http.StatusBadRequest || !strings.Contains(body, "bad_request") {
		t.Fatalf("/chat: %d %s", code, body)
	}
	if n := fake.Journal().Len(); n != 1 {
		t.Fatalf("the fake saw %d requests, want 1: a bad request is neither retried nor sent elsewhere", n)
	}
}

// The README's first call: -ask loads the files, builds the client and asks once.
func TestFirstService_AsksOnce(t *testing.T) {
	fake := mocks.NewServer(mocks.WithReply("A circuit breaker stops calls to a failing service."))
	defer fake.Close()
	var out bytes.Buffer
	setenv(t, fake)
	if err := askOnce(context.Background(), &out, devFiles, "What is a circuit breaker?"); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.HasPrefix(got, "A circuit breaker stops calls to a failing service. (served by openai, model gpt-4o-mini,") {
		t.Fatalf("printed %q", got)
	}
}

// Without the keys' variables the load fails and names them, never a value.
func TestFirstService_NamesAMissingKeyVariable(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "") // empty counts as unset: the machine's own keys must not count
	t.Setenv("ANTHROPIC_API_KEY", "")
	err := askOnce(context.Background(), io.Discard, devFiles, "hi")
	if err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY") || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Fatalf("got %v", err)
	}
}

// The guide's second configuration: two OpenAI keys as deployments of one provider. When the
// server refuses the main key, the spare deployment serves, and Anthropic is not needed.
func TestFirstService_ASpareDeploymentServesWhenTheMainKeyIsRefused(t *testing.T) {
	fake := mocks.NewServer(mocks.WithAPIKey("sk-spare"), mocks.WithReply("From the spare key."))
	defer fake.Close()
	for k, v := range map[string]string{
		"OPENAI_API_KEY": "sk-revoked", "OPENAI_SPARE_KEY": "sk-spare", "ANTHROPIC_API_KEY": "sk-ant-unused",
		"LLM__Providers__openai-main__BaseURL":  fake.OpenAIBaseURL(),
		"LLM__Providers__openai-spare__BaseURL": fake.OpenAIBaseURL(),
		"LLM__Providers__anthropic__BaseURL":    fake.AnthropicBaseURL(),
	} {
		t.Setenv(k, v)
	}
	var out bytes.Buffer
	if err := askOnce(context.Background(), &out, []string{"appsettings.Deployments.json"}, "hi"); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.HasPrefix(got, "From the spare key. (served by openai/openai-spare,") {
		t.Fatalf("printed %q", got)
	}
}
