package config

import (
	"strings"
	"testing"
)

// A configuration file that holds no LLM section, or holds it under a misspelt name, used to
// load as the defaults with no provider: the mistake only showed when the first call failed.
func TestLoad_FileWithoutLLMSectionIsAnError(t *testing.T) {
	for _, tt := range []struct {
		name, doc string
		path      string // the key the problem points at, "" for the whole file
		want      string // in Allowed
	}{
		{"other sections only", `{"Logging": {"LogLevel": {"Default": "Information"}}, "AllowedHosts": "*"}`, "", "no LLM section found"},
		{"empty object", `{}`, "", "no LLM section found"},
		{"null document", `null`, "", "no LLM section found"},
		{"LMM", `{"LMM": {"Providers": {}}}`, "LMM", "did you mean LLM?"},
		{"LLMs", `{"LLMs": {"Resilience": {"RetryCount": 1}}}`, "LLMs", "did you mean LLM?"},
		{"Llm_", `{"Llm_": {}}`, "Llm_", "did you mean LLM?"},
		{"LLMSettings", `{"Logging": {}, "LLMSettings": {"Fallback": []}}`, "LLMSettings", "did you mean LLM?"},
		{"settings without their section", `{"Providers": {"openai": {"Dialect": "openai"}}}`, "Providers", "did you mean LLM.Providers?"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, "appsettings.json", tt.doc)
			cfg, err := LoadWithEnv(keys, path)
			ps := problemsOf(t, cfg, err)
			if len(ps) != 1 {
				t.Fatalf("want one problem, got %v", err)
			}
			p := ps[0]
			if p.Source != path || p.Path != tt.path || !strings.Contains(p.Allowed, tt.want) {
				t.Errorf("problem %+v: want source %s, path %q, %q", p, path, tt.path, tt.want)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "no LLM section found") {
				t.Errorf("the message does not name the file and say what is missing: %v", err)
			}
		})
	}
}

// The name of the section is case-insensitive like every key.
func TestLoad_LLMSectionInAnyCase(t *testing.T) {
	for _, doc := range []string{`{"llm": {}}`, `{"Llm": {"Resilience": {"RetryCount": 1}}}`, `{"Logging": {}, "LLM": {}}`} {
		if _, err := LoadWithEnv(keys, writeFile(t, "appsettings.json", doc)); err != nil {
			t.Errorf("%s: %v", doc, err)
		}
	}
}

// An overlay file (appsettings.Production.json) may leave the LLM section to another file,
// but a misspelt section that holds LLM settings is not silently dropped.
func TestLoad_OverlayFiles(t *testing.T) {
	base := writeFile(t, "appsettings.json", `{"LLM": {"Resilience": {"RetryCount": 2}}}`)
	for _, tt := range []struct {
		name, doc string
		path      string // "" when the overlay is fine
	}{
		{"other sections only", `{"Logging": {"LogLevel": {"Default": "Warning"}}}`, ""},
		{"empty", `{}`, ""},
		{"a section of its own near the name", `{"ML": {"Model": "churn-v2"}, "LLC": {"Name": "Acme"}}`, ""},
		{"LMM with settings", `{"LMM": {"Resilience": {"RetryCount": 9}}}`, "LMM"},
		{"llms with settings", `{"llms": {"providers": {}}}`, "llms"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			overlay := writeFile(t, "appsettings.Production.json", tt.doc)
			cfg, err := LoadWithEnv(keys, base, overlay)
			if tt.path == "" {
				if err != nil || cfg.Resilience.RetryCount != 2 {
					t.Fatalf("RetryCount %v, %v: want the base file's 2", cfg, err)
				}
				return
			}
			p := problemAt(t, problemsOf(t, cfg, err), tt.path)
			if p.Source != overlay || !strings.Contains(p.Allowed, "did you mean LLM?") {
				t.Errorf("problem %+v: want it in %s with a suggestion", p, overlay)
			}
		})
	}
}

// Parse holds its input to the rule of a file; an LLM__ variable is enough of a section.
func TestParse_DocumentWithoutLLMSection(t *testing.T) {
	cfg, err := ParseWithEnv([]byte(`{}`), nil)
	if p := problemsOf(t, cfg, err)[0]; p.Source != "input" || !strings.Contains(p.Allowed, "no LLM section found") {
		t.Errorf("problem %+v", p)
	}
	cfg, err = ParseWithEnv([]byte(`{}`), []string{"LLM__Resilience__RetryCount=5"})
	if err != nil || cfg.Resilience.RetryCount != 5 {
		t.Errorf("with an LLM__ variable: %+v, %v", cfg, err)
	}
}

// Load with no file reads the environment only: it needs at least one LLM__ variable.
func TestLoad_NoFileNeedsAnLLMVariable(t *testing.T) {
	cfg, err := LoadWithEnv([]string{"PATH=/usr/bin", "HOME=/root"})
	if p := problemsOf(t, cfg, err)[0]; !strings.Contains(p.Allowed, "no LLM section found") ||
		!strings.Contains(p.Allowed, "LLM__") {
		t.Errorf("problem %+v", p)
	}
	cfg, err = LoadWithEnv([]string{"llm__resilience__retrycount=4"})
	if err != nil || cfg.Resilience.RetryCount != 4 {
		t.Errorf("with an LLM__ variable: %+v, %v", cfg, err)
	}
}

// A variable whose prefix is a near miss of LLM__ and that names an LLM setting is reported,
// not ignored like the rest of the environment.
func TestLoad_MisspeltVariablePrefixIsAnError(t *testing.T) {
	env := append([]string{"LMM__Providers__openai__Model=gpt-4o", "ML__Model=churn-v2", "LLC__Name=Acme"}, keys...)
	cfg, err := ParseWithEnv([]byte(`{"LLM": {}}`), env)
	ps := problemsOf(t, cfg, err)
	if len(ps) != 1 || ps[0].Source != "LMM__Providers__openai__Model" ||
		!strings.Contains(ps[0].Allowed, "did you mean LLM__Providers__openai__Model?") {
		t.Errorf("want one problem for the misspelt variable, got %v", err)
	}
}
