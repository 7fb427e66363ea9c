package config

import (
	"reflect"
	"strings"
	"testing"
)

// windowsProvider is a provider of each dialect, by name, with what each needs to load.
var windowsProviders = map[string]string{
	DialectOpenAI:           `"Dialect": "openai", "APIKeyEnv": "K"`,
	DialectAzure:            `"Dialect": "azure", "BaseURL": "https://x.openai.azure.com", "APIKeyEnv": "K"`,
	DialectOpenAICompatible: `"Dialect": "openai-compatible", "BaseURL": "http://127.0.0.1:1/v1"`,
	DialectAnthropic:        `"Dialect": "anthropic", "APIKeyEnv": "K"`,
}

func TestParse_ContextWindowsAreKeysOfEveryDialect(t *testing.T) {
	for d, fields := range windowsProviders {
		cfg := parse(t, `{"LLM": {"Providers": {"p": {`+fields+`,
			"contextwindow": 128000, "ContextWindows": {"gpt-4.1": 1000000, "GPT-4.1": 5, "small": 0}}}}}`)
		p := cfg.Providers["p"]
		want := map[string]int{"gpt-4.1": 1_000_000, "GPT-4.1": 5, "small": 0} // model names are case-sensitive
		if p.ContextWindow != 128_000 || !reflect.DeepEqual(p.ContextWindows, want) {
			t.Errorf("%s: ContextWindow %d, ContextWindows %v", d, p.ContextWindow, p.ContextWindows)
		}
		if got := p.windowOf("small"); got != 0 {
			t.Errorf("%s: a model listed with 0 has window %d, want none", d, got)
		}
		if got := p.windowOf("other"); got != 128_000 {
			t.Errorf("%s: a model not listed has window %d, want ContextWindow", d, got)
		}
	}
	if p := parse(t, `{"LLM": {"Providers": {"p": {`+windowsProviders[DialectOpenAI]+`}}}}`).Providers["p"]; p.ContextWindow != 0 || p.ContextWindows != nil {
		t.Errorf("undeclared: ContextWindow %d, ContextWindows %v; want 0 and nil", p.ContextWindow, p.ContextWindows)
	}
}

// The environment sets the window, the windows entry by entry or as one JSON object, and they
// merge with the file's entry by entry.
func TestEnv_ContextWindows(t *testing.T) {
	doc := `{"LLM": {"Providers": {"p": {` + windowsProviders[DialectOpenAI] + `, "ContextWindow": 8000,
		"ContextWindows": {"gpt-4o": 128000, "gpt-4.1": 1000000}}}}}`
	cfg := parse(t, doc, "LLM__Providers__p__contextWINDOW=16000", "LLM__Providers__p__ContextWindows__o3= 200000 ",
		`LLM__Providers__p__ContextWindows={"gpt-4o": 64000, "o1": 100000}`)
	p := cfg.Providers["p"]
	want := map[string]int{"gpt-4o": 64_000, "gpt-4.1": 1_000_000, "o3": 200_000, "o1": 100_000}
	if p.ContextWindow != 16_000 || !reflect.DeepEqual(p.ContextWindows, want) {
		t.Errorf("ContextWindow %d, ContextWindows %v; want 16000 and %v", p.ContextWindow, p.ContextWindows, want)
	}
}

