package anthropic_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
)

func TestCountTokens_CountsWhatTheAnswerBills(t *testing.T) {
	f := newFixtureWith(t, func(c *anthropic.Config) { c.Beta = []string{"token-counting-2024-11-01"} })
	req := &providers.ChatRequest{MaxTokens: 300, Stop: []string{"###"}, Messages: []providers.Message{
		{Role: providers.RoleSystem, Content: "You are terse."},
		{Role: providers.RoleUser, Content: "How many tokens is this question, exactly?"}}}
	n, err := f.p.CountTokens(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := f.p.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if n <= 0 || n != resp.Usage.InputTokens {
		t.Fatalf("counted %d, the answer billed %d input tokens", n, resp.Usage.InputTokens)
	}
	count := f.s.Journal().Requests()[0]
	if count.Path != "/v1/messages/count_tokens" || count.Header.Get("Anthropic-Beta") != "token-counting-2024-11-01" {
		t.Fatalf("%s %s, beta %q", count.Method, count.Path, count.Header.Get("Anthropic-Beta"))
	}
	// Only what makes the prompt: the fake, as the API, refuses max_tokens, stop_sequences…
	body := jsonOf(t, count.Body).(map[string]any)
	for _, k := range []string{"max_tokens", "stream", "stop_sequences"} {
		if _, ok := body[k]; ok {
			t.Errorf("the count sent %s", k)
		}
	}
	if body["model"] != model || body["system"] == nil {
		t.Errorf("count body %v", body)
	}
}

func TestCountTokens_TakesRawToolsAndProviderBlocks(t *testing.T) {
	f := newFixture(t)
	req := searchRequest("What is new?")
	resp, err := f.p.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.p.CountTokens(context.Background(), nextTurn(req, resp.Message, "And then?")); err != nil {
		t.Fatal(err)
	}
	body := sentBody(t, f.s, 1)
	if tools := body["tools"].([]any); len(tools) != 1 || len(assistantContent(t, body)) != 4 {
		t.Fatalf("count body %v", body)
	}
}

func TestCountTokens_FailsAsACallFails(t *testing.T) {
	for _, tc := range []struct {
		name string
		step mocks.Step
		kind providers.ErrorKind
	}{
		{"server error", mocks.Status(500), providers.KindUnavailable},
		{"overloaded", mocks.Overloaded(), providers.KindOverloaded},
		{"rate limited", mocks.RateLimited(time.Second), providers.KindRateLimited},
		{"malformed", mocks.Malformed(), providers.KindUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, mocks.WithRouteScript(mocks.RouteCountTokens, tc.step))
			_, err := f.p.CountTokens(context.Background(), userRequest("Hi"))
			if e := asError(t, err); e.Kind != tc.kind || strings.Contains(e.Error(), secretKey) {
				t.Fatalf("%#v", e)
			}
			// The route's script is the count's own: the chat is untouched.
			if _, err := f.p.Chat(context.Background(), userRequest("Hi")); err != nil {
				t.Fatal(err)
			}
		})
	}
	// A request the API would refuse is refused before sending.
	s := mocks.NewServer()
	defer s.Close()
	if _, err := newProvider(t, s.AnthropicBaseURL(), model).CountTokens(context.Background(), &providers.ChatRequest{}); providers.KindOf(err) != providers.KindBadRequest || s.Journal().Len() != 0 {
		t.Fatalf("%v", err)
	}
}

func TestCountTokens_AnAnswerWithoutACountIsUnavailable(t *testing.T) {
	for _, body := range []string{`{}`, `{"input_tokens":-3}`, `{"input_tokens":"12"}`, `{"input_tokens":1e12}`, `[1]`, `null`,
		`{"type":"error","error":{"type":"overloaded_error","message":"busy"}}`} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, body)
		}))
		_, err := newProvider(t, srv.URL, model).CountTokens(context.Background(), userRequest("Hi"))
		srv.Close()
		want := providers.KindUnavailable
		if strings.Contains(body, "overloaded") {
			want = providers.KindOverloaded
		}
		if providers.KindOf(err) != want {
			t.Errorf("%s: %v, want %s", body, err, want)
		}
	}
}

func TestCountTokens_ReadsAtMostMaxErrorBodyBytes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"input_tokens":12,"pad":"`+strings.Repeat("x", 4096)+`"}`)
	}))
	defer srv.Close()
	p, err := anthropic.New(anthropic.Config{BaseURL: srv.URL, APIKey: secretKey, Model: model,
		Limits: providers.Limits{MaxErrorBodyBytes: 1024}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.CountTokens(context.Background(), userRequest("Hi"))
	var le *providers.LimitError
	if e := asError(t, err); e.Kind != providers.KindUnavailable || !errors.As(err, &le) || le.Limit != "MaxErrorBodyBytes" {
		t.Fatalf("%#v", e)
	}
}

func TestConfig_CountTokensAndItsTimeout(t *testing.T) {
	p, err := anthropic.New(anthropic.Config{APIKey: secretKey, CountTokens: true})
	if err != nil {
		t.Fatal(err)
	}
	if on, d := p.PreflightCount(); !on || d != anthropic.DefaultCountTimeout {
		t.Fatalf("PreflightCount = %t, %v", on, d)
	}
	if on, _ := newProvider(t, "", model).PreflightCount(); on {
		t.Fatal("counting is on by default")
	}
	for _, d := range []time.Duration{-time.Second, anthropic.MaxCountTimeout + time.Millisecond} {
		_, err := anthropic.New(anthropic.Config{APIKey: secretKey, CountTimeout: d})
		if err == nil || !strings.Contains(err.Error(), "CountTimeout = "+d.String()) || !strings.Contains(err.Error(), "30s") {
			t.Errorf("CountTimeout %v: %v", d, err)
		}
	}
	var _ providers.TokenCounter = p
}
