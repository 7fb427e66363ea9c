package config

import (
	"reflect"
	"strings"
	"testing"

	koanfjson "github.com/knadh/koanf/parsers/json"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/rawbytes"
	"github.com/knadh/koanf/v2"
)

const envDoc = `{"LLM": {
	"Resilience": {"RetryCount": 3},
	"Policies": {"Batch": {"RetryCount": 6}},
	"Providers": {"OpenAI": {"Type": "openai", "APIKeyEnv": "OPENAI_API_KEY"}},
	"Fallback": ["OpenAI"]}}`

// koanf's obvious env mapping ("__" → ".") builds a key that differs from the file's in case,
// so the override lands in a separate subtree and is silently lost. This is why env.go exists.
func TestEnv_NaiveKoanfMappingLosesOverrides(t *testing.T) {
	k := koanf.New(".")
	if err := k.Load(rawbytes.Provider([]byte(envDoc)), koanfjson.Parser()); err != nil {
		t.Fatal(err)
	}
	environ := []string{"LLM__RESILIENCE__RETRYCOUNT=7", "LLM__Providers__openai__Model=gpt-4o"}
	err := k.Load(env.Provider(".", env.Opt{
		Prefix:        "LLM__",
		EnvironFunc:   func() []string { return environ },
		TransformFunc: func(k, v string) (string, any) { return strings.ReplaceAll(k, "__", "."), v },
	}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := k.Int("LLM.Resilience.RetryCount"); got != 3 {
		t.Fatalf("naive mapping: RetryCount = %d; koanf changed, revisit this test", got)
	}
	if got := k.String("LLM.Providers.OpenAI.Model"); got != "" {
		t.Fatalf("naive mapping: Model = %q; koanf changed, revisit this test", got)
	}

	// The same variables through this package reach the file's keys.
	cfg := parse(t, envDoc, environ...)
	if cfg.Resilience.RetryCount != 7 || cfg.Providers["OpenAI"].Model != "gpt-4o" {
		t.Errorf("RetryCount %d, Model %q: want 7 and gpt-4o", cfg.Resilience.RetryCount, cfg.Providers["OpenAI"].Model)
	}
}

func TestEnv_Overrides(t *testing.T) {
	tests := []struct {
		env   string
		check func(*Config) any // returns the value to compare
		want  any
	}{
		{"LLM__Resilience__RetryCount=5", func(c *Config) any { return c.Resilience.RetryCount }, 5},
		{"LLM__RESILIENCE__RETRYCOUNT= 5 ", func(c *Config) any { return c.Resilience.RetryCount }, 5},
		{"llm__resilience__retrycount=5", func(c *Config) any { return c.Resilience.RetryCount }, 5},
		{"LLM__Resilience__TimeoutSeconds=2.5", func(c *Config) any { return c.Resilience.TimeoutSeconds }, 2.5},
		{"LLM__Resilience__TimeoutSeconds=750ms", func(c *Config) any { return c.Resilience.TimeoutSeconds }, 0.75},
		{"LLM__Resilience__RetryUseJitter=false", func(c *Config) any { return c.Resilience.RetryUseJitter }, false},
		{"LLM__Resilience__RetryBudgetPercent=7.5", func(c *Config) any { return c.Resilience.RetryBudgetPercent }, 7.5},
		{"LLM__Resilience__RetryBackoff=linear", func(c *Config) any { return c.Resilience.RetryBackoff }, "linear"},
		{"LLM__Resilience__RetryableStatusCodes__0=408", func(c *Config) any { return c.Resilience.RetryableStatusCodes },
			[]int{408, 502, 503, 504, 529}},
		{"LLM__Resilience__RetryableStatusCodes__5=500", func(c *Config) any { return c.Resilience.RetryableStatusCodes },
			[]int{429, 502, 503, 504, 529, 500}},
		{"LLM__Policies__batch__TimeoutSeconds=90", func(c *Config) any { return c.Policies["Batch"].TimeoutSeconds }, 90.0},
		{"LLM__Policies__fresh__RetryCount=1", func(c *Config) any { return c.Policies["fresh"].RetryCount }, 1},
		{"LLM__Providers__openai__BaseURL=https://p.example/v1", func(c *Config) any { return c.Providers["OpenAI"].BaseURL },
			"https://p.example/v1"},
		{"LLM__Providers__openai__Model=", func(c *Config) any { return c.Providers["OpenAI"].Model }, ""},
		{"LLM__Providers__openai__Policy=BATCH", func(c *Config) any { return c.Providers["OpenAI"].Policy }, "Batch"},
		{"LLM__Providers__openai__Resilience__RetryCount=0", func(c *Config) any { return c.Providers["OpenAI"].Resilience.RetryCount }, 0},
		{"LLM__Fallback__0=openai", func(c *Config) any { return c.Fallback }, []string{"OpenAI"}},
		{"LLM_Resilience_RetryCount=9", func(c *Config) any { return c.Resilience.RetryCount }, 3}, // not the convention: ignored
		{"HOME=/root", func(c *Config) any { return c.Resilience.RetryCount }, 3},
	}
	for _, tt := range tests {
		cfg := parse(t, envDoc, tt.env)
		if got := tt.check(cfg); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.env, got, tt.want)
		}
	}
}

