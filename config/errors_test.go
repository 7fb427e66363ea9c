package config

import (
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// provider is a valid provider object to build documents with.
const provider = `{"Type": "openai", "APIKeyEnv": "OPENAI_API_KEY"}`

func TestParse_Problems(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		path    string // the JSON path of the problem
		value   string // how the value found is shown; "" when it must not be shown
		allowed string // a substring of what is allowed
	}{
		// unknown keys, near misses
		{"typo in Resilience", `{"LLM": {"Resilience": {"RetryCont": 5}}}`,
			"LLM.Resilience.RetryCont", "", "did you mean RetryCount?"},
		{"typo in a section", `{"LLM": {"Resiliance": {}}}`,
			"LLM.Resiliance", "", "did you mean Resilience?"},
		{"typo in a policy", `{"LLM": {"Policies": {"p": {"TimeoutSecs": 1}}}}`,
			"LLM.Policies.p.TimeoutSecs", "", "did you mean TimeoutSeconds?"},
		{"typo in a provider", `{"LLM": {"Providers": {"p": {"Type": "openai", "APIKeyEnv": "K", "Modle": "x"}}}}`,
			"LLM.Providers.p.Modle", "", "did you mean Model?"},
		{"resilience field one level too high", `{"LLM": {"RetryCount": 1}}`,
			"LLM.RetryCount", "", "did you mean Resilience.RetryCount?"},
		{"resilience field in a provider", `{"LLM": {"Providers": {"p": {"Type": "openai", "APIKeyEnv": "K", "TimeoutSeconds": 1}}}}`,
			"LLM.Providers.p.TimeoutSeconds", "", "did you mean Resilience.TimeoutSeconds?"},
		{"no suggestion when nothing is close", `{"LLM": {"Resilience": {"Banana": 1}}}`,
			"LLM.Resilience.Banana", "", "unknown key"},
		{"the same key in two cases", `{"LLM": {"Resilience": {"RetryCount": 1, "retrycount": 2}}}`,
			"LLM.Resilience.retrycount", "", "case-insensitive"},
		{"the same provider in two cases", `{"LLM": {"Providers": {"a": ` + provider + `, "A": ` + provider + `}}}`,
			"LLM.Providers.a", "", "declared twice"},
		{"empty provider name", `{"LLM": {"Providers": {"": ` + provider + `}}}`,
			`LLM.Providers[""]`, `""`, "must not be empty"},
		{"control character in a name", `{"LLM": {"Policies": {"a\u001fb": {}}}}`,
			`LLM.Policies["a\x1fb"]`, `"a\x1fb"`, "control characters"},

		// wrong types
		{"string for a number", `{"LLM": {"Resilience": {"RetryCount": "5"}}}`,
			"LLM.Resilience.RetryCount", `"5"`, "whole number"},
		{"fraction for a whole number", `{"LLM": {"Resilience": {"RetryCount": 2.5}}}`,
			"LLM.Resilience.RetryCount", "2.5", "whole number"},
		{"huge whole number", `{"LLM": {"Resilience": {"BulkheadMaxQueue": 1e300}}}`,
			"LLM.Resilience.BulkheadMaxQueue", "1e+300", "whole number"},
		{"bad duration", `{"LLM": {"Resilience": {"TimeoutSeconds": "soon"}}}`,
			"LLM.Resilience.TimeoutSeconds", `"soon"`, `Go duration string ("750ms")`},
		{"number string in a seconds field", `{"LLM": {"Resilience": {"TimeoutSeconds": "30"}}}`,
			"LLM.Resilience.TimeoutSeconds", `"30"`, "number of seconds"},
		{"string for a bool", `{"LLM": {"Resilience": {"RetryUseJitter": "yes"}}}`,
			"LLM.Resilience.RetryUseJitter", `"yes"`, "true or false"},
		{"null", `{"LLM": {"Resilience": {"TimeoutSeconds": null}}}`,
			"LLM.Resilience.TimeoutSeconds", "null", "number of seconds"},
		{"bad list element", `{"LLM": {"Resilience": {"RetryableStatusCodes": [429, "503"]}}}`,
			"LLM.Resilience.RetryableStatusCodes[1]", `"503"`, "whole number"},
		{"object for a list", `{"LLM": {"Fallback": {"a": 1}}}`,
			"LLM.Fallback", "an object", "list of strings"},
		{"list for an object", `{"LLM": {"Resilience": [1]}}`,
			"LLM.Resilience", "a list", "must be an object"},
		{"number for a string", `{"LLM": {"Providers": {"p": {"Type": "openai", "APIKeyEnv": "K", "Model": 4}}}}`,
			"LLM.Providers.p.Model", "4", "must be a string"},
		{"LLM is not an object", `{"LLM": "yes"}`, "LLM", `"yes"`, "must be an object"},

		// ranges and relations, from Options.Validate
		{"range", `{"LLM": {"Resilience": {"RetryCount": 50}}}`,
			"LLM.Resilience.RetryCount", "50", "between 0 and 20"},
		{"relation", `{"LLM": {"Resilience": {"RetryBaseDelaySeconds": 10, "RetryMaxDelaySeconds": 5}}}`,
			"LLM.Resilience.RetryMaxDelaySeconds", "5", "at least RetryBaseDelaySeconds"},
		{"range in a policy", `{"LLM": {"Policies": {"p": {"BulkheadMaxConcurrency": 0}}}}`,
			"LLM.Policies.p.BulkheadMaxConcurrency", "0", "between 1 and"},
		{"relation in a provider", `{"LLM": {"Providers": {"p": {"Type": "openai", "APIKeyEnv": "K",
			"Resilience": {"AttemptTimeoutSeconds": "1m"}}}}}`,
			"LLM.Providers.p.Resilience.AttemptTimeoutSeconds", "60", "below TimeoutSeconds"},
		{"bad list element value", `{"LLM": {"Resilience": {"RetryableStatusCodes": [200]}}}`,
			"LLM.Resilience.RetryableStatusCodes[0]", "200", "between 400 and 599"},
		{"call timeout range", `{"LLM": {"Resilience": {"CallTimeoutSeconds": -1}}}`,
			"LLM.Resilience.CallTimeoutSeconds", "-1", "between 0 and 86400"},
		{"call timeout range in a policy", `{"LLM": {"Policies": {"p": {"CallTimeoutSeconds": "25h"}}}}`,
			"LLM.Policies.p.CallTimeoutSeconds", "90000", "between 0 and 86400"},
		{"backoff name", `{"LLM": {"Resilience": {"RetryBackoff": "fibonacci"}}}`,
			"LLM.Resilience.RetryBackoff", `"fibonacci"`, `"exponential"`},

		// providers
		{"missing type", `{"LLM": {"Providers": {"p": {"APIKeyEnv": "K"}}}}`,
			"LLM.Providers.p.Dialect", "", "is required"},
		{"unknown type", `{"LLM": {"Providers": {"p": {"Type": "anthropics", "APIKeyEnv": "K"}}}}`,
			"LLM.Providers.p.Dialect", `"anthropics"`, "did you mean anthropic?"},
		{"missing APIKeyEnv", `{"LLM": {"Providers": {"p": {"Type": "anthropic"}}}}`,
			"LLM.Providers.p.APIKeyEnv", "", "is required"},
		{"azure needs a BaseURL", `{"LLM": {"Providers": {"p": {"Type": "azure", "APIKeyEnv": "K"}}}}`,
			"LLM.Providers.p.BaseURL", "", "is required"},
		{"relative BaseURL", `{"LLM": {"Providers": {"p": {"Type": "openai", "APIKeyEnv": "K", "BaseURL": "api/v1"}}}}`,
			"LLM.Providers.p.BaseURL", "", "absolute http or https URL"}, // URLs are never repeated
		{"APIVersion outside azure", `{"LLM": {"Providers": {"p": {"Type": "openai", "APIKeyEnv": "K", "APIVersion": "1"}}}}`,
			"LLM.Providers.p.APIVersion", `"1"`, "only used with"},

		// references
		{"unknown policy", `{"LLM": {"Policies": {"batch": {}}, "Providers": {"p": {"Type": "openai", "APIKeyEnv": "K", "Policy": "bacth"}}}}`,
			"LLM.Providers.p.Policy", `"bacth"`, "did you mean batch?"},
		{"unknown fallback", `{"LLM": {"Providers": {"openai": ` + provider + `}, "Fallback": ["openia"]}}`,
			"LLM.Fallback[0]", `"openia"`, "did you mean openai?"},
		{"fallback twice", `{"LLM": {"Providers": {"openai": ` + provider + `}, "Fallback": ["openai", "OpenAI"]}}`,
			"LLM.Fallback[1]", `"OpenAI"`, "listed twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ParseWithEnv([]byte(tt.doc), keys)
			p := problemAt(t, problemsOf(t, cfg, err), tt.path)
			if tt.value == "" && p.Value != nil {
				t.Errorf("value shown: %v", p.Value)
			}
			if tt.value != "" && (p.Value == nil || showValue(p.Value) != tt.value) {
				t.Errorf("value %v, want %s", p.Value, tt.value)
			}
			if !strings.Contains(p.Allowed, tt.allowed) {
				t.Errorf("allowed %q, want it to contain %q", p.Allowed, tt.allowed)
			}
			if !strings.Contains(err.Error(), tt.path) {
				t.Errorf("error %q does not name %s", err, tt.path)
			}
		})
	}
}

