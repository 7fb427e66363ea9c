package providers_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/providers"
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
			if got := providers.Classify(c.status, c.errType, c.code, c.message); got != c.want {
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
			if got := providers.RetryAfter(c.h); got != c.want {
				t.Fatalf("RetryAfter = %v, want %v", got, c.want)
			}
		})
	}
	// An HTTP date an hour ahead: the wait is about an hour (the margin absorbs the clock).
	future := time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)
	if got := providers.RetryAfter(h("Retry-After", future)); got < 58*time.Minute || got > time.Hour {
		t.Fatalf("RetryAfter(%s) = %v, want about an hour", future, got)
	}
}

func TestRequestID(t *testing.T) {
	for _, k := range []string{"x-request-id", "request-id", "apim-request-id"} {
		h := http.Header{}
		h.Set(k, "req_123")
		if got := providers.RequestID(h); got != "req_123" {
			t.Fatalf("RequestID with %s = %q", k, got)
		}
	}
	if got := providers.RequestID(http.Header{}); got != "" {
		t.Fatalf("RequestID of no header = %q", got)
	}
}

func TestTransportError(t *testing.T) {
	cause := errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	e := providers.TransportError("openai", cause)
	if e.Kind != providers.KindUnavailable || e.Provider != "openai" || !errors.Is(e, cause) {
		t.Fatalf("network failure: %+v", e)
	}
	canceled := providers.TransportError("openai", fmt.Errorf("Post: %w", context.Canceled))
	if canceled.Kind != providers.KindCanceled || !errors.Is(canceled, context.Canceled) {
		t.Fatalf("cancellation: %+v", canceled)
	}
	typed := &providers.Error{Provider: "claude", Kind: providers.KindOverloaded}
	if got := providers.TransportError("openai", fmt.Errorf("wrapped: %w", typed)); got != typed {
		t.Fatalf("an *Error in the chain must be returned as is, got %+v", got)
	}
}

func TestError_MessageKindsAndMatching(t *testing.T) {
	e := &providers.Error{Provider: "openai", Kind: providers.KindRateLimited, StatusCode: 429,
		Message: "slow down", RetryAfter: 1500 * time.Millisecond, RequestID: "req_9"}
	want := "openai: rate_limited (HTTP 429): slow down; retry after 1.5s [request req_9]"
	if e.Error() != want {
		t.Fatalf("Error() = %q, want %q", e.Error(), want)
	}
	wrapped := fmt.Errorf("calling: %w", e)
	if providers.KindOf(wrapped) != providers.KindRateLimited || providers.KindOf(errors.New("x")) != providers.KindUnknown {
		t.Fatal("KindOf does not see through wrapping")
	}
	cause := &providers.Error{Provider: "p", Kind: providers.KindUnavailable, Err: errors.New("connection reset")}
	if !strings.Contains(cause.Error(), "connection reset") {
		t.Fatalf("without a message the cause is shown: %q", cause.Error())
	}
	temporary := map[providers.ErrorKind]bool{
		providers.KindRateLimited: true, providers.KindOverloaded: true, providers.KindUnavailable: true,
		providers.KindTimeout: true, providers.KindCircuitOpen: true, providers.KindBulkheadFull: true,
		providers.KindStreamTruncated: true, providers.KindQuotaExhausted: false, providers.KindAuth: false,
		providers.KindBadRequest: false, providers.KindContextTooLong: false, providers.KindContentFiltered: false,
		providers.KindCanceled: false, providers.KindUnknown: false,
	}
	for k, want := range temporary {
		if got := (&providers.Error{Kind: k}).Temporary(); got != want {
			t.Errorf("%s: Temporary() = %v, want %v", k, got, want)
		}
	}
	if (providers.Usage{InputTokens: 3, OutputTokens: 4}).Total() != 7 {
		t.Fatal("Usage.Total")
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
		if got := providers.BodyMessage(tt.status, []byte(tt.body), tt.ctype); got != tt.want {
			t.Errorf("BodyMessage(%d, %q) = %q, want %q", tt.status, tt.body, got, tt.want)
		}
	}
}

func TestRedact(t *testing.T) {
	const key = "sk-SENTINEL-redact"
	if got := providers.Redact("bad key "+key+" and "+key, key); strings.Contains(got, key) || got != "bad key [REDACTED] and [REDACTED]" {
		t.Fatalf("Redact = %q", got)
	}
	if got := providers.Redact("nothing here", ""); got != "nothing here" {
		t.Fatalf("an empty secret changed the message: %q", got)
	}
}