func TestEnv_DeclaresNewProviders(t *testing.T) {
	cfg := parse(t, envDoc,
		"LLM__Providers__claude__Type=anthropic",
		"LLM__Providers__Claude__APIKeyEnv=ANTHROPIC_API_KEY", // same provider, other case
		"LLM__Fallback__1=CLAUDE")
	c := cfg.Providers["Claude"] // sorted first: "Claude" < "claude"
	if c.Dialect != DialectAnthropic || c.APIKeyEnv != "ANTHROPIC_API_KEY" || len(cfg.Providers) != 2 {
		t.Errorf("providers = %+v", cfg.Providers)
	}
	if !reflect.DeepEqual(cfg.Fallback, []string{"OpenAI", "Claude"}) {
		t.Errorf("Fallback = %v", cfg.Fallback)
	}
}

func TestEnv_Problems(t *testing.T) {
	tests := []struct {
		env     string
		path    string
		allowed string
	}{
		{"LLM__Resilience__RetryCont=5", "LLM.Resilience.RetryCont", "did you mean LLM__Resilience__RetryCount?"},
		{"LLM__Resiliance__RetryCount=5", "LLM.Resiliance", "did you mean LLM__Resilience__RetryCount?"},
		{"LLM__RetryCount=5", "LLM.RetryCount", "did you mean LLM__Resilience__RetryCount?"},
		{"LLM__Providers__openai__TimeoutSeconds=5", "LLM.Providers.OpenAI.TimeoutSeconds",
			"did you mean LLM__Providers__openai__Resilience__TimeoutSeconds?"},
		{"LLM__Bogus=1", "LLM.Bogus", "unknown key"},
		{"LLM__=1", `LLM[""]`, "unknown key"},
		{"LLM__Resilience=5", "LLM.Resilience", "names a resilience object"},
		{"LLM__Providers__openai=x", "LLM.Providers.OpenAI", "names a provider"},
		{"LLM__Providers=x", "LLM.Providers", "names a map of names"},
		{"LLM__Resilience__RetryCount__x=1", "LLM.Resilience.RetryCount.x", "has no fields"},
		{"LLM__Providers__openai__Model__x=1", "LLM.Providers.OpenAI.Model.x", "has no fields"},
		{"LLM__Resilience__RetryCount=five", "LLM.Resilience.RetryCount", "whole number"},
		{"LLM__Resilience__RetryCount=2.0", "LLM.Resilience.RetryCount", "whole number"},
		{"LLM__Resilience__RetryUseJitter=maybe", "LLM.Resilience.RetryUseJitter", "true or false"},
		{"LLM__Resilience__TimeoutSeconds=soon", "LLM.Resilience.TimeoutSeconds", "Go duration"},
		{"LLM__Resilience__RetryCount=50", "LLM.Resilience.RetryCount", "between 0 and 20"},
		{"LLM__Resilience__RetryableStatusCodes=429", "LLM.Resilience.RetryableStatusCodes", "set its elements by index"},
		{"LLM__Resilience__RetryableStatusCodes__x=429", "LLM.Resilience.RetryableStatusCodes.x", "list index"},
		{"LLM__Resilience__RetryableStatusCodes__01=429", "LLM.Resilience.RetryableStatusCodes.01", "list index"},
		{"LLM__Resilience__RetryableStatusCodes__99999=429", "LLM.Resilience.RetryableStatusCodes.99999", "list index"},
		{"LLM__Resilience__RetryableStatusCodes__7=429", "LLM.Resilience.RetryableStatusCodes[7]", "leaves LLM.Resilience.RetryableStatusCodes[5] unset"},
		{"LLM__Fallback__2=OpenAI", "LLM.Fallback[2]", "leaves LLM.Fallback[1] unset"},
		{"LLM__Fallback__1=nobody", "LLM.Fallback[1]", "must name a provider"},
		{"LLM__Fallback__0__x=1", "LLM.Fallback[0].x", "no fields"},
		{"LLM__Providers__openai__Policy=none", "LLM.Providers.OpenAI.Policy", "must name a policy"},
		{"LLM__Providers____Type=openai", `LLM.Providers[""]`, "must not be empty"},
		{"LLM__Providers__new__Model=x", "LLM.Providers.new.Dialect", "is required"},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			cfg, err := ParseWithEnv([]byte(envDoc), []string{tt.env})
			p := problemAt(t, problemsOf(t, cfg, err), tt.path)
			if !strings.Contains(p.Allowed, tt.allowed) {
				t.Errorf("allowed %q, want it to contain %q", p.Allowed, tt.allowed)
			}
		})
	}
}

