package client_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
	"github.com/steadyllm/steady/providers/openai"
)

// An error envelope sent with 200 — to a call for a whole answer, or to a call for a stream —
// is an error that keeps the rate-limit snapshot of the headers it came with, on every wire.
func TestRateLimit_ErrorEnvelopesWithA200KeepTheSnapshot(t *testing.T) {
	for _, w := range []struct {
		name, body string
		build      func(srv string, hc *http.Client) (providers.Provider, error)
	}{
		{"chat", `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`,
			func(srv string, hc *http.Client) (providers.Provider, error) {
				return openai.New(openai.Config{Name: "p", BaseURL: srv + "/v1", APIKey: "sk-x", HTTPClient: hc, Model: "gpt-4o-mini"})
			}},
		{"responses", `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`,
			func(srv string, hc *http.Client) (providers.Provider, error) {
				return openai.New(openai.Config{Name: "p", API: openai.Responses, BaseURL: srv + "/v1", APIKey: "sk-x", HTTPClient: hc, Model: "gpt-4.1"})
			}},
		{"messages", `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`,
			func(srv string, hc *http.Client) (providers.Provider, error) {
				return anthropic.New(anthropic.Config{Name: "p", BaseURL: srv, APIKey: "sk-x", HTTPClient: hc, Model: "claude-haiku-4-5"})
			}},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
			rw.Header().Set("Content-Type", "application/json")
			rw.Header().Set("X-Ratelimit-Limit-Requests", "500")
			rw.Header().Set("X-Ratelimit-Remaining-Requests", "0")
			rw.Header().Set("Anthropic-Ratelimit-Requests-Limit", "500")
			rw.Header().Set("Anthropic-Ratelimit-Requests-Remaining", "0")
			_, _ = io.WriteString(rw, w.body)
		}))
		o := policy()
		o.RetryCount = 0
		c := newClient(t, client.WithProvider("p", o, func(hc *http.Client) (providers.Provider, error) { return w.build(srv.URL, hc) }))
		_, chatErr := c.Chat(context.Background(), hello())
		_, streamErr := c.ChatStream(context.Background(), hello())
		for op, err := range map[string]error{"Chat": chatErr, "ChatStream": streamErr} {
			e := asProviderError(t, err)
			if e.Kind != providers.KindRateLimited || e.StatusCode != http.StatusOK || e.RateLimit == nil ||
				e.RateLimit.Requests.Limit != 500 || e.RateLimit.Requests.Remaining != 0 {
				t.Errorf("%s %s: %v, rate limit %+v; want rate_limited with 0 of 500 requests left", w.name, op, err, e.RateLimit)
			}
		}
		srv.Close()
	}
}
