package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/steadyllm/steady/providers"
)

// fallbackOnDoc declares two providers and one made of two deployments.
const fallbackOnDoc = `{"LLM": {"Providers": {
	"Small": {"Dialect": "openai", "APIKeyEnv": "K"},
	"large": {"Dialect": "anthropic", "APIKeyEnv": "K"},
	"pool-a": {"Dialect": "openai", "APIKeyEnv": "K", "DeploymentOf": "pool"},
	"pool-b": {"Dialect": "openai", "APIKeyEnv": "K", "DeploymentOf": "pool"}}`

func withFallbackOn(fallbackOn string) string {
	return fallbackOnDoc + `, "FallbackOn": ` + fallbackOn + `}}`
}

// Kinds are matched case-insensitively and kept in their canonical spelling; names resolve to
// the providers' spelling, a provider made of deployments included; an empty list is kept
// (it stops the chain), apart from a kind left out.
func TestParse_FallbackOn(t *testing.T) {
	cfg := parse(t, withFallbackOn(`{"Context_Too_Long": ["LARGE", "pool"], "refused": ["small"], "content_filtered": []}`))
	want := map[string][]string{"context_too_long": {"large", "pool"}, "refused": {"Small"}, "content_filtered": {}}
	if !reflect.DeepEqual(cfg.FallbackOn, want) {
		t.Fatalf("FallbackOn = %#v, want %#v", cfg.FallbackOn, want)
	}
	if got := parse(t, fallbackOnDoc+`}}`).FallbackOn; got != nil {
		t.Errorf("not configured: FallbackOn = %v, want nil", got)
	}
	if got := parse(t, withFallbackOn(`{}`)).FallbackOn; got != nil {
		t.Errorf("an empty object: FallbackOn = %v, want nil", got)
	}
}