func TestParse_ReportsEveryProblemAtOnce(t *testing.T) {
	cfg, err := ParseWithEnv([]byte(`{"LLM": {
		"Resilience": {"RetryCont": 1, "TimeoutSeconds": "x", "BulkheadMaxConcurrency": 0},
		"Providers": {"p": {"Type": "openai", "APIKey": "sk-live-123"}},
		"Fallback": ["q"]}}`), nil)
	ps := problemsOf(t, cfg, err)
	for _, path := range []string{"LLM.Resilience.RetryCont", "LLM.Resilience.TimeoutSeconds",
		"LLM.Resilience.BulkheadMaxConcurrency", "LLM.Providers.p.APIKey", "LLM.Providers.p.APIKeyEnv",
		"LLM.Fallback[0]"} {
		problemAt(t, ps, path)
	}
	if len(ps) != 6 {
		t.Errorf("%d problems, want 6:\n%v", len(ps), err)
	}
}

func TestParse_InheritedProblemsAreReportedOnce(t *testing.T) {
	cfg, err := ParseWithEnv([]byte(`{"LLM": {"Resilience": {"RetryCount": 99},
		"Policies": {"p": {}}, "Providers": {"a": {"Type": "openai", "APIKeyEnv": "K", "Policy": "p"}}}}`), keys)
	ps := problemsOf(t, cfg, err)
	if len(ps) != 1 || ps[0].Path != "LLM.Resilience.RetryCount" {
		t.Errorf("got %v, want the one problem at LLM.Resilience.RetryCount", err)
	}
}

