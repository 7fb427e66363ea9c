package config

import (
	"strings"
	"testing"
)

// ActiveProbe is a key of every dialect, any case, "none" the same as unset; the environment
// sets it as any string.
func TestParse_ActiveProbe(t *testing.T) {
	for d, fields := range windowsProviders {
		for value, want := range map[string]string{`"chat"`: ProbeChat, `" Chat "`: ProbeChat, `"none"`: "", `""`: ""} {
			p := parse(t, `{"LLM": {"Providers": {"p": {`+fields+`, "activeprobe": `+value+`}}}}`).Providers["p"]
			if p.ActiveProbe != want {
				t.Errorf("%s: ActiveProbe %s read as %q, want %q", d, value, p.ActiveProbe, want)
			}
		}
	}
	if p := parse(t, `{"LLM": {"Providers": {"p": {`+windowsProviders[DialectOpenAI]+`}}}}`).Providers["p"]; p.ActiveProbe != "" {
		t.Errorf("unset: %q", p.ActiveProbe)
	}
	p := parse(t, `{"LLM": {"Providers": {"p": {`+windowsProviders[DialectOpenAI]+`}}}}`, "LLM__Providers__p__ActiveProbe=CHAT").Providers["p"]
	if p.ActiveProbe != ProbeChat {
		t.Errorf("from the environment: %q", p.ActiveProbe)
	}
}

// An unknown probe, or deployments of one provider that probe differently, name the key, the
// value and what is allowed.
func TestActiveProbe_ProblemsNameThePathTheValueAndTheRange(t *testing.T) {
	cfg, err := ParseWithEnv([]byte(`{"LLM": {"Providers": {"p": {`+windowsProviders[DialectOpenAI]+`, "ActiveProbe": "ping"}}}}`), keys)
	pr := problemAt(t, problemsOf(t, cfg, err), "LLM.Providers.p.ActiveProbe")
	if pr.Value != "ping" || !strings.Contains(pr.Allowed, `must be "chat"`) || !strings.Contains(pr.Allowed, `"none" or empty`) {
		t.Errorf("problem %+v", pr)
	}
	cfg, err = ParseWithEnv([]byte(`{"LLM": {"Providers": {"p": {`+windowsProviders[DialectOpenAI]+`, "ActiveProbe": 1}}}}`), keys)
	if pr := problemAt(t, problemsOf(t, cfg, err), "LLM.Providers.p.ActiveProbe"); !strings.Contains(pr.Allowed, "string") {
		t.Errorf("a number: %+v", pr)
	}
	group := `{"LLM": {"Providers": {
		"east": {"Dialect": "openai", "APIKeyEnv": "K", "DeploymentOf": "pool", "ActiveProbe": "chat"},
		"west": {"Dialect": "openai", "APIKeyEnv": "K", "DeploymentOf": "pool"}}}}`
	cfg, err = ParseWithEnv([]byte(group), keys)
	pr = problemAt(t, problemsOf(t, cfg, err), "LLM.Providers.west.ActiveProbe")
	if pr.Value != "" || !strings.Contains(pr.Allowed, `must equal the ActiveProbe of "east" ("chat"), another deployment of "pool"`) {
		t.Errorf("group problem %+v", pr)
	}
	parse(t, strings.Replace(group, `"DeploymentOf": "pool"}`, `"DeploymentOf": "pool", "ActiveProbe": "CHAT"}`, 1))
}
