package config

import (
	"strings"
	"testing"
)

// API is a key of the OpenAI dialects, any case; the environment sets it as any string.
func TestParse_API(t *testing.T) {
	for _, d := range []string{DialectOpenAI, DialectAzure, DialectOpenAICompatible} {
		for value, want := range map[string]string{`"responses"`: APIResponses, `" Responses "`: APIResponses,
			`"chat_completions"`: APIChatCompletions, `""`: ""} {
			p := parse(t, `{"LLM": {"Providers": {"p": {`+windowsProviders[d]+`, "api": `+value+`}}}}`).Providers["p"]
			if p.API != want {
				t.Errorf("%s: API %s read as %q, want %q", d, value, p.API, want)
			}
		}
	}
	p := parse(t, `{"LLM": {"Providers": {"p": {`+windowsProviders[DialectOpenAI]+`}}}}`, "LLM__Providers__p__API=RESPONSES").Providers["p"]
	if p.API != APIResponses {
		t.Errorf("from the environment: %q", p.API)
	}
}

// An unknown API, or one on a dialect that has none, names the key, the value and what is
// allowed.
func TestAPI_ProblemsNameThePathTheValueAndWhatIsAllowed(t *testing.T) {
	cfg, err := ParseWithEnv([]byte(`{"LLM": {"Providers": {"p": {`+windowsProviders[DialectOpenAI]+`, "API": "respones"}}}}`), keys)
	pr := problemAt(t, problemsOf(t, cfg, err), "LLM.Providers.p.API")
	if pr.Value != "respones" || !strings.Contains(pr.Allowed, `must be one of "chat_completions", "responses"`) ||
		!strings.Contains(pr.Allowed, "did you mean responses?") {
		t.Errorf("problem %+v", pr)
	}
	cfg, err = ParseWithEnv([]byte(`{"LLM": {"Providers": {"p": {`+windowsProviders[DialectAnthropic]+`, "API": "responses"}}}}`), keys)
	if pr := problemAt(t, problemsOf(t, cfg, err), "LLM.Providers.p.API"); !strings.Contains(pr.Allowed, "only used with Dialect") {
		t.Errorf("anthropic: %+v", pr)
	}
}

// ThinkingModes is a map of the anthropic dialect, its values any case; anything but "budget"
// or "adaptive" names the model, the value and what is allowed.
func TestParse_ThinkingModes(t *testing.T) {
	p := parse(t, `{"LLM": {"Providers": {"p": {`+windowsProviders[DialectAnthropic]+`, "ThinkingModes": {"claude-opus-4-6": " Adaptive "}}}}}`).Providers["p"]
	if p.ThinkingModes["claude-opus-4-6"] != ThinkingAdaptive {
		t.Errorf("%v", p.ThinkingModes)
	}
	cfg, err := ParseWithEnv([]byte(`{"LLM": {"Providers": {"p": {`+windowsProviders[DialectAnthropic]+`, "ThinkingModes": {"claude-x": "auto"}}}}}`), keys)
	pr := problemAt(t, problemsOf(t, cfg, err), "LLM.Providers.p.ThinkingModes.claude-x")
	if pr.Value != "auto" || !strings.Contains(pr.Allowed, `must be "budget"`) {
		t.Errorf("problem %+v", pr)
	}
	cfg, err = ParseWithEnv([]byte(`{"LLM": {"Providers": {"p": {`+windowsProviders[DialectOpenAI]+`, "ThinkingModes": {"m": "budget"}}}}}`), keys)
	if pr := problemAt(t, problemsOf(t, cfg, err), "LLM.Providers.p.ThinkingModes"); !strings.Contains(pr.Allowed, "only used with Dialect") {
		t.Errorf("openai: %+v", pr)
	}
}

// CountTokens and CountTimeoutSeconds belong to the anthropic dialect; the timeout is 0 to 30
// seconds, a number or a duration, and a value past it names the key, the value and the range.
func TestParse_CountTokens(t *testing.T) {
	p := parse(t, `{"LLM": {"Providers": {"p": {`+windowsProviders[DialectAnthropic]+`, "CountTokens": true, "CountTimeoutSeconds": "750ms"}}}}`).Providers["p"]
	if !p.CountTokens || p.CountTimeoutSeconds != 0.75 {
		t.Errorf("%v %v", p.CountTokens, p.CountTimeoutSeconds)
	}
	if p := parse(t, `{"LLM": {"Providers": {"p": {`+windowsProviders[DialectAnthropic]+`}}}}`).Providers["p"]; p.CountTokens || p.CountTimeoutSeconds != 0 {
		t.Errorf("counting is on by default: %+v", p)
	}
	for _, v := range []string{"-1", "31"} {
		cfg, err := ParseWithEnv([]byte(`{"LLM": {"Providers": {"p": {`+windowsProviders[DialectAnthropic]+`, "CountTimeoutSeconds": `+v+`}}}}`), keys)
		pr := problemAt(t, problemsOf(t, cfg, err), "LLM.Providers.p.CountTimeoutSeconds")
		if !strings.Contains(pr.Allowed, "between 0") || !strings.Contains(pr.Allowed, "30 seconds") {
			t.Errorf("%s: problem %+v", v, pr)
		}
	}
	cfg, err := ParseWithEnv([]byte(`{"LLM": {"Providers": {"p": {`+windowsProviders[DialectOpenAI]+`, "CountTokens": true}}}}`), keys)
	if pr := problemAt(t, problemsOf(t, cfg, err), "LLM.Providers.p.CountTokens"); !strings.Contains(pr.Allowed, "only used with Dialect") {
		t.Errorf("openai: %+v", pr)
	}
	cfg, err = ParseWithEnv([]byte(`{"LLM": {"Providers": {"p": {`+windowsProviders[DialectAnthropic]+`, "CountTokens": "yes"}}}}`), keys)
	if pr := problemAt(t, problemsOf(t, cfg, err), "LLM.Providers.p.CountTokens"); !strings.Contains(pr.Allowed, "true or false") {
		t.Errorf("a string: %+v", pr)
	}
}
