package openai_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
)

const time10ms = 10 * time.Millisecond

func TestErrors_HTTPStatusesMapToKinds(t *testing.T) {
	tests := []struct {
		name       string
		step       mocks.Step
		kind       providers.ErrorKind
		status     int
		retryAfter time.Duration
	}{
		{"400", mocks.Error(400, "invalid_request_error", "messages is malformed"), providers.KindBadRequest, 400, 0},
		{"401", mocks.Status(401), providers.KindAuth, 401, 0},
		{"403", mocks.Status(403), providers.KindAuth, 403, 0},
		{"404", mocks.Status(404), providers.KindNotFound, 404, 0},
		{"429 retry-after-ms", mocks.RateLimited(1500 * time.Millisecond), providers.KindRateLimited, 429, 1500 * time.Millisecond},
		{"429 quota", mocks.QuotaExceeded(), providers.KindQuotaExhausted, 429, 0},
		{"context too long", mocks.Step{Status: 400, ErrorType: "invalid_request_error", Code: "context_length_exceeded",
			Message: "This model's maximum context length is 128000 tokens."}, providers.KindContextTooLong, 400, 0},
		{"content filter", mocks.Step{Status: 400, ErrorType: "invalid_request_error", Code: "content_filter",
			Message: "The response was filtered."}, providers.KindContentFiltered, 400, 0},
		{"500", mocks.Status(500), providers.KindUnavailable, 500, 0},
		{"503", mocks.Status(503).WithMessage("Service Unavailable"), providers.KindUnavailable, 503, 0},
		// OpenAI's own 503 text, "The server is overloaded or not ready yet.", is an overload
		// for wire.Classify, which matches "overloaded" in the message.
		{"503 overloaded text", mocks.Status(503), providers.KindOverloaded, 503, 0},
		{"529", mocks.Overloaded(), providers.KindOverloaded, 529, 0},
	}
	for _, tt := range tests {
		for _, streamed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%t", tt.name, streamed), func(t *testing.T) {
				s := newServer(t, tt.step)
				p := newProvider(t, s)
				var err error
				if streamed {
					var st providers.Stream
					if st, err = p.ChatStream(context.Background(), ask("Hi")); st != nil {
						t.Fatal("a stream came back with an error status")
					}
				} else {
					_, err = p.Chat(context.Background(), ask("Hi"))
				}
				e := asError(t, err)
				if e.Kind != tt.kind || e.StatusCode != tt.status || e.RetryAfter != tt.retryAfter ||
					e.Provider != "openai" || e.Message == "" || !strings.HasPrefix(e.RequestID, "req-") {
					t.Fatalf("got %+v", e)
				}
				var apiErr *goopenai.APIError
				if !errors.As(err, &apiErr) {
					t.Fatalf("the go-openai error is not reachable: %v", err)
				}
			})
		}
	}
}

func TestErrors_EmbeddingErrorsAreTyped(t *testing.T) {
	s := newServer(t, mocks.RateLimited(2*time.Second))
	_, err := newProvider(t, s).Embed(context.Background(), &providers.EmbedRequest{Inputs: []string{"x"}})
	if e := asError(t, err); e.Kind != providers.KindRateLimited || e.RetryAfter != 2*time.Second {
		t.Fatalf("got %+v", e)
	}
}

func TestErrors_HTMLBodyIsNotTheMessage(t *testing.T) {
	html := "<html><body><h1>502 Bad Gateway</h1><p>prompt: my secret prompt</p></body></html>"
	rt := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 502, Status: "502 Bad Gateway", Request: req,
			Header: http.Header{"Content-Type": {"text/html"}, "Retry-After": {"3"}, "X-Request-Id": {"gw-1"}},
			Body:   io.NopCloser(strings.NewReader(html))}, nil
	})
	p, err := openai.New(openai.Config{APIKey: sentinel, Model: "gpt-4o", HTTPClient: &http.Client{Transport: rt}})
	if err != nil {
		t.Fatal(err)
	}
	for _, call := range []func() error{
		func() error { _, err := p.Chat(context.Background(), ask("Hi")); return err },
		func() error { _, err := p.ChatStream(context.Background(), ask("Hi")); return err },
	} {
		e := asError(t, call())
		if e.Kind != providers.KindUnavailable || e.StatusCode != 502 || e.RetryAfter != 3*time.Second ||
			e.RequestID != "gw-1" || strings.Contains(e.Error(), "secret prompt") || !strings.Contains(e.Message, "Bad Gateway") {
			t.Fatalf("got %+v: %v", e, e)
		}
		var reqErr *goopenai.RequestError
		if !errors.As(e, &reqErr) {
			t.Fatal("the go-openai RequestError is not reachable")
		}
	}
}

func TestErrors_PlainTextBodyIsShortened(t *testing.T) {
	rt := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 503, Status: "503", Request: req, Header: http.Header{},
			Body: io.NopCloser(strings.NewReader("upstream connect error\r\n" + strings.Repeat("x", 5000)))}, nil
	})
	p, _ := openai.New(openai.Config{Dialect: openai.Compatible, BaseURL: "http://gw.invalid/v1", Model: "m", HTTPClient: &http.Client{Transport: rt}})
	_, err := p.Chat(context.Background(), ask("Hi"))
	e := asError(t, err)
	if e.Kind != providers.KindUnavailable || len(e.Message) > 300 || !strings.HasPrefix(e.Message, "Service Unavailable: upstream connect error") ||
		strings.ContainsAny(e.Message, "\r\n") {
		t.Fatalf("message %q", e.Message)
	}
}

