package observe_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/observe"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
)

// Pre-flight token counts are counted by outcome; one that fails is a warning naming the
// deployment and the kind, never the key.
func TestClient_TokenCountsAreRecorded(t *testing.T) {
	h := newHarness(t)
	s := mocks.NewServer(mocks.WithAPIKey(sentinelKey), mocks.WithRouteScript(mocks.RouteCountTokens, mocks.OK(), mocks.Status(500)))
	defer s.Close()
	o := fastPolicy()
	o.PaceTokensPerMinute = 100_000
	c := newClient(t, client.WithTelemetry(h.tel), client.WithProvider("claude", o, func(hc *http.Client) (providers.Provider, error) {
		return anthropic.New(anthropic.Config{Name: "claude", BaseURL: s.AnthropicBaseURL(), APIKey: sentinelKey, HTTPClient: hc,
			Model: "claude-haiku-4-5", CountTokens: true})
	}))
	for range 2 {
		if _, err := c.Chat(context.Background(), hello()); err != nil {
			t.Fatal(err)
		}
	}
	if pt := h.value(t, observe.MetricTokenCounts, observe.KeyProvider.String("claude"), observe.KeyOutcome.String(observe.OutcomeCounted)); pt.sum != 1 {
		t.Fatalf("counted %v", pt.sum)
	}
	if pt := h.value(t, observe.MetricTokenCounts, observe.KeyProvider.String("claude"), observe.KeyOutcome.String(string(providers.KindUnavailable))); pt.sum != 1 {
		t.Fatalf("unavailable %v", pt.sum)
	}
	var warned int
	for _, r := range h.records(t) {
		if strings.HasPrefix(r.str("msg"), "token count for claude failed") {
			warned++
			if r.str(observe.LogErrorKind) != string(providers.KindUnavailable) || r.str("level") != "WARN" {
				t.Errorf("record %v", r)
			}
		}
	}
	if warned != 1 {
		t.Fatalf("%d warnings", warned)
	}
	assertNoSecrets(t, "logs", h.logs.String())
}
