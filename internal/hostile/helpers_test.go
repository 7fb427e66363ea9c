package hostile_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	steady "github.com/steadyllm/steady"
	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/config"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

func TestMain(m *testing.M) {
	// A fine memory profile: allocated measures what a client holds with it (heldByProfile).
	runtime.MemProfileRate = 16 << 10
	goleak.VerifyTestMain(m)
}

// sentinel is every provider's API key. It has no sk- prefix and no other known shape, as an
// Azure key has none: only redaction of the configured value itself keeps it out of errors.
const sentinel = "Q7SENTINELx9f3b2c1d0e8f7a6b5c4d3e2"

// kind is a provider kind and how to build it against a server.
type kind struct {
	name    string // the config Type
	baseURL func(srv string) string
	build   func(name, baseURL string, hc *http.Client, lim providers.Limits) (providers.Provider, error)
}

var kinds = []kind{
	{"openai", func(s string) string { return s + "/v1" }, func(n, u string, hc *http.Client, l providers.Limits) (providers.Provider, error) {
		return openai.New(openai.Config{Name: n, Dialect: openai.OpenAI, BaseURL: u, APIKey: sentinel, HTTPClient: hc, Model: "gpt-4o-mini", Limits: l})
	}},
	{"azure", func(s string) string { return s }, func(n, u string, hc *http.Client, l providers.Limits) (providers.Provider, error) {
		return openai.New(openai.Config{Name: n, Dialect: openai.Azure, BaseURL: u, APIKey: sentinel, HTTPClient: hc, Model: "gpt-4o", Limits: l})
	}},
	{"openai-compatible", func(s string) string { return s + "/v1" }, func(n, u string, hc *http.Client, l providers.Limits) (providers.Provider, error) {
		return openai.New(openai.Config{Name: n, Dialect: openai.Compatible, BaseURL: u, APIKey: sentinel, HTTPClient: hc, Model: "llama", Limits: l})
	}},
	{"anthropic", func(s string) string { return s }, func(n, u string, hc *http.Client, l providers.Limits) (providers.Provider, error) {
		return anthropic.New(anthropic.Config{Name: n, BaseURL: u, APIKey: sentinel, HTTPClient: hc, Model: "claude-haiku-4-5", Limits: l})
	}},
	// OpenAI's Responses API: the openai dialect over steady's own wire for chat and streams
	// (embeddings still go through go-openai).
	{"responses", func(s string) string { return s + "/v1" }, func(n, u string, hc *http.Client, l providers.Limits) (providers.Provider, error) {
		return openai.New(openai.Config{Name: n, Dialect: openai.OpenAI, API: openai.Responses, BaseURL: u, APIKey: sentinel, HTTPClient: hc, Model: "gpt-4o-mini", Limits: l})
	}},
}

func (k kind) isAnthropic() bool { return k.name == "anthropic" }

// isResponses reports whether k speaks OpenAI's Responses API.
func (k kind) isResponses() bool { return k.name == "responses" }

// goOpenAIStreams reports whether k's streams are read by go-openai (chat completions).
func (k kind) goOpenAIStreams() bool { return !k.isAnthropic() && !k.isResponses() }

// policy is a fast, deterministic resilience policy: tiny delays, no jitter, no budget.
func policy() resilience.Options {
	o := resilience.DefaultOptions()
	o.RetryBaseDelaySeconds = 0.001
	o.RetryMaxDelaySeconds = 1
	o.RetryUseJitter = false
	o.RetryBudgetPercent = 0
	o.TimeoutSeconds = 10
	o.StreamIdleTimeoutSeconds = 10
	return o
}

// server starts a loopback server with handler h.
func server(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

// newClient builds a client with one provider of kind k, named "p", against srv.
func newClient(t *testing.T, k kind, srv string, o resilience.Options, lim providers.Limits, extra ...client.Option) *client.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	opts := append([]client.Option{
		client.WithBaseTransport(tr),
		client.WithProvider("p", o, func(hc *http.Client) (providers.Provider, error) {
			return k.build("p", k.baseURL(srv), hc, lim)
		}),
	}, extra...)
	c, err := client.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fromConfig builds a client with one provider of kind k against srv through config and
// steady.FromConfig, as an application would, the key in an environment variable.
func fromConfig(t *testing.T, k kind, srv string) *client.Client {
	t.Helper()
	model := map[string]string{"openai": "gpt-4o-mini", "azure": "gpt-4o", "openai-compatible": "llama", "anthropic": "claude-haiku-4-5",
		"responses": "gpt-4o-mini"}[k.name]
	dialect, api := k.name, ""
	if k.isResponses() {
		dialect, api = "openai", `"API":"responses",`
	}
	doc := fmt.Sprintf(`{"LLM":{"Resilience":{"RetryBaseDelaySeconds":0.001,"RetryUseJitter":false,"RetryBudgetPercent":0,
		"TimeoutSeconds":10},"Providers":{"p":{"Dialect":%q,%s"BaseURL":%q,"APIKeyEnv":"HOSTILE_TEST_KEY","Model":%q}}}}`,
		dialect, api, k.baseURL(srv), model)
	cfg, err := config.ParseWithEnv([]byte(doc), []string{"HOSTILE_TEST_KEY=" + sentinel})
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c, err := steady.FromConfig(cfg, client.WithBaseTransport(tr))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ask() *providers.ChatRequest {
	return &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: "hello"}}, MaxTokens: 16}
}

// chat runs a chat, a stream (read to its end) or an embedding through c, as op says.
func run(ctx context.Context, c *client.Client, op string) error {
	switch op {
	case "chat":
		_, err := c.Chat(ctx, ask())
		return err
	case "stream":
		st, err := c.ChatStream(ctx, ask())
		if err != nil {
			return err
		}
		defer st.Close()
		for _, err := range st.Deltas() {
			if err != nil {
				return err
			}
		}
		return nil
	case "embed":
		_, err := c.Embed(ctx, &providers.EmbedRequest{Inputs: []string{"a"}})
		return err
	}
	panic(op)
}

// ops are the operations a kind serves.
func ops(k kind) []string {
	if k.isAnthropic() {
		return []string{"chat", "stream"}
	}
	return []string{"chat", "stream", "embed"}
}

// asError asserts err is a *providers.Error and that no form of it holds the sentinel.
func asError(t *testing.T, err error) *providers.Error {
	t.Helper()
	var e *providers.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v is not a *providers.Error", err, err)
	}
	noSecret(t, "the error", err)
	return e
}

// noSecret fails if any printed form of v, or of anything in its error chain, holds the
// sentinel or a start of it.
func noSecret(t *testing.T, what string, v any) {
	t.Helper()
	var texts []string
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
		texts = append(texts, fmt.Sprintf(f, v))
	}
	if err, ok := v.(error); ok {
		for _, x := range unwrapAll(err) {
			texts = append(texts, x.Error(), fmt.Sprintf("%+v", x), fmt.Sprintf("%#v", x))
		}
	}
	for _, s := range texts {
		if strings.Contains(s, sentinel[:10]) {
			t.Fatalf("%s leaks the API key: %s", what, s)
		}
	}
}

// unwrapAll returns err and everything it wraps, depth first.
func unwrapAll(err error) []error {
	out := []error{err}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		if inner := u.Unwrap(); inner != nil {
			out = append(out, unwrapAll(inner)...)
		}
	case interface{ Unwrap() []error }:
		for _, inner := range u.Unwrap() {
			out = append(out, unwrapAll(inner)...)
		}
	}
	return out
}

// within fails the test if f takes longer than d, which only a broken bound can make it do.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not finish within %v", what, d)
	}
}
