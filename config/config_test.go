package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/steadyllm/steady/resilience"
)

const exampleFile = "../examples/config/appsettings.json"

// keys sets the variables the tests' providers name in APIKeyEnv: a provider whose key is
// not set is a load error.
var keys = []string{"K=test-key", "K2=test-key", "A=test-key", "B=test-key", "C=test-key", "D=test-key", "OPENAI_API_KEY=sk-test", "AZURE_OPENAI_API_KEY=azure-test",
	"ANTHROPIC_API_KEY=sk-ant-test"}

// parse is ParseWithEnv, with the test keys set, that fails the test on error.
func parse(t *testing.T, doc string, environ ...string) *Config {
	t.Helper()
	cfg, err := ParseWithEnv([]byte(doc), append(environ, keys...))
	if err != nil {
		t.Fatalf("ParseWithEnv: %v", err)
	}
	return cfg
}

// problemsOf asserts that err is a *Error and that no Config came with it.
func problemsOf(t *testing.T, cfg *Config, err error) []Problem {
	t.Helper()
	if cfg != nil {
		t.Errorf("got a Config with the error, want nil")
	}
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T) is not a *config.Error", err, err)
	}
	if len(ce.Problems) == 0 {
		t.Fatalf("*config.Error without problems")
	}
	return ce.Problems
}

