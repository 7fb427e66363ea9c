package config

import (
	"strings"
	"testing"
)

// Parse reads the process environment as Load does: the variable a provider's APIKeyEnv names
// is found there (at the load, and by APIKey later), and LLM__ variables override the
// document. ParseWithEnv reads only the environment it is given.
func TestParse_ReadsTheProcessEnvironmentAsLoadDoes(t *testing.T) {
	doc := []byte(`{"LLM": {"Providers": {"openai": {"Dialect": "openai", "APIKeyEnv": "STEADY_TEST_OPENAI_KEY"}}}}`)
	t.Setenv("STEADY_TEST_OPENAI_KEY", "sk-from-the-process")
	t.Setenv("LLM__Resilience__RetryCount", "7")
	cfg, err := Parse(doc)
	if err != nil {
		t.Fatalf("Parse with the key's variable set: %v", err)
	}
	if key, err := cfg.Providers["openai"].APIKey(); key != "sk-from-the-process" || err != nil {
		t.Fatalf("APIKey: %q, %v", key, err)
	}
	if cfg.Resilience.RetryCount != 7 {
		t.Fatalf("RetryCount %d: the LLM__ variable was not read", cfg.Resilience.RetryCount)
	}
	// The same document with an environment of its own: nothing of the process's.
	cfg, err = ParseWithEnv(doc, []string{"STEADY_TEST_OPENAI_KEY=sk-given"})
	if err != nil || cfg.Resilience.RetryCount != 3 {
		t.Fatalf("ParseWithEnv: %v, %+v", err, cfg)
	}
	if key, _ := cfg.Providers["openai"].APIKey(); key != "sk-given" {
		t.Fatalf("APIKey from the given environment: %q", key)
	}
	_, err = ParseWithEnv(doc, nil)
	if p := problemAt(t, problemsOf(t, nil, err), "LLM.Providers.openai.APIKeyEnv"); !strings.Contains(p.Allowed, "not set") {
		t.Fatalf("ParseWithEnv with no environment: %+v", p)
	}
}

// A value that came from a variable is reported by the variable's name — also when only the
// checks of the merged result find it wrong (a number out of range, a name nobody declared,
// an unknown dialect, an unset key variable, an element of a list the variable set whole) —
// with its JSON path, its value and what is allowed. A value from a file is not.
func TestEnv_AProblemOfTheMergedResultNamesTheVariable(t *testing.T) {
	const doc = `{"LLM": {
		"Resilience": {"RetryCount": 30},
		"Providers": {"openai": {"Dialect": "openai", "APIKeyEnv": "OPENAI_API_KEY", "ContextWindows": {"gpt-4.1": 5}}}}}`
	for _, tt := range []struct {
		env, want string
	}{
		{"LLM__Resilience__RetryCount=-5", "LLM__Resilience__RetryCount: LLM.Resilience.RetryCount = -5: must be between 0 and 20"},
		{"LLM__Resilience__BulkheadMaxConcurrency=0", "LLM__Resilience__BulkheadMaxConcurrency: LLM.Resilience.BulkheadMaxConcurrency = 0: "},
		{"LLM__Policies__fast__RetryCount=21", "LLM__Policies__fast__RetryCount: LLM.Policies.fast.RetryCount = 21: must be between 0 and 20"},
		{"LLM__Providers__openai__Resilience__RetryCount=99", "LLM__Providers__openai__Resilience__RetryCount: LLM.Providers.openai.Resilience.RetryCount = 99: must be between 0 and 20"},
		{"LLM__Providers__openai__Dialect=opneai", `LLM__Providers__openai__Dialect: LLM.Providers.openai.Dialect = "opneai": must be one of`},
		{"LLM__Providers__openai__APIKeyEnv=NOT_SET_ANYWHERE", `LLM__Providers__openai__APIKeyEnv: LLM.Providers.openai.APIKeyEnv = "NOT_SET_ANYWHERE": names an environment variable that is not set`},
		{"LLM__Providers__openai__ContextWindow=-1", "LLM__Providers__openai__ContextWindow: LLM.Providers.openai.ContextWindow = -1: must be between 0"},
		{`LLM__Providers__openai__ContextWindows={"o3": -2}`, `LLM__Providers__openai__ContextWindows: LLM.Providers.openai.ContextWindows.o3 = -2: must be between 0`},
		{"LLM__Fallback__0=opnai", `LLM__Fallback__0: LLM.Fallback[0] = "opnai": must name a provider of LLM.Providers; did you mean openai?`},
		{`LLM__FallbackOn={"refused": ["openai", "nobody"]}`, `LLM__FallbackOn: LLM.FallbackOn.refused[1] = "nobody": must name a provider`},
		{"LLM__FailoverAfterSeconds=7200", "LLM__FailoverAfterSeconds: LLM.FailoverAfterSeconds = 7200: must be between 0 and 3600 seconds"},
		{"LLM__SharedState__DB=5000", "LLM__SharedState__DB: LLM.SharedState.DB = 5000: must be between 0 and 1000"},
	} {
		env := []string{"LLM__Resilience__RetryCount=2", tt.env}
		if strings.HasPrefix(tt.env, "LLM__Resilience__RetryCount") {
			env = env[1:]
		}
		if strings.HasPrefix(tt.env, "LLM__SharedState") {
			env = append(env, "LLM__SharedState__Address=127.0.0.1:6379")
		}
		_, err := ParseWithEnv([]byte(doc), append(env, keys...))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v\nwant a line with %s", tt.env, err, tt.want)
		}
	}
	// The file's values are reported by their path, with no source: the file's 30 retries, its
	// window of 5 tokens are fine or wrong as the file wrote them.
	_, err := ParseWithEnv([]byte(doc), keys)
	ps := problemsOf(t, nil, err)
	if p := problemAt(t, ps, "LLM.Resilience.RetryCount"); p.Source != "" {
		t.Errorf("a file's value names the source %q", p.Source)
	}
}
