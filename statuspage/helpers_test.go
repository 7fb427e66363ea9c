package statuspage_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
	"github.com/steadyllm/steady/statuspage"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The sentinels the page must never show.
const (
	sentinelKey    = "sk-SENTINEL-statuspage-5f0e2c"
	sentinelPrompt = "PROMPT-SENTINEL-c71d"
	sentinelAnswer = "ANSWER-SENTINEL-93ab"
)

// policy is a quick policy for tests: no retries, a circuit that opens after two failures.
func policy() resilience.Options {
	o := resilience.DefaultOptions()
	o.RetryCount = 0
	o.RetryBudgetPercent = 0
	o.CircuitBreakerThreshold = 2
	o.TimeoutSeconds = 10
	o.StreamIdleTimeoutSeconds = 10
	return o
}

// openAIOn returns the factory of an OpenAI provider named name that talks to s with the
// sentinel key.
func openAIOn(name string, s *mocks.Server) client.ProviderFactory {
	return func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{Name: name, BaseURL: s.OpenAIBaseURL(), APIKey: sentinelKey, HTTPClient: hc,
			Model: "gpt-4o-mini"})
	}
}

func newClient(t testing.TB, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func newPage(t testing.TB, c *client.Client, opts ...statuspage.Option) *statuspage.Page {
	t.Helper()
	p, err := statuspage.New(c, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// serve mounts page at /debug/steady on a loopback server.
func serve(t testing.TB, page http.Handler) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/debug/steady", page)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func ask(c *client.Client) error {
	_, err := c.Chat(context.Background(), &providers.ChatRequest{
		Messages: []providers.Message{{Role: providers.RoleUser, Content: "Say " + sentinelPrompt}}})
	return err
}

// get fetches url and returns its status, headers and body.
func get(t testing.TB, url string) (int, http.Header, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// sse is an open stream of the page.
type sse struct {
	resp   *http.Response
	r      *bufio.Reader
	cancel context.CancelFunc
}

// message is one message of the stream.
type message struct {
	Now  int64  `json:"now"`
	HTML string `json:"html"`
}

func openStream(t testing.TB, url string) *sse {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s := &sse{resp: resp, r: bufio.NewReader(resp.Body), cancel: cancel}
	t.Cleanup(s.close)
	return s
}

func (s *sse) close() {
	s.cancel()
	_ = s.resp.Body.Close()
}

// next reads the next message, failing after a generous limit.
func (s *sse) next(t testing.TB) message {
	t.Helper()
	type result struct {
		m   message
		err error
	}
	done := make(chan result, 1)
	go func() {
		var data string
		for {
			line, err := s.r.ReadString('\n')
			if err != nil {
				done <- result{err: err}
				return
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case strings.HasPrefix(line, "data: "):
				data += line[len("data: "):]
			case line == "" && data != "":
				var m message
				err := json.Unmarshal([]byte(data), &m)
				done <- result{m: m, err: err}
				return
			}
		}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("reading the stream: %v", r.err)
		}
		return r.m
	case <-time.After(20 * time.Second):
		s.close()
		<-done
		t.Fatal("no message on the stream in 20 s")
	}
	return message{}
}

// waitFor polls cond until it holds, or fails after a generous limit.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// mustNotShow fails when text holds a secret, a prompt or an answer.
func mustNotShow(t testing.TB, where, text string, secrets ...string) {
	t.Helper()
	for _, s := range append([]string{sentinelKey, sentinelKey[:12], sentinelPrompt, sentinelAnswer}, secrets...) {
		if strings.Contains(text, s) {
			t.Errorf("%s shows %q", where, s)
		}
	}
}

func fmtStatus(code int) string { return fmt.Sprintf("%d %s", code, http.StatusText(code)) }
