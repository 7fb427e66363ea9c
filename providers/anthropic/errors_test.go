package anthropic_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
)

func TestErrors_HTTPStatusesMapToKinds(t *testing.T) {
	cases := []struct {
		name     string
		step     mocks.Step
		kind     providers.ErrorKind
		status   int
		errType  string
		retry    time.Duration
		temporal bool
	}{
		{"400 invalid request", mocks.Status(400), providers.KindBadRequest, 400, "invalid_request_error", 0, false},
		{"400 prompt too long", mocks.Error(400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"),
			providers.KindContextTooLong, 400, "invalid_request_error", 0, false},
		{"400 credit balance", mocks.Error(400, "invalid_request_error", "Your credit balance is too low to access the Anthropic API."),
			providers.KindQuotaExhausted, 400, "invalid_request_error", 0, false},
		{"401 authentication", mocks.Status(401), providers.KindAuth, 401, "authentication_error", 0, false},
		{"402 billing", mocks.Status(402), providers.KindQuotaExhausted, 402, "billing_error", 0, false},
		{"403 permission", mocks.Status(403), providers.KindAuth, 403, "permission_error", 0, false},
		{"413 too large", mocks.Status(413), providers.KindContextTooLong, 413, "request_too_large", 0, false},
		{"429 rate limit", mocks.RateLimited(1500 * time.Millisecond), providers.KindRateLimited, 429, "rate_limit_error", 1500 * time.Millisecond, true},
		{"429 spend limit", mocks.QuotaExceeded(), providers.KindQuotaExhausted, 429, "rate_limit_error", 0, false},
		{"500 api error", mocks.Status(500), providers.KindUnavailable, 500, "api_error", 0, true},
		{"529 overloaded", mocks.Overloaded(), providers.KindOverloaded, 529, "overloaded_error", 0, true},
	}
	for _, c := range cases {
		for _, streamed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%t", c.name, streamed), func(t *testing.T) {
				f := newFixture(t)
				f.s.Script(c.step)
				var err error
				if streamed {
					_, err = f.p.ChatStream(context.Background(), userRequest("hi"))
				} else {
					_, err = f.p.Chat(context.Background(), userRequest("hi"))
				}
				e := asError(t, err)
				if e.Kind != c.kind || e.StatusCode != c.status || e.Type != c.errType || e.RetryAfter != c.retry ||
					e.Temporary() != c.temporal || e.Message == "" || e.Provider != "anthropic" ||
					e.RequestID != "req_00000000000000000001" {
					t.Errorf("error %v:\n%+v", e, *e)
				}
				if strings.Contains(fmt.Sprintf("%v %+v %#v", e, e, e), secretKey) {
					t.Error("the error holds the API key")
				}
			})
		}
	}
}

func TestErrors_SpendLimitCarriesItsCode(t *testing.T) {
	f := newFixture(t)
	f.s.Script(mocks.QuotaExceeded())
	_, err := f.p.Chat(context.Background(), userRequest("hi"))
	if e := asError(t, err); e.Code != "enforced_spend_limit_reached" {
		t.Errorf("code %q", e.Code)
	}
}

func TestErrors_WrongKeyIsAuth(t *testing.T) {
	f := newFixtureWith(t, nil, mocks.WithAPIKey("another-key"))
	_, err := f.p.Chat(context.Background(), userRequest("hi"))
	if e := asError(t, err); e.Kind != providers.KindAuth || e.StatusCode != 401 {
		t.Errorf("error %v", e)
	}
}

func TestErrors_NonEnvelopeBodiesBecomeShortSafeMessages(t *testing.T) {
	html := "<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1>" + strings.Repeat("<p>nginx</p>", 500) + "</body></html>"
	long := "upstream said: " + strings.Repeat("blah ", 1000) + secretKey
	cases := []struct {
		name, contentType, body string
		status                  int
		kind                    providers.ErrorKind
		want                    string
	}{
		{"html page", "text/html", html, 502, providers.KindUnavailable, "Bad Gateway (HTML error page, "},
		{"plain text", "text/plain", "no healthy upstream\n", 503, providers.KindUnavailable, "Service Unavailable: no healthy upstream"},
		{"empty", "", "", 404, providers.KindNotFound, "Not Found"},
		{"long text echoing the key", "text/plain", long, 400, providers.KindBadRequest, "Bad Request: upstream said: blah"},
		{"JSON of another shape", "application/json", `{"message":"nope"}`, 500, providers.KindUnavailable, `Internal Server Error: {"message":"nope"}`},
		{"envelope echoing the key", "application/json",
			`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key ` + secretKey + `"}}`,
			401, providers.KindAuth, "invalid x-api-key [REDACTED]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			rec := &recorder{next: tr}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if c.contentType != "" {
					w.Header().Set("Content-Type", c.contentType)
				}
				w.Header().Set("X-Request-Id", "gw-1")
				w.WriteHeader(c.status)
				_, _ = io.WriteString(w, c.body)
			}))
			defer srv.Close()
			_, err := newProviderVia(t, srv.URL, rec).Chat(context.Background(), userRequest("hi"))
			e := asError(t, err)
			if e.Kind != c.kind || e.StatusCode != c.status || !strings.HasPrefix(e.Message, c.want) ||
				len(e.Message) > 250 || strings.ContainsAny(e.Message, "\n<") || e.RequestID != "gw-1" {
				t.Errorf("error %v: kind %q message %q", e, e.Kind, e.Message)
			}
			if strings.Contains(fmt.Sprintf("%v %+v", e, *e), secretKey) {
				t.Error("the error holds the API key")
			}
			rec.checkClosed(t)
		})
	}
}

func TestErrors_NoResponseIsUnavailableWithoutTheKey(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	_, err := newProvider(t, url, model).Chat(context.Background(), userRequest("hi"))
	e := asError(t, err)
	if e.Kind != providers.KindUnavailable || e.StatusCode != 0 || e.Err == nil {
		t.Errorf("error %v: kind %q", e, e.Kind)
	}
	if strings.Contains(fmt.Sprintf("%v %+v %#v", e, *e, e), secretKey) {
		t.Error("the error holds the API key")
	}
}

func TestErrors_MalformedAndCutJSONAreUnavailable(t *testing.T) {
	for _, step := range []mocks.Step{mocks.Malformed(), mocks.CutStream(0), mocks.TruncateStream(0)} {
		t.Run(step.String(), func(t *testing.T) {
			f := newFixture(t)
			f.s.Script(step)
			_, err := f.p.Chat(context.Background(), userRequest("hi"))
			if e := asError(t, err); e.Kind != providers.KindUnavailable || e.StatusCode != 200 || e.RequestID == "" {
				t.Errorf("error %v: kind %q", e, e.Kind)
			}
		})
	}
}
