package config

import (
	"reflect"
	"strings"
	"testing"
)

const mapDoc = `{"LLM": {"Providers": {
	"azure": {"Dialect": "azure", "BaseURL": "https://x.openai.azure.com", "APIKeyEnv": "K",
		"Deployments": {"gpt-4o": "file-gpt4o", "gpt-4.1": "file-gpt41"}},
	"pool-a": {"Dialect": "openai", "APIKeyEnv": "K", "DeploymentOf": "pool"}}}}`

// A map entry whose key has a hyphen or a dot ("gpt-4o") cannot be set with bash's export, nor
// on platforms that only allow letters, digits and _ in names; the map's own variable takes a
// JSON object instead, merged entry by entry like the variables of single entries.
func TestEnv_MapAsAJSONObject(t *testing.T) {
	for _, tt := range []struct {
		env  []string
		want map[string]string
	}{
		{[]string{`LLM__Providers__azure__Deployments={"gpt-4o": "prod-gpt4o"}`},
			map[string]string{"gpt-4o": "prod-gpt4o", "gpt-4.1": "file-gpt41"}},
		{[]string{`llm__providers__AZURE__deployments={"gpt-4o-mini":"mini", "gpt-4.1":"prod-41"}`},
			map[string]string{"gpt-4o": "file-gpt4o", "gpt-4.1": "prod-41", "gpt-4o-mini": "mini"}},
		{[]string{`LLM__Providers__azure__Deployments={}`},
			map[string]string{"gpt-4o": "file-gpt4o", "gpt-4.1": "file-gpt41"}},
		{[]string{`LLM__Providers__azure__Deployments={"o3": "prod-o3"}`, "LLM__Providers__azure__Deployments__o1=prod-o1"},
			map[string]string{"gpt-4o": "file-gpt4o", "gpt-4.1": "file-gpt41", "o3": "prod-o3", "o1": "prod-o1"}},
	} {
		cfg := parse(t, mapDoc, tt.env...)
		if got := cfg.Providers["azure"].Deployments; !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%v: Deployments = %v, want %v", tt.env, got, tt.want)
		}
	}
	cfg := parse(t, mapDoc, `LLM__Routing={"pool": "weighted"}`, `LLM__Providers__azure__ModelMap={"claude-sonnet-4-5": "gpt-4.1"}`)
	if cfg.Routing["pool"] != "weighted" || cfg.Providers["azure"].ModelMap["claude-sonnet-4-5"] != "gpt-4.1" {
		t.Errorf("Routing %v, ModelMap %v", cfg.Routing, cfg.Providers["azure"].ModelMap)
	}
}

func TestEnv_MapAsAJSONObjectProblems(t *testing.T) {
	for _, tt := range []struct {
		env, source, path, allowed string
	}{
		{`LLM__Providers__azure__Deployments=gpt-4o`, "LLM__Providers__azure__Deployments",
			"LLM.Providers.azure.Deployments", "must be an object of strings"},
		{`LLM__Providers__azure__Deployments=null`, "LLM__Providers__azure__Deployments",
			"LLM.Providers.azure.Deployments", "must be an object of strings"},
		{`LLM__Providers__azure__Deployments={"gpt-4o": 4}`, "LLM__Providers__azure__Deployments",
			`LLM.Providers.azure.Deployments.gpt-4o`, "must be a string"},
		{`LLM__Providers__azure__Deployments={"": "x"}`, "LLM__Providers__azure__Deployments",
			`LLM.Providers.azure.Deployments[""]`, "non-empty"},
		// Found by the checks of the merged result, and still named by the variable.
		{`LLM__Providers__azure__Deployments={"gpt-4o": ""}`, "LLM__Providers__azure__Deployments",
			"LLM.Providers.azure.Deployments.gpt-4o", "not be empty"},
	} {
		t.Run(tt.env, func(t *testing.T) {
			cfg, err := ParseWithEnv([]byte(mapDoc), append([]string{tt.env}, keys...))
			p := problemAt(t, problemsOf(t, cfg, err), tt.path)
			if p.Source != tt.source || !strings.Contains(p.Allowed, tt.allowed) {
				t.Errorf("problem %+v, want source %q and %q", p, tt.source, tt.allowed)
			}
		})
	}
	// An entry set both ways is reported, whatever the order of the environment.
	for _, env := range [][]string{
		{`LLM__Providers__azure__Deployments={"gpt-4o": "a"}`, "LLM__Providers__azure__Deployments__gpt-4o=b"},
		{"LLM__Providers__azure__Deployments__gpt-4o=b", `LLM__Providers__azure__DEPLOYMENTS={"gpt-4o": "a"}`},
	} {
		cfg, err := ParseWithEnv([]byte(mapDoc), append(env, keys...))
		p := problemAt(t, problemsOf(t, cfg, err), "LLM.Providers.azure.Deployments.gpt-4o")
		if !strings.Contains(p.Allowed, "also set by") {
			t.Errorf("%v: problem %+v", env, p)
		}
	}
}
