package wire

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

func TestClassify(t *testing.T) {
	cases := []struct {
		status                 int
		errType, code, message string
		want                   providers.ErrorKind
	}{
		{429, "insufficient_quota", "insufficient_quota", "You exceeded your current quota", providers.KindQuotaExhausted},
		{429, "rate_limit_error", "", "Number of request tokens has exceeded your per-minute rate limit", providers.KindRateLimited},
		{400, "invalid_request_error", "", "Your credit balance is too low to access the Anthropic API", providers.KindQuotaExhausted},
		{400, "invalid_request_error", "context_length_exceeded", "This model's maximum context length is 128000 tokens", providers.KindContextTooLong},
		{400, "invalid_request_error", "", "prompt is too long: 210000 tokens > 200000 maximum", providers.KindContextTooLong},
		{413, "request_too_large", "", "Request exceeds the maximum allowed number of bytes", providers.KindContextTooLong},
		{400, "", "content_filter", "The response was filtered", providers.KindContentFiltered},
		{529, "overloaded_error", "", "Overloaded", providers.KindOverloaded},
		{503, "", "", "The engine is currently overloaded, please try again later", providers.KindOverloaded},
		{401, "authentication_error", "", "invalid x-api-key", providers.KindAuth},
		{403, "permission_error", "", "", providers.KindAuth},
		{408, "", "", "", providers.KindTimeout},
		{500, "api_error", "", "Internal server error", providers.KindUnavailable},
		{502, "", "", "", providers.KindUnavailable},
		{404, "not_found_error", "", "model: nope", providers.KindNotFound},
		{422, "", "", "", providers.KindBadRequest},
		{200, "", "", "", providers.KindUnknown},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d %s %s", c.status, c.errType, c.code), func(t *testing.T) {
			if got := Classify(c.status, c.errType, c.code, c.message); got != c.want {
				t.Fatalf("Classify(%d, %q, %q, %q) = %s, want %s", c.status, c.errType, c.code, c.message, got, c.want)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	cases := []struct {
		name string
		h    http.Header
		want time.Duration
	}{
		{"none", h(), 0},
		{"milliseconds win", h("retry-after-ms", "250", "Retry-After", "9"), 250 * time.Millisecond},
		{"fractional milliseconds", h("retry-after-ms", "1.5"), 1500 * time.Microsecond},
		{"seconds", h("Retry-After", "2"), 2 * time.Second},
		{"bad milliseconds fall back to seconds", h("retry-after-ms", "soon", "Retry-After", "3"), 3 * time.Second},
		{"negative", h("Retry-After", "-1"), 0},
		{"garbage", h("Retry-After", "later"), 0},
		{"date in the past", h("Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT"), 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := RetryAfter(c.h); got != c.want {
				t.Fatalf("RetryAfter = %v, want %v", got, c.want)
			}
		})
	}
	// An HTTP date an hour ahead: the wait is about an hour (the margin absorbs the clock).
	future := time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)
	if got := RetryAfter(h("Retry-After", future)); got < 58*time.Minute || got > time.Hour {
		t.Fatalf("RetryAfter(%s) = %v, want about an hour", future, got)
	}
}

func TestRequestID(t *testing.T) {
	for _, k := range []string{"x-request-id", "request-id", "apim-request-id"} {
		h := http.Header{}
		h.Set(k, "req_123")
		if got := RequestID(h); got != "req_123" {
			t.Fatalf("RequestID with %s = %q", k, got)
		}
	}
	if got := RequestID(http.Header{}); got != "" {
		t.Fatalf("RequestID of no header = %q", got)
	}
}