func TestParse_LiteralAPIKeyIsRefusedWithoutRepeatingIt(t *testing.T) {
	const secret = "sk-proj-SECRET0123456789"
	for _, key := range []string{"APIKey", "ApiKey", "apiKey", "Key", "api_key", "api-key", "Token", "Secret"} {
		doc := `{"LLM": {"Providers": {"p": {"Type": "openai", "APIKeyEnv": "K", "` + key + `": "` + secret + `"}}}}`
		cfg, err := ParseWithEnv([]byte(doc), keys)
		p := problemAt(t, problemsOf(t, cfg, err), "LLM.Providers.p."+key)
		if !strings.Contains(p.Allowed, "APIKeyEnv") {
			t.Errorf("%s: %q does not point to APIKeyEnv", key, p.Allowed)
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("%s: the error repeats the key: %v", key, err)
		}
	}
	// Keys pasted where they do not belong are not repeated either.
	for _, doc := range []string{
		`{"LLM": {"Providers": {"p": {"Type": "openai", "APIKeyEnv": "` + secret + `"}}}}`,
		`{"LLM": {"Providers": {"p": {"Type": "openai", "APIKeyEnv": "K", "BaseURL": "https://u:` + secret + `@h/v1"}}}}`,
		`{"LLM": {"Providers": {"p": {"Type": "openai", "APIKeyEnv": "K", "ApiKeyy": "` + secret + `"}}}}`,
	} {
		cfg, err := ParseWithEnv([]byte(doc), keys)
		problemsOf(t, cfg, err)
		if strings.Contains(err.Error(), "SECRET") {
			t.Errorf("the error repeats the key: %v", err)
		}
	}
}