func TestContextWindows_ProblemsNameThePathTheValueAndTheRange(t *testing.T) {
	for _, tt := range []struct {
		doc, env, source, path string
		value                  any
		allowed                string
	}{
		{doc: `"ContextWindow": -1`, path: "LLM.Providers.p.ContextWindow", value: -1,
			allowed: "must be between 0 (none declared) and 100000000 tokens"},
		{doc: `"ContextWindow": 100000001`, path: "LLM.Providers.p.ContextWindow", value: 100000001,
			allowed: "must be between 0 (none declared) and 100000000"},
		{doc: `"ContextWindow": 1.5`, source: "input", path: "LLM.Providers.p.ContextWindow", value: 1.5,
			allowed: "must be a whole number"},
		{doc: `"ContextWindow": "128k"`, source: "input", path: "LLM.Providers.p.ContextWindow", value: "128k",
			allowed: "must be a whole number"},
		{doc: `"ContextWindows": {"gpt-4.1": -5}`, path: `LLM.Providers.p.ContextWindows["gpt-4.1"]`, value: -5,
			allowed: "must be between 0 (none declared) and 100000000"},
		{doc: `"ContextWindows": {"gpt-4o": "big"}`, source: "input", path: "LLM.Providers.p.ContextWindows.gpt-4o",
			value: "big", allowed: "must be a whole number"},
		{doc: `"ContextWindows": {"": 5}`, source: "input", path: `LLM.Providers.p.ContextWindows[""]`,
			allowed: "non-empty"},
		{doc: `"ContextWindows": 128000`, source: "input", path: "LLM.Providers.p.ContextWindows", value: 128000.0,
			allowed: "must be an object"},
		{doc: `"ContextWindows": {"gpt-4o": 128000}`, env: "LLM__Providers__p__ContextWindows__gpt-4o=lots",
			source: "LLM__Providers__p__ContextWindows__gpt-4o", path: "LLM.Providers.p.ContextWindows.gpt-4o", value: "lots",
			allowed: "must be a whole number"},
		{env: `LLM__Providers__p__ContextWindows=[128000]`, source: "LLM__Providers__p__ContextWindows",
			path: "LLM.Providers.p.ContextWindows", value: "[128000]", allowed: "must be an object of whole numbers"},
		{env: `LLM__Providers__p__ContextWindows={"gpt-4o": 1.5}`, source: "LLM__Providers__p__ContextWindows",
			path: "LLM.Providers.p.ContextWindows.gpt-4o", value: 1.5, allowed: "must be a whole number"},
		{env: "LLM__Providers__p__ContextWindow=NaN", source: "LLM__Providers__p__ContextWindow",
			path: "LLM.Providers.p.ContextWindow", value: "NaN", allowed: "must be a whole number"},
	} {
		doc := `{"LLM": {"Providers": {"p": {` + windowsProviders[DialectOpenAI]
		if tt.doc != "" {
			doc += ", " + tt.doc
		}
		doc += `}}}}`
		env := keys
		if tt.env != "" {
			env = append([]string{tt.env}, keys...)
		}
		cfg, err := ParseWithEnv([]byte(doc), env)
		p := problemAt(t, problemsOf(t, cfg, err), tt.path)
		if p.Source != tt.source || p.Value != tt.value || !strings.Contains(p.Allowed, tt.allowed) {
			t.Errorf("%s %s: problem %+v, want source %q, value %v and %q", tt.doc, tt.env, p, tt.source, tt.value, tt.allowed)
		}
	}
	// A model's window set both ways in the environment is reported, whatever the order.
	for _, env := range [][]string{
		{`LLM__Providers__p__ContextWindows={"o3": 1}`, "LLM__Providers__p__ContextWindows__o3=2"},
		{"LLM__Providers__p__ContextWindows__o3=2", `llm__providers__p__contextwindows={"o3": 1}`},
	} {
		cfg, err := ParseWithEnv([]byte(`{"LLM": {"Providers": {"p": {`+windowsProviders[DialectOpenAI]+`}}}}`), append(env, keys...))
		if p := problemAt(t, problemsOf(t, cfg, err), "LLM.Providers.p.ContextWindows.o3"); !strings.Contains(p.Allowed, "also set by") {
			t.Errorf("%v: problem %+v", env, p)
		}
	}
}

// The client keeps context windows per provider and model: the deployments of one provider
// must declare the same ones, as the client reads them.
func TestContextWindows_DeploymentsOfAProviderDeclareTheSame(t *testing.T) {
	group := func(east, west string) string {
		return `{"LLM": {"Providers": {
			"east": {"Dialect": "openai", "APIKeyEnv": "K", "DeploymentOf": "pool"` + east + `},
			"west": {"Dialect": "openai", "APIKeyEnv": "K", "DeploymentOf": "pool"` + west + `}}}}`
	}
	for _, ok := range [][2]string{
		{"", ""},
		{`, "ContextWindow": 128000`, `, "ContextWindow": 128000`},
		{`, "ContextWindows": {"gpt-4o": 128000, "gpt-4.1": 1000000}`, `, "ContextWindows": {"gpt-4.1": 1000000, "gpt-4o": 128000}`},
		{`, "ContextWindows": {"gpt-4o": 0}`, ""}, // none either way
	} {
		parse(t, group(ok[0], ok[1]))
	}
	for _, tt := range []struct {
		east, west, path string
		value            any
		allowed          string
	}{
		{`, "ContextWindow": 128000`, "", "LLM.Providers.west.ContextWindow", 0,
			`differs from the ContextWindow of "east" (128000), another deployment of "pool": the deployments of a provider share its context windows`},
		{`, "ContextWindow": 128000`, `, "ContextWindow": 200000`, "LLM.Providers.west.ContextWindow", 200000,
			`(128000)`},
		{`, "ContextWindows": {"gpt-4o": 128000}`, `, "ContextWindows": {"gpt-4o": 128000, "o3": 200000}`,
			"LLM.Providers.west.ContextWindows.o3", 200000, `the window for "o3" (200000) differs from that of "east" (none)`},
		{`, "ContextWindows": {"gpt-4o": 128000}`, `, "ContextWindows": {}`,
			"LLM.Providers.west.ContextWindows.gpt-4o", nil, `the window for "gpt-4o" (none) differs from that of "east" (128000)`},
	} {
		cfg, err := ParseWithEnv([]byte(group(tt.east, tt.west)), keys)
		ps := problemsOf(t, cfg, err)
		p := problemAt(t, ps, tt.path)
		if p.Value != tt.value || !strings.Contains(p.Allowed, tt.allowed) || len(ps) != 1 {
			t.Errorf("%s / %s: %v, want one problem with value %v and %q", tt.east, tt.west, (&Error{Problems: ps}), tt.value, tt.allowed)
		}
	}
}
