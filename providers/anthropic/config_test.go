package anthropic_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/steadyllm/steady/providers/anthropic"
)

func TestConfig_NeverPrintsTheAPIKey(t *testing.T) {
	cfg := anthropic.Config{Name: "claude", APIKey: secretKey, Model: model, HTTPClient: http.DefaultClient, Beta: []string{"b1"}}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T"} {
		for _, v := range []any{cfg, &cfg, []anthropic.Config{cfg}, struct{ C anthropic.Config }{cfg}} {
			out := fmt.Sprintf(verb, v)
			if strings.Contains(out, secretKey) || strings.Contains(strings.ToLower(out), strings.ToLower(fmt.Sprintf("%x", secretKey))) {
				t.Errorf("%s of %T shows the key: %s", verb, v, out)
			}
		}
	}
	if out := fmt.Sprintf("%+v", cfg); !strings.Contains(out, "APIKey:[REDACTED]") || !strings.Contains(out, "Model:"+model) {
		t.Errorf("%%+v = %s", out)
	}
	if out := fmt.Sprintf("%v", anthropic.Config{}); !strings.Contains(out, "APIKey: ") {
		t.Errorf("an unset key should print empty: %s", out)
	}
}

func TestNew_RejectsInvalidConfigsWithoutTheKey(t *testing.T) {
	cases := map[string]anthropic.Config{
		"no key":         {},
		"negative max":   {APIKey: secretKey, DefaultMaxTokens: -1},
		"not a http URL": {APIKey: secretKey, BaseURL: "api.anthropic.com"},
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := anthropic.New(cfg)
			if err == nil || p != nil {
				t.Fatalf("New(%v) = %v, %v", cfg, p, err)
			}
			if strings.Contains(err.Error(), secretKey) {
				t.Errorf("error holds the key: %v", err)
			}
		})
	}
}

func TestNew_AppliesDefaults(t *testing.T) {
	p, err := anthropic.New(anthropic.Config{APIKey: secretKey})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "anthropic" {
		t.Errorf("name %q", p.Name())
	}
}

func TestConfig_VersionBetaMaxTokensAndV1BaseURL(t *testing.T) {
	f := newFixtureWith(t, func(c *anthropic.Config) {
		c.BaseURL += "/v1/" // pasted with /v1: still reaches /v1/messages
		c.Version = "2099-01-01"
		c.Beta = []string{"feature-a", "feature-b"}
		c.DefaultMaxTokens = 77
		c.Name = "claude-eu"
	})
	resp, err := f.p.Chat(context.Background(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	last, _ := f.s.Journal().Last()
	if last.Path != "/v1/messages" || last.Header.Get("Anthropic-Version") != "2099-01-01" ||
		last.Header.Get("Anthropic-Beta") != "feature-a,feature-b" || !strings.Contains(string(last.Body), `"max_tokens":77`) {
		t.Errorf("%s %v %s", last.Path, last.Header, last.Body)
	}
	if resp.Provider != "claude-eu" || f.p.Name() != "claude-eu" {
		t.Errorf("provider %q", resp.Provider)
	}
}

func TestDefaultThinkingMode_AdaptiveFromVersion47(t *testing.T) {
	for model, want := range map[string]anthropic.ThinkingMode{
		"claude-opus-4-7":            anthropic.ThinkingAdaptive,
		"claude-opus-4-8-20261001":   anthropic.ThinkingAdaptive,
		"claude-sonnet-5":            anthropic.ThinkingAdaptive,
		"claude-fable-5-20260801":    anthropic.ThinkingAdaptive,
		"claude-opus-4-6":            anthropic.ThinkingBudget, // deprecated there, not refused
		"claude-sonnet-4-5-20250929": anthropic.ThinkingBudget,
		"claude-3-7-sonnet-20250219": anthropic.ThinkingBudget,
		"claude-haiku-4-5":           anthropic.ThinkingBudget,
		"my-proxy-alias":             anthropic.ThinkingBudget,
		"claude-opus-latest":         anthropic.ThinkingBudget,
	} {
		if got := anthropic.DefaultThinkingMode(model); got != want {
			t.Errorf("%s: %s, want %s", model, got, want)
		}
	}
}

func TestConfig_ThinkingModesAreChecked(t *testing.T) {
	_, err := anthropic.New(anthropic.Config{APIKey: "k", ThinkingModes: map[string]anthropic.ThinkingMode{"claude-x": "auto"}})
	if err == nil || !strings.Contains(err.Error(), `ThinkingModes["claude-x"] = "auto": must be "budget" or "adaptive"`) {
		t.Fatalf("%v", err)
	}
}