func TestErrors_APIKeyNeverAppears(t *testing.T) {
	echo := mocks.Error(401, "invalid_request_error", "Incorrect API key provided: "+sentinel+".")
	s := newServer(t, echo, echo)
	p := newProvider(t, s)
	_, err := p.Chat(context.Background(), ask("Hi"))
	e := asError(t, err) // checks every error in the chain
	if e.Kind != providers.KindAuth || !strings.Contains(e.Message, "[REDACTED]") {
		t.Fatalf("got %+v", e)
	}
	_, err = p.ChatStream(context.Background(), ask("Hi"))
	asError(t, err)
	if strings.Contains(fmt.Sprintf("%+v %#v", err, err), sentinel) {
		t.Fatal("the formatted error leaks the key")
	}

	cfg := openai.Config{Dialect: openai.Azure, BaseURL: "https://x.openai.azure.com", APIKey: sentinel, Model: "gpt-4o"}
	wrapped := struct {
		C  openai.Config
		PC *openai.Config
	}{cfg, &cfg}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		if out := fmt.Sprintf(verb, cfg) + fmt.Sprintf(verb, &cfg) + fmt.Sprintf(verb, wrapped); strings.Contains(out, sentinel) ||
			strings.Contains(out, fmt.Sprintf("%x", sentinel)) {
			t.Fatalf("%s leaks the key: %s", verb, out)
		}
	}
	if out := fmt.Sprintf("%+v", cfg); !strings.Contains(out, "APIKey:[REDACTED]") || !strings.Contains(out, "Dialect:azure") {
		t.Fatalf("%%+v = %s", out)
	}
}

func TestErrors_RefusedBeforeSendingIsBadRequest(t *testing.T) {
	s := newServer(t)
	p := newProvider(t, s)
	temp := 0.7
	reqs := map[string]*providers.ChatRequest{
		"no messages":                &providers.ChatRequest{Model: "gpt-4o"},
		"reasoning model with temp.": {Model: "o3-mini", Temperature: &temp, Messages: ask("Hi").Messages},
	}
	for name, req := range reqs {
		_, err := p.Chat(context.Background(), req)
		if e := asError(t, err); e.Kind != providers.KindBadRequest {
			t.Errorf("%s: got %+v", name, e)
		}
	}
	noModel, _ := openai.New(openai.Config{APIKey: sentinel, BaseURL: s.OpenAIBaseURL(), HTTPClient: s.Client()})
	if _, err := noModel.ChatStream(context.Background(), ask("Hi")); providers.KindOf(err) != providers.KindBadRequest {
		t.Errorf("no model: %v", err)
	}
	if s.Journal().Len() != 0 {
		t.Fatalf("%d requests were sent", s.Journal().Len())
	}
}

func TestErrors_TransportFailures(t *testing.T) {
	s := newServer(t, mocks.ResetConnection(), mocks.Malformed(), mocks.Stall())
	p := newProvider(t, s)

	_, err := p.Chat(context.Background(), ask("Hi"))
	if e := asError(t, err); e.Kind != providers.KindUnavailable || e.StatusCode != 0 {
		t.Errorf("reset: %+v", e)
	}
	_, err = p.Chat(context.Background(), ask("Hi"))
	if e := asError(t, err); e.Kind != providers.KindUnavailable || e.StatusCode != 200 {
		t.Errorf("malformed: %+v", e)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = s.Journal().Wait(ctx, 3); cancel() }()
	_, err = p.Chat(ctx, ask("Hi"))
	if e := asError(t, err); e.Kind != providers.KindCanceled || !errors.Is(err, context.Canceled) {
		t.Errorf("stall then cancel: %+v", e)
	}
}

func TestNew_RejectsIncompleteConfig(t *testing.T) {
	for name, cfg := range map[string]openai.Config{
		"no key":            {Dialect: openai.OpenAI},
		"azure no url":      {Dialect: openai.Azure, APIKey: sentinel},
		"compatible no url": {Dialect: openai.Compatible},
		"unknown dialect":   {Dialect: "bedrock", APIKey: sentinel, BaseURL: "http://x"},
	} {
		if _, err := openai.New(cfg); err == nil || strings.Contains(err.Error(), sentinel) {
			t.Errorf("%s: err %v", name, err)
		}
	}
}

// "code": null is no code, not "0" (go-openai decodes null as the number 0).
func TestErrors_NullCodeIsEmpty(t *testing.T) {
	for body, want := range map[string]string{
		`{"error":{"message":"slow down","type":"requests","param":null,"code":null}}`:     "",
		`{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`: "rate_limit_exceeded",
		`{"error":{"message":"slow down","type":"requests","code":429}}`:                   "429",
	} {
		p := fuzzProvider(t, 429, "application/json", []byte(body))
		_, err := p.Chat(context.Background(), ask("hi"))
		if e := asError(t, err); e.Code != want {
			t.Errorf("%s: Code %q, want %q", body, e.Code, want)
		}
	}
}