// problemAt returns the problem at path, failing the test when there is none.
func problemAt(t *testing.T, ps []Problem, path string) Problem {
	t.Helper()
	for _, p := range ps {
		if p.Path == path {
			return p
		}
	}
	t.Fatalf("no problem at %s; got:\n%v", path, (&Error{Problems: ps}).Error())
	return Problem{}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestParse_EmptyLLMSectionGivesDefaults(t *testing.T) {
	for _, doc := range []string{`{"LLM": {}}`, `{"llm": {}}`, `{"Logging": {"x": 1}, "LLM": {}}`, "\uFEFF{\"LLM\": {}}"} {
		cfg := parse(t, doc)
		if !reflect.DeepEqual(cfg.Resilience, resilience.DefaultOptions()) {
			t.Errorf("%s: Resilience = %+v, want the defaults", doc, cfg.Resilience)
		}
		if cfg.Policies == nil || cfg.Providers == nil || cfg.Fallback != nil {
			t.Errorf("%s: Policies %v, Providers %v, Fallback %v: want empty maps and nil", doc,
				cfg.Policies, cfg.Providers, cfg.Fallback)
		}
	}
}

func TestParse_DoesNotReadTheProcessEnvironment(t *testing.T) {
	t.Setenv("LLM__Resilience__RetryCount", "7")
	if got := parse(t, `{"LLM": {}}`).Resilience.RetryCount; got != 3 {
		t.Errorf("RetryCount = %d, want the default 3", got)
	}
}

func TestLoad_ReadsTheProcessEnvironment(t *testing.T) {
	for _, kv := range os.Environ() {
		if len(kv) >= len(envPrefix) && strings.EqualFold(kv[:len(envPrefix)], envPrefix) {
			t.Skipf("the process environment sets %s; this test needs it free of LLM__ variables", kv)
		}
	}
	t.Setenv("LLM__Resilience__RetryCount", "7")
	cfg, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Resilience.RetryCount != 7 {
		t.Errorf("RetryCount = %d, want 7 from the environment", cfg.Resilience.RetryCount)
	}
}

func TestLoad_ExampleFile(t *testing.T) {
	cfg, err := LoadWithEnv(keys, exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	// LLM.Resilience lists every field of resilience.Options with its default value.
	if !reflect.DeepEqual(cfg.Resilience, resilience.DefaultOptions()) {
		t.Errorf("Resilience = %+v, want the defaults", cfg.Resilience)
	}
	raw, err := os.ReadFile(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range optionFields {
		if !strings.Contains(string(raw), `"`+f.name+`"`) {
			t.Errorf("the example does not show %s", f.name)
		}
	}
	if len(cfg.Policies) != 2 {
		t.Errorf("policies = %v, want 2", cfg.Policies)
	}
	types := map[string]bool{}
	for _, p := range cfg.Providers {
		types[p.Dialect] = true
	}
	if len(types) != len(providerDialects) {
		t.Errorf("provider types %v, want all of %v", types, providerDialects)
	}
	if want := []string{"openai", "azure", "anthropic", "local"}; !reflect.DeepEqual(cfg.Fallback, want) {
		t.Errorf("Fallback = %v, want %v", cfg.Fallback, want)
	}
	if o := cfg.Providers["openai"]; o.ContextWindow != 128000 || o.ContextWindows["gpt-4.1-mini"] != 1047576 {
		t.Errorf("openai ContextWindow %d, ContextWindows %v", o.ContextWindow, o.ContextWindows)
	}
	for _, key := range []string{keyContextWindow, keyContextWindows} {
		if !strings.Contains(string(raw), `"`+key+`"`) {
			t.Errorf("the example does not show %s", key)
		}
	}
	wantOn := map[string][]string{"context_too_long": {"anthropic"}, "content_filtered": {"anthropic"},
		"quota_exhausted": {"local"}, "auth": {}}
	if !reflect.DeepEqual(cfg.FallbackOn, wantOn) {
		t.Errorf("FallbackOn = %v, want %v", cfg.FallbackOn, wantOn)
	}
	for _, key := range llmKeys {
		// Routing needs a provider made of deployments, SharedState a store: not shown yet.
		// Cost has its own example (the cost guide), as the README mirrors this file.
		if !strings.Contains(string(raw), `"`+key+`"`) && key != keyRouting && key != keySharedState && key != keyCost {
			t.Errorf("the example does not show LLM.%s", key)
		}
	}
	azure := cfg.Providers["azure"]
	if azure.Policy != "interactive" || azure.Resilience.TimeoutSeconds != 20 ||
		azure.Resilience.RetryCount != 1 || azure.Resilience.AttemptTimeoutSeconds != 7.5 {
		t.Errorf("azure = %+v, want interactive with TimeoutSeconds 20", azure)
	}
}

// One file plus overrides from the environment, end to end.
func TestLoadWithEnv_FileThenEnvironment(t *testing.T) {
	environ := []string{
		"PATH=/usr/bin",                                // not ours: ignored
		"LLM__Resilience__RetryCount=5",                // a scalar
		"llm__resilience__timeoutseconds=1m",           // any case, a duration
		"LLM__Resilience__RetryableStatusCodes__1=500", // one element of a list
		"LLM__Policies__Batch__RetryCount=9",           // a policy, named in another case
		"LLM__Providers__OPENAI__BaseURL=https://proxy.example/v1",
		"LLM__Providers__openai__Resilience__RetryCount=2",
		"LLM__Providers__mistral__Type=openai-compatible", // a new provider
		"LLM__Providers__mistral__BaseURL=http://mistral.internal/v1",
		"LLM__Fallback__4=Mistral", // appends to the file's list of 4
		"OPENAI_API_KEY=sk-test",   // the keys the providers name must be set
		"AZURE_OPENAI_API_KEY=azure-test",
		"ANTHROPIC_API_KEY=sk-ant-test",
	}
	cfg, err := LoadWithEnv(environ, exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Resilience.RetryCount != 5 || cfg.Resilience.TimeoutSeconds != 60 {
		t.Errorf("Resilience RetryCount %d TimeoutSeconds %g, want 5 and 60",
			cfg.Resilience.RetryCount, cfg.Resilience.TimeoutSeconds)
	}
	if want := []int{429, 500, 503, 504, 529}; !reflect.DeepEqual(cfg.Resilience.RetryableStatusCodes, want) {
		t.Errorf("RetryableStatusCodes = %v, want %v", cfg.Resilience.RetryableStatusCodes, want)
	}
	if _, ok := cfg.Policies["Batch"]; ok || cfg.Policies["batch"].RetryCount != 9 {
		t.Errorf("policies = %v, want batch with RetryCount 9", cfg.Policies)
	}
	openai := cfg.Providers["openai"]
	if openai.BaseURL != "https://proxy.example/v1" || openai.Resilience.RetryCount != 2 {
		t.Errorf("openai = %+v, want the BaseURL and RetryCount from the environment", openai)
	}
	// The interactive policy's TimeoutSeconds (15) still beats the environment's LLM.Resilience.
	if openai.Resilience.TimeoutSeconds != 15 {
		t.Errorf("openai TimeoutSeconds = %g, want 15 from its policy", openai.Resilience.TimeoutSeconds)
	}
	if m := cfg.Providers["mistral"]; m.Dialect != DialectOpenAICompatible || m.Resilience.RetryCount != 5 {
		t.Errorf("mistral = %+v, want a new openai-compatible provider over LLM.Resilience", m)
	}
	if want := []string{"openai", "azure", "anthropic", "local", "mistral"}; !reflect.DeepEqual(cfg.Fallback, want) {
		t.Errorf("Fallback = %v, want %v", cfg.Fallback, want)
	}
	key, err := openai.APIKeyFrom(lookupIn(environ))
	if err != nil || key != "sk-test" {
		t.Errorf("APIKeyFrom = %q, %v", key, err)
	}
}

func TestLoad_LaterFilesOverrideEarlierOnes(t *testing.T) {
	base := writeFile(t, "appsettings.json", `{"LLM": {
		"Resilience": {"RetryCount": 4, "TimeoutSeconds": 40},
		"Providers": {"OpenAI": {"Type": "openai", "APIKeyEnv": "K", "Model": "a"}},
		"Fallback": ["OpenAI", "OpenAI2"]}}`)
	prod := writeFile(t, "appsettings.Production.json", `{"llm": {
		"resilience": {"retrycount": 1},
		"providers": {"openai": {"model": "b"}, "OpenAI2": {"Type": "anthropic", "APIKeyEnv": "K2"}},
		"fallback": ["openai2"]}}`)
	cfg, err := LoadWithEnv(keys, base, prod)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Resilience.RetryCount != 1 || cfg.Resilience.TimeoutSeconds != 40 {
		t.Errorf("Resilience = %+v, want RetryCount 1 over TimeoutSeconds 40", cfg.Resilience)
	}
	if p := cfg.Providers["OpenAI"]; p.Model != "b" || p.APIKeyEnv != "K" || p.Name != "OpenAI" {
		t.Errorf("OpenAI = %+v, want Model b merged over the first file's provider", p)
	}
	if !reflect.DeepEqual(cfg.Fallback, []string{"OpenAI2"}) {
		t.Errorf("Fallback = %v, want the second file's list as a whole", cfg.Fallback)
	}
}

func TestPolicies_Layering(t *testing.T) {
	cfg := parse(t, `{"LLM": {
		"Resilience": {"RetryCount": 5, "TimeoutSeconds": 50},
		"Policies": {"fast": {"TimeoutSeconds": 5}},
		"Providers": {
			"a": {"Type": "openai", "APIKeyEnv": "A"},
			"b": {"Type": "openai", "APIKeyEnv": "B", "Policy": "FAST"},
			"c": {"Type": "openai", "APIKeyEnv": "C", "Policy": "fast", "Resilience": {"RetryCount": 0}},
			"d": {"Type": "openai", "APIKeyEnv": "D", "Resilience": {"BulkheadMaxQueue": 7}}}}}`)
	fast := cfg.Policies["fast"]
	if fast.RetryCount != 5 || fast.TimeoutSeconds != 5 || fast.BulkheadMaxQueue != 100 {
		t.Errorf("fast = %+v, want over LLM.Resilience (RetryCount 5) and the defaults", fast)
	}
	tests := []struct {
		provider       string
		policy         string
		retries, queue int
		timeoutSeconds float64
	}{
		{"a", "", 5, 100, 50},
		{"b", "fast", 5, 100, 5},
		{"c", "fast", 0, 100, 5},
		{"d", "", 5, 7, 50},
	}
	for _, tt := range tests {
		p := cfg.Providers[tt.provider]
		got := p.EffectiveResilience()
		if p.Policy != tt.policy || got.RetryCount != tt.retries || got.BulkheadMaxQueue != tt.queue ||
			got.TimeoutSeconds != tt.timeoutSeconds {
			t.Errorf("%s: policy %q, %+v; want policy %q, RetryCount %d, BulkheadMaxQueue %d, TimeoutSeconds %g",
				tt.provider, p.Policy, got, tt.policy, tt.retries, tt.queue, tt.timeoutSeconds)
		}
	}
}

func TestParse_SecondsAcceptNumbersAndDurations(t *testing.T) {
	tests := []struct {
		json string
		want float64
	}{
		{`12`, 12},
		{`0.25`, 0.25},
		{`"750ms"`, 0.75},
		{`"1m30s"`, 90},
		{`" 2s "`, 2},
	}
	for _, tt := range tests {
		cfg := parse(t, `{"LLM": {"Resilience": {"BulkheadQueueTimeoutSeconds": `+tt.json+`}}}`)
		if got := cfg.Resilience.BulkheadQueueTimeoutSeconds; got != tt.want {
			t.Errorf("%s: got %g, want %g", tt.json, got, tt.want)
		}
	}
}

func TestParse_ValuesOfEveryKind(t *testing.T) {
	cfg := parse(t, `{"LLM": {"Resilience": {"RetryCount": 2.0, "RetryUseJitter": false,
		"RetryBackoff": "linear", "RetryBudgetPercent": 12.5, "RetryableStatusCodes": []}}}`)
	r := cfg.Resilience
	if r.RetryCount != 2 || r.RetryUseJitter || r.RetryBackoff != "linear" || r.RetryBudgetPercent != 12.5 ||
		r.RetryableStatusCodes == nil || len(r.RetryableStatusCodes) != 0 {
		t.Errorf("Resilience = %+v", r)
	}
}

// Every field of resilience.Options must be configurable; a field of a type this package does
// not know would be skipped.
func TestOptionFields_CoverEveryField(t *testing.T) {
	typ := reflect.TypeFor[resilience.Options]()
	if len(optionFields) != typ.NumField() {
		t.Errorf("%d of %d fields of resilience.Options are configurable", len(optionFields), typ.NumField())
	}
	tree := optionsTree(resilience.DefaultOptions())
	var o resilience.Options
	apply(&o, tree)
	if !reflect.DeepEqual(o, resilience.DefaultOptions()) {
		t.Errorf("defaults do not survive a round trip: %+v", o)
	}
}

func TestResult_SharesNoMemory(t *testing.T) {
	cfg := parse(t, `{"LLM": {"Policies": {"p": {}}, "Providers": {"a": {"Type": "openai", "APIKeyEnv": "A"}}}}`)
	cfg.Resilience.RetryableStatusCodes[0] = 1
	if cfg.Policies["p"].RetryableStatusCodes[0] != 429 || cfg.Providers["a"].Resilience.RetryableStatusCodes[0] != 429 {
		t.Error("policies or providers share RetryableStatusCodes with LLM.Resilience")
	}
	eff := cfg.Providers["a"].EffectiveResilience()
	eff.RetryableStatusCodes[0] = 2
	if cfg.Providers["a"].Resilience.RetryableStatusCodes[0] != 429 {
		t.Error("EffectiveResilience shares memory with the Provider")
	}
}

func TestParse_NamesWithDotsAreNotSplit(t *testing.T) {
	cfg := parse(t, `{"LLM": {"Providers": {"gpt-4.1": {"Type": "openai", "APIKeyEnv": "K"},
		"a:b__c": {"Type": "openai", "APIKeyEnv": "K"}}, "Fallback": ["gpt-4.1", "a:b__c"]}}`,
		"LLM__Providers__GPT-4.1__Model=gpt-4.1-mini")
	if p := cfg.Providers["gpt-4.1"]; p.Model != "gpt-4.1-mini" || p.Dialect != "openai" {
		t.Errorf("gpt-4.1 = %+v", p)
	}
	if len(cfg.Providers) != 2 {
		t.Errorf("providers = %v, want 2", cfg.Providers)
	}
}

// Dialect was called Type: the old spelling still works, in files and variables, and setting
// both is a problem.
func TestParse_TypeIsTheFormerNameOfDialect(t *testing.T) {
	cfg := parse(t, `{"LLM":{"Providers":{"a":{"Type":"Anthropic","APIKeyEnv":"K"}}}}`,
		"LLM__Providers__b__type=openai", "LLM__Providers__b__APIKeyEnv=K")
	if a, b := cfg.Providers["a"], cfg.Providers["b"]; a.Dialect != DialectAnthropic ||
		b.Dialect != DialectOpenAI {
		t.Fatalf("a %+v b %+v", a, b)
	}
	_, err := ParseWithEnv([]byte(`{"LLM":{"Providers":{"a":{"Type":"openai","Dialect":"openai","APIKeyEnv":"K"}}}}`), keys)
	if err == nil || !strings.Contains(err.Error(), "former name of Dialect") {
		t.Fatalf("both spellings: %v", err)
	}
}