func TestEnv_ProblemsNameTheVariable(t *testing.T) {
	cfg, err := ParseWithEnv([]byte(envDoc), []string{"LLM__Resilience__RetryCount=x"})
	p := problemsOf(t, cfg, err)[0]
	if p.Source != "LLM__Resilience__RetryCount" || p.Value != "x" {
		t.Errorf("problem %+v", p)
	}
}

func TestEnv_SameSettingTwice(t *testing.T) {
	cfg, err := ParseWithEnv([]byte(envDoc), []string{
		"LLM__Resilience__RetryCount=5", "LLM__RESILIENCE__RETRYCOUNT=6"})
	p := problemsOf(t, cfg, err)[0]
	if p.Source != "LLM__Resilience__RetryCount" || !strings.Contains(p.Allowed, "also set by LLM__RESILIENCE__RETRYCOUNT") {
		t.Errorf("problem %+v", p)
	}
	// The very same variable twice in environ: the first wins, as with os.Getenv.
	cfg = parse(t, envDoc, "LLM__Resilience__RetryCount=5", "LLM__Resilience__RetryCount=5")
	if cfg.Resilience.RetryCount != 5 {
		t.Errorf("RetryCount = %d", cfg.Resilience.RetryCount)
	}
}

func TestEnv_LiteralAPIKeyIsRefusedWithoutRepeatingIt(t *testing.T) {
	const secret = "sk-ant-SECRET-42"
	for _, v := range []string{"LLM__Providers__openai__APIKey=", "LLM__Providers__openai__api_key=",
		"LLM__Providers__openai__APIKeyEnv=", "LLM__Providers__openai__BaseURL=https://user:"} {
		cfg, err := ParseWithEnv([]byte(envDoc), []string{v + secret + "@x"})
		ps := problemsOf(t, cfg, err)
		if strings.Contains(err.Error(), "SECRET") {
			t.Errorf("%s: the error repeats the key: %v", v, err)
		}
		if !strings.Contains(err.Error(), "APIKeyEnv") && len(ps) > 0 {
			t.Errorf("%s: %v does not point to APIKeyEnv", v, err)
		}
	}
}

func TestEnv_OrderDoesNotMatter(t *testing.T) {
	environ := []string{"LLM__Resilience__RetryCont=1", "LLM__Providers__x__Type=openai",
		"LLM__Providers__X__Model=m", "LLM__Resilience__TimeoutSeconds=x"}
	reversed := []string{environ[3], environ[2], environ[1], environ[0]}
	_, err1 := ParseWithEnv([]byte(envDoc), environ)
	_, err2 := ParseWithEnv([]byte(envDoc), reversed)
	if err1 == nil || err1.Error() != err2.Error() {
		t.Errorf("errors differ with the order of environ:\n%v\n%v", err1, err2)
	}
}
