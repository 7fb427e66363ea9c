package client_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/health"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

// wrongModel is an Anthropic provider named name configured with an OpenAI model, which its
// server (as Anthropic's does) answers 404 not_found_error.
func wrongModel(name string, s *mocks.Server) client.Option {
	return client.WithProvider(name, policy(), func(hc *http.Client) (providers.Provider, error) {
		return anthropic.New(anthropic.Config{Name: name, BaseURL: s.AnthropicBaseURL(), APIKey: sentinelKey, HTTPClient: hc,
			Model: "gpt-4o-mini"})
	})
}

// A fallback configured with a model its provider does not have fails every call through it
// with not_found, which opens no circuit (the request was the configuration's, not an outage).
// Operators must see it all the same: after its first failed call the route reads failing, with
// the provider's reason, in Deployments and in readiness (a warning with the primary serving,
// and the route's own check failing).
// (Readiness said "anthropic: 1 of 1 serving, pass".)
func TestViews_AFallbackWithAModelItsProviderDoesNotHaveIsVisible(t *testing.T) {
	gpt := mocks.NewServer(mocks.WithScript(mocks.Status(503).Always()))
	defer gpt.Close()
	claude := mocks.NewServer(mocks.WithModelScript("gpt-4o-mini",
		mocks.Error(404, "not_found_error", "model: gpt-4o-mini").Always()))
	defer claude.Close()
	o := policy()
	o.RetryCount = 0
	c := newClient(t, openAIProvider("openai", gpt, o), wrongModel("anthropic", claude),
		client.WithFallback("openai", "anthropic"))
	_, err := c.Chat(context.Background(), hello())
	if providers.KindOf(err) == "" || err == nil {
		t.Fatal("the call was served")
	}
	d := c.Deployments("anthropic")[0]
	var route client.RouteInfo
	for _, r := range d.Routes {
		if r.Model == "gpt-4o-mini" {
			route = r
		}
	}
	if !strings.Contains(route.Circuit.Failing, "not_found") || !strings.Contains(route.Circuit.Failing, "model: gpt-4o-mini") ||
		route.Circuit.State != resilience.CircuitClosed {
		t.Fatalf("the route: %+v, want failing with the provider's reason, its circuit closed", route.Circuit)
	}
	if d.Circuit.Serving != 0 || d.Circuit.Failing == "" || d.Own.State != resilience.CircuitClosed {
		t.Fatalf("the deployment: %+v (own %+v), want nothing serving, failing, no circuit open", d.Circuit, d.Own)
	}
	checker := health.NewChecker(health.WithFallback())
	checker.AddSet(c)
	rep := checker.Report()
	var check health.CheckResult
	for _, cr := range rep.Checks {
		if cr.Name == "anthropic:gpt-4o-mini" {
			check = cr
		}
	}
	if check.Status != health.StatusFail || !strings.Contains(check.Failing, "not_found") {
		t.Fatalf("the route's check %+v, want fail with its reason", check)
	}
	// The primary answers again: the chain serves, the failing route stays visible.
	gpt.Script(mocks.OK())
	if _, err := c.Chat(context.Background(), hello()); err != nil {
		t.Fatal(err)
	}
	if rep = checker.Report(); rep.Status != health.StatusWarn {
		t.Fatalf("readiness %s with the primary serving and the fallback failing, want warn", rep.Status)
	}
}