func TestBodyMessage(t *testing.T) {
	long := strings.Repeat("é", 150) // 300 bytes: cut at 200 without splitting a rune
	tests := []struct {
		status      int
		body, ctype string
		want        string
	}{
		{502, "", "", "Bad Gateway"},
		{502, "<!DOCTYPE html><html>secret</html>", "", "Bad Gateway (HTML error page, 34 bytes, not shown)"},
		{500, "oops", "text/html; charset=utf-8", "Internal Server Error (HTML error page, 4 bytes, not shown)"},
		{503, "no healthy upstream\n", "text/plain", "Service Unavailable: no healthy upstream"},
		{503, "line one\nline two\tend", "text/plain", "Service Unavailable: line one line two end"},
		{599, "x", "", "HTTP 599: x"},
		{500, long, "", "Internal Server Error: " + strings.Repeat("é", 100) + "…"},
	}
	for _, tt := range tests {
		if got := BodyMessage(tt.status, []byte(tt.body), tt.ctype); got != tt.want {
			t.Errorf("BodyMessage(%d, %q) = %q, want %q", tt.status, tt.body, got, tt.want)
		}
	}
}

// The pipeline's errors, and the caller's cancellation, are mapped where they are first seen.
func TestTransport_MapsEveryErrorOnce(t *testing.T) {
	x := NewErrors("openai", "sk-secret-key-123")
	bg := context.Background()
	for err, want := range map[error]providers.ErrorKind{
		errors.New("dial tcp 127.0.0.1:1: connection refused"):                                           providers.KindUnavailable,
		fmt.Errorf("Post %q: %w", "https://x/v1", &resilience.CircuitOpenError{RetryAfter: time.Second}): providers.KindCircuitOpen,
		&resilience.BulkheadRejectedError{}:                                                              providers.KindBulkheadFull,
		&resilience.TimeoutError{Limit: resilience.TimeoutTotal}:                                         providers.KindTimeout,
		&resilience.RedirectError{StatusCode: 302}:                                                       providers.KindRedirected,
	} {
		e := x.Transport(bg, err)
		if e.Kind != want || e.Provider != "openai" || !errors.Is(e, err) {
			t.Errorf("%v: %s, want %s", err, e.Kind, want)
		}
	}
	if e := x.Transport(bg, &resilience.CircuitOpenError{RetryAfter: time.Second}); e.RetryAfter != time.Second {
		t.Errorf("the circuit's hint: %v", e.RetryAfter)
	}
	if e := x.Transport(bg, &resilience.RedirectError{StatusCode: 308}); e.StatusCode != 308 {
		t.Errorf("the redirect's status: %d", e.StatusCode)
	}
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if e := x.Transport(ctx, &resilience.BulkheadRejectedError{}); e.Kind != providers.KindCanceled || !errors.Is(e, context.Canceled) {
		t.Errorf("the caller's cancellation: %v", e)
	}
	typed := &providers.Error{Kind: providers.KindAuth}
	if got := x.Transport(bg, fmt.Errorf("wrapped: %w", typed)); got != typed {
		t.Errorf("a *providers.Error is returned as it is")
	}
	if e := x.Transport(bg, errors.New("echo sk-secret-key-123")); strings.Contains(e.Error(), "secret") {
		t.Errorf("the key leaked: %v", e)
	}
	_ = http.StatusOK
}

// A timeout that strikes while a body is read reads timeout, named with what was under way;
// the caller's deadline, striking at the same place, reads canceled and never as ours.
func TestFailure_WhileReading(t *testing.T) {
	x := NewErrors("openai", "k")
	te := &resilience.TimeoutError{Limit: resilience.TimeoutStreamIdle, After: time.Second}
	e := x.Failure(context.Background(), "reading the stream", te)
	if e.Kind != providers.KindTimeout || !errors.Is(e, resilience.ErrTimeout) || !strings.HasPrefix(e.Message, "reading the stream: ") {
		t.Errorf("the pipeline's timeout: %s %q", e.Kind, e.Message)
	}
	if e := x.Failure(context.Background(), "reading the stream", errors.New("connection reset")); e.Kind != providers.KindUnavailable ||
		e.Message != "reading the stream: connection reset" {
		t.Errorf("a broken connection: %s %q", e.Kind, e.Message)
	}
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if e := x.Failure(ctx, "reading the stream", te); e.Kind != providers.KindCanceled || !errors.Is(e, context.DeadlineExceeded) {
		t.Errorf("the caller's deadline: %s %v", e.Kind, e)
	}
}