func TestParse_InvalidJSONHasLineAndColumn(t *testing.T) {
	tests := []struct {
		doc       string
		line, col int
		allowed   string
	}{
		{"{\n  \"LLM\": {\n    \"Resilience\": {\"RetryCount\": 3,}\n  }\n}", 3, 36, "invalid character '}'"},
		{"{\"LLM\": {}", 1, 10, "unexpected end"},
		{"", 1, 1, "unexpected end"},
		{"[1, 2]", 1, 1, "must be a JSON object"},
		{"{\n\"LLM\": {\"Resilience\": {\"RetryCount\": 1e400}}}", 2, 38, "out of range"},
		{"{\"é\": 1,\n \"x\" 2}", 2, 6, "after object key"},
	}
	for _, tt := range tests {
		cfg, err := ParseWithEnv([]byte(tt.doc), keys)
		ps := problemsOf(t, cfg, err)
		p := ps[0]
		if len(ps) != 1 || p.Line != tt.line || p.Column != tt.col || !strings.Contains(p.Allowed, tt.allowed) {
			t.Errorf("%q: got %d problems, first at %d:%d %q; want %d:%d %q",
				tt.doc, len(ps), p.Line, p.Column, p.Allowed, tt.line, tt.col, tt.allowed)
		}
		want := "input:" + itoa(tt.line) + ":" + itoa(tt.col) + ": invalid JSON"
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %q does not contain %q", tt.doc, err, want)
		}
	}
	_, err := ParseWithEnv([]byte("{,}"), keys)
	var syn *json.SyntaxError
	if !errors.As(err, &syn) {
		t.Errorf("errors.As(*json.SyntaxError) fails on %v", err)
	}
}

func TestLoad_MissingFile(t *testing.T) {
	good := writeFile(t, "good.json", `{}`)
	missing := filepath.Join(t.TempDir(), "appsettings.Development.json")
	cfg, err := LoadWithEnv(keys, good, missing)
	p := problemsOf(t, cfg, err)[0]
	if p.Source != missing || !strings.Contains(err.Error(), missing) || !strings.Contains(p.Allowed, "not found") {
		t.Errorf("problem %+v does not name the missing file", p)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("errors.Is(err, fs.ErrNotExist) = false for %v", err)
	}
}

func TestLoad_ProblemsNameTheirFile(t *testing.T) {
	a := writeFile(t, "a.json", `{"LLM": {"Resilience": {"RetryCont": 1}}}`)
	b := writeFile(t, "b.json", `{"LLM": {"Resilience": {"TimeoutSecond": 1}}}`)
	cfg, err := LoadWithEnv(keys, a, b)
	ps := problemsOf(t, cfg, err)
	if problemAt(t, ps, "LLM.Resilience.RetryCont").Source != a ||
		problemAt(t, ps, "LLM.Resilience.TimeoutSecond").Source != b {
		t.Errorf("sources: %v", err)
	}
}

func TestError_MatchesValidationProblems(t *testing.T) {
	_, err := ParseWithEnv([]byte(`{"LLM": {"Resilience": {"TimeoutSeconds": -1}}}`), keys)
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatal(err)
	}
	p := ce.Problems[0]
	if p.Path != "LLM.Resilience.TimeoutSeconds" || p.Value != -1.0 || p.Source != "" {
		t.Errorf("problem %+v", p)
	}
}

func TestSuggest(t *testing.T) {
	tests := []struct{ name, want string }{
		{"RetryCont", "RetryCount"},
		{"retrycount", "RetryCount"},
		{"TimeoutSecs", "TimeoutSeconds"},
		{"BulkheadMaxConcurency", "BulkheadMaxConcurrency"},
		{"Banana", ""},
		{"", ""},
		{strings.Repeat("x", 1000), ""},
	}
	for _, tt := range tests {
		if got := suggest(tt.name, optionNames); got != tt.want {
			t.Errorf("suggest(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