// A provider calling its vendor's own host with a model of another vendor's family is warned of
// at construction, each such route once; the same name on a compatible server, which may serve
// any vendor's models, is not. (Nothing warned.) No call is made.
func TestViews_AModelOfAnotherVendorOnItsOwnHostWarns(t *testing.T) {
	official := func(name, model string) client.Option {
		return client.WithProvider(name, policy(), func(hc *http.Client) (providers.Provider, error) {
			return anthropic.New(anthropic.Config{Name: name, APIKey: sentinelKey, HTTPClient: hc, Model: model})
		})
	}
	gpt := func(name, base, model string) client.Option {
		return client.WithProvider(name, policy(), func(hc *http.Client) (providers.Provider, error) {
			cfg := openai.Config{Name: name, APIKey: sentinelKey, HTTPClient: hc, Model: model, BaseURL: base}
			if base != "" {
				cfg.Dialect = openai.Compatible
			}
			return openai.New(cfg)
		})
	}
	c := newClient(t, official("claude", "gpt-4o-mini"), gpt("gpt", "", "claude-sonnet-4-5"),
		gpt("gateway", "http://127.0.0.1:1/v1", "claude-sonnet-4-5"), official("right", "claude-haiku-4-5"),
		client.WithModelMap("right", map[string]string{"smart": "o3"}))
	w := c.Warnings()
	if len(w) != 3 {
		t.Fatalf("%d warnings %q, want 3: claude's gpt-4o-mini, gpt's claude model, right's mapped o3", len(w), w)
	}
	for i, want := range [][2]string{{`"claude"`, `"gpt-4o-mini"`}, {`"gpt"`, `"claude-sonnet-4-5"`}, {`"right"`, `"o3"`}} {
		if !strings.Contains(w[i], want[0]) || !strings.Contains(w[i], want[1]) || strings.Contains(w[i], sentinelKey) {
			t.Errorf("warning %d %q, want it to name %s and %s", i, w[i], want[0], want[1])
		}
	}
}

// Verify checks every configured route with one cheap request and names those whose
// configuration fails, marking them failing before any call; a client whose routes all answer
// verifies clean.
func TestViews_VerifyNamesAMisconfiguredRoute(t *testing.T) {
	gpt := mocks.NewServer()
	defer gpt.Close()
	claude := mocks.NewServer(mocks.WithModelScript("gpt-4o-mini",
		mocks.Error(404, "not_found_error", "model: gpt-4o-mini").Always()))
	defer claude.Close()
	c := newClient(t, openAIProvider("openai", gpt, policy()), wrongModel("anthropic", claude),
		client.WithFallback("openai", "anthropic"))
	err := c.Verify(context.Background())
	var ve *client.VerifyError
	if !errors.As(err, &ve) || len(ve.Misconfigured) != 1 || ve.Misconfigured[0].Deployment != "anthropic" ||
		ve.Misconfigured[0].Model != "gpt-4o-mini" || !strings.Contains(err.Error(), "not_found") {
		t.Fatalf("Verify: %v, want the anthropic route for gpt-4o-mini named", err)
	}
	if errors.Is(err, client.ErrUnverified) {
		t.Fatal("a misconfigured route reads as merely unverified")
	}
	if d := c.Deployments("anthropic")[0]; d.Circuit.Failing == "" {
		t.Fatalf("after Verify the route does not read failing: %+v", d.Circuit)
	}
	good := newClient(t, openAIProvider("openai", gpt, policy()))
	if err := good.Verify(context.Background()); err != nil {
		t.Fatalf("a configuration that serves: %v", err)
	}
	if n := gpt.Journal().Len(); n != 2 {
		t.Fatalf("the server saw %d requests, want one per route per Verify", n)
	}
}

// A provider whose only model is open reads open on every view one level up — its circuit
// for a health check, its deployment — not its host's closed circuit, which stays visible on
// its own.
func TestViews_AProviderWhoseOnlyModelIsOpenReadsOpen(t *testing.T) {
	s := mocks.NewServer(mocks.WithScript(mocks.Status(503).Always()))
	defer s.Close()
	o := policy()
	o.RetryCount, o.CircuitBreakerThreshold = 0, 1
	c := newClient(t, openAIProvider("openai", s, o))
	_, _ = c.Chat(context.Background(), hello())
	if st := c.Circuits()["openai"].CircuitState(); st != resilience.CircuitOpen {
		t.Fatalf("Circuits()[openai].CircuitState() = %v, want open: its only model is", st)
	}
	d := c.Deployments("openai")[0]
	if d.Circuit.State != resilience.CircuitOpen || d.Circuit.NextProbeIn <= 0 || d.Own.State != resilience.CircuitClosed {
		t.Fatalf("Deployments: %+v (own %+v), want open with the next probe, its own circuit closed", d.Circuit, d.Own)
	}
}