// Every kind the providers package declares may be named (refused too), but canceled and
// budget_exhausted (a budget refuses a call before there is any chain).
func TestParse_FallbackOnNamesEveryKindButCanceled(t *testing.T) {
	kinds := providers.Kinds()
	if !containsKind(kinds, "refused") {
		t.Fatalf("providers.Kinds() = %v lacks refused", kinds)
	}
	for _, k := range kinds {
		cfg, err := ParseWithEnv([]byte(withFallbackOn(`{"`+strings.ToUpper(string(k))+`": ["large"]}`)), keys)
		if k == providers.KindCanceled {
			p := problemAt(t, problemsOf(t, cfg, err), "LLM.FallbackOn.CANCELED")
			if p.Source != "input" || !strings.Contains(p.Allowed, `"canceled" is the caller's own cancellation, which always ends the call`) {
				t.Errorf("canceled: problem %+v", p)
			}
			continue
		}
		if k == providers.KindBudgetExhausted {
			p := problemAt(t, problemsOf(t, cfg, err), "LLM.FallbackOn.BUDGET_EXHAUSTED")
			if !strings.Contains(p.Allowed, "no chain to go on") {
				t.Errorf("budget_exhausted: problem %+v", p)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(cfg.FallbackOn[string(k)], []string{"large"}) {
			t.Errorf("%s: %v, FallbackOn %v", k, err, cfg)
		}
	}
}

func containsKind(kinds []providers.ErrorKind, k providers.ErrorKind) bool {
	for _, x := range kinds {
		if x == k {
			return true
		}
	}
	return false
}

func TestParse_FallbackOnProblems(t *testing.T) {
	for _, tt := range []struct {
		fallbackOn, source, path string
		value                    any
		allowed                  string
	}{
		{`{"overloadd": ["large"]}`, "input", "LLM.FallbackOn.overloadd", nil,
			"must be an error kind: auth, bad_request, bulkhead_full, circuit_open, content_filtered, context_too_long, not_found, overloaded,"},
		{`{"overloadd": ["large"]}`, "input", "LLM.FallbackOn.overloadd", nil, "unavailable, unknown; did you mean overloaded?"},
		{`{"timeout": ["larg"]}`, "", "LLM.FallbackOn.timeout[0]", "larg", "must name a provider of LLM.Providers; did you mean large?"},
		{`{"timeout": ["pool-a"]}`, "", "LLM.FallbackOn.timeout[0]", "pool-a", "must name a provider of LLM.Providers"},
		{`{"timeout": ["large", "LARGE"]}`, "", "LLM.FallbackOn.timeout[1]", "LARGE", "is listed twice: already at index 0"},
		{`{"timeout": "large"}`, "input", "LLM.FallbackOn.timeout", "large", "must be a list of strings"},
		{`{"timeout": [7]}`, "input", "LLM.FallbackOn.timeout[0]", 7.0, "must be a string"},
		{`{"timeout": null}`, "input", "LLM.FallbackOn.timeout", literal("null"), "must be a list of strings"},
		{`{"timeout": ["large"], "Timeout": []}`, "input", "LLM.FallbackOn.timeout", nil, `set twice, as "Timeout" and "timeout"`},
		{`["timeout"]`, "input", "LLM.FallbackOn", literal("a list"), "must be an object"},
	} {
		cfg, err := ParseWithEnv([]byte(withFallbackOn(tt.fallbackOn)), keys)
		p := problemAt(t, problemsOf(t, cfg, err), tt.path)
		if p.Source != tt.source || p.Value != tt.value || !strings.Contains(p.Allowed, tt.allowed) {
			t.Errorf("%s: problem %+v, want source %q, value %v and %q", tt.fallbackOn, p, tt.source, tt.value, tt.allowed)
		}
	}
}

// A kind's list is set from the environment by index, merged into the file's list element by
// element; or several kinds' lists at once, each whole, by a JSON object in LLM__FallbackOn,
// which can also set an empty list. The kinds it leaves out keep the files' lists.
func TestEnv_FallbackOn(t *testing.T) {
	doc := withFallbackOn(`{"context_too_long": ["large"], "refused": ["small"], "timeout": ["pool"]}`)
	cfg := parse(t, doc, "LLM__FallbackOn__context_too_long__1=pool", "llm__fallbackon__RATE_LIMITED__0=Large",
		`LLM__FallbackOn={"Refused": [], "content_filtered": ["small", "pool"]}`)
	want := map[string][]string{
		"context_too_long": {"large", "pool"},
		"rate_limited":     {"large"},
		"refused":          {},
		"content_filtered": {"Small", "pool"},
		"timeout":          {"pool"},
	}
	if !reflect.DeepEqual(cfg.FallbackOn, want) {
		t.Fatalf("FallbackOn = %#v, want %#v", cfg.FallbackOn, want)
	}
	// Without a file that sets it.
	cfg = parse(t, fallbackOnDoc+`}}`, "LLM__FallbackOn__context_too_long__0=large")
	if !reflect.DeepEqual(cfg.FallbackOn, map[string][]string{"context_too_long": {"large"}}) {
		t.Fatalf("FallbackOn = %#v", cfg.FallbackOn)
	}
}

func TestEnv_FallbackOnProblems(t *testing.T) {
	for _, tt := range []struct {
		env, path string
		value     any
		allowed   string
	}{
		{"LLM__FallbackOn__overloadd__0=large", "LLM.FallbackOn.overloadd", nil,
			"must be an error kind: auth, bad_request,"},
		{"LLM__FallbackOn__overloadd__0=large", "LLM.FallbackOn.overloadd", nil,
			"; did you mean LLM__FallbackOn__overloaded__0?"},
		{"LLM__FallbackOn__Canceled__0=large", "LLM.FallbackOn.Canceled", nil, "the caller's own cancellation"},
		{"LLM__FallbackOn__refused=large", "LLM.FallbackOn.refused", nil,
			`is a list: set its elements by index, as LLM__FallbackOn__refused__0, LLM__FallbackOn__refused__1, …, or set kinds' lists whole (an empty one too) as a JSON object in LLM__FallbackOn, such as {"refused": []}`},
		{"LLM__FallbackOn__refused__1=large", "LLM.FallbackOn.refused[1]", nil, "leaves LLM.FallbackOn.refused[0] unset"},
		{"LLM__FallbackOn__refused__0__x=large", "LLM.FallbackOn.refused[0].x", nil, "a list element has no fields"},
		{"LLM__FallbackOn=refused", "LLM.FallbackOn", "refused",
			"must be an object of lists of provider names by error kind, such as {\"context_too_long\": [\"large\"]}, or set one kind's list by index, as LLM__FallbackOn__context_too_long__0"},
		{`LLM__FallbackOn={"refusd": []}`, `LLM.FallbackOn.refusd`, nil, "did you mean refused?"},
		{`LLM__FallbackOn={"canceled": []}`, `LLM.FallbackOn.canceled`, nil, "the caller's own cancellation"},
		{`LLM__FallbackOn={"refused": "large"}`, `LLM.FallbackOn.refused`, "large", "must be a list of strings"},
		{`LLM__FallbackOn={"refused": ["large", 3]}`, `LLM.FallbackOn.refused[1]`, 3.0, "must be a string"},
		{`LLM__FallbackOn={"refused": [], "REFUSED": []}`, `LLM.FallbackOn.refused`, nil, "set twice"},
	} {
		cfg, err := ParseWithEnv([]byte(fallbackOnDoc+`}}`), append([]string{tt.env}, keys...))
		p := problemAt(t, problemsOf(t, cfg, err), tt.path)
		source, _, _ := strings.Cut(tt.env, "=")
		if p.Source != source || p.Value != tt.value || !strings.Contains(p.Allowed, tt.allowed) {
			t.Errorf("%s: problem %+v, want source %q, value %v and %q", tt.env, p, source, tt.value, tt.allowed)
		}
	}
	// A kind's list set both whole and by index is reported, whatever the order.
	for _, env := range [][]string{
		{`LLM__FallbackOn={"refused": ["large"]}`, "LLM__FallbackOn__refused__1=pool"},
		{"LLM__FallbackOn__refused__0=pool", `llm__fallbackon={"refused": ["large"]}`},
	} {
		cfg, err := ParseWithEnv([]byte(fallbackOnDoc+`}}`), append(env, keys...))
		ps := problemsOf(t, cfg, err)
		found := false
		for _, p := range ps {
			found = found || strings.HasPrefix(p.Path, "LLM.FallbackOn.refused") && strings.Contains(p.Allowed, "also set by")
		}
		if !found {
			t.Errorf("%v: %v", env, &Error{Problems: ps})
		}
	}
	// A name no provider has is reported after the merge, at its path.
	cfg, err := ParseWithEnv([]byte(fallbackOnDoc+`}}`), append([]string{"LLM__FallbackOn__timeout__0=nowhere"}, keys...))
	if p := problemAt(t, problemsOf(t, cfg, err), "LLM.FallbackOn.timeout[0]"); p.Value != "nowhere" {
		t.Errorf("problem %+v", p)
	}
}
