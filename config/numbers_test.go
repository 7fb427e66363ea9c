package config

import (
	"encoding/json"
	"strings"
	"testing"
)

// numericKey is one numeric setting: its path in the JSON document and the variable that sets it.
type numericKey struct {
	path []string // canonical JSON path; a list's element is its index
	env  string
	show string // the path as problems show it
}

// numericKeys lists every numeric setting of the schema: each numeric field of
// resilience.Options at the three levels that hold one, and every other number.
func numericKeys() []numericKey {
	var keys []numericKey
	add := func(path ...string) {
		show := displayPath(path, -1)
		if last := path[len(path)-1]; last == "0" {
			show = displayPath(path[:len(path)-1], 0)
		}
		keys = append(keys, numericKey{path: path, env: envPrefix + strings.Join(path[1:], "__"), show: show})
	}
	for _, level := range [][]string{{keyLLM, keyResilience}, {keyLLM, keyPolicies, "p"}, {keyLLM, keyProviders, "p", keyResilience}} {
		for _, f := range optionFields {
			path := append(append([]string{}, level...), f.name)
			switch f.kind {
			case kindInt, kindNumber, kindSeconds:
				add(path...)
			case kindIntList:
				add(append(path, "0")...)
			}
		}
	}
	add(keyLLM, keyFailover)
	for _, k := range sharedStateKeys {
		if numeric(sharedStateFields[k]) {
			add(keyLLM, keySharedState, k)
		}
	}
	for _, k := range sortedKeys(providerFields) {
		if numeric(providerFields[k].kind) {
			add(keyLLM, keyProviders, "p", k)
		}
	}
	for _, k := range limitKeys {
		add(keyLLM, keyProviders, "p", keyLimits, k)
	}
	add(keyLLM, keyProviders, "p", keyContextWindows, "gpt-4o")
	return keys
}

func numeric(k kind) bool { return k == kindInt || k == kindNumber || k == kindSeconds }

// numbersDoc declares what the numeric keys live in: a policy, an anthropic provider (the
// dialect that uses every provider number) and a shared state.
const numbersDoc = `{"LLM": {"Policies": {"p": {}}, "Providers": {"p": {"Dialect": "anthropic", "APIKeyEnv": "K"}},
	"SharedState": {"Address": "127.0.0.1:6379"}}}`

func TestNumericKeys_CoverTheSchema(t *testing.T) {
	ks := numericKeys()
	if len(ks) < 3*10+11 {
		t.Fatalf("only %d numeric keys found", len(ks))
	}
	seen := map[string]bool{}
	for _, k := range ks {
		seen[k.show] = true
	}
	for _, want := range []string{"LLM.FailoverAfterSeconds", "LLM.SharedState.PollIntervalSeconds", "LLM.SharedState.TimeoutSeconds",
		"LLM.SharedState.DB", "LLM.Providers.p.Weight", "LLM.Providers.p.Limits.MaxEventBytes",
		"LLM.Providers.p.Resilience.CircuitBreakerSamplingSeconds", "LLM.Policies.p.RetryableStatusCodes[0]",
		"LLM.Providers.p.ContextWindow", "LLM.Providers.p.ContextWindows.gpt-4o"} {
		if !seen[want] {
			t.Errorf("%s is not among the numeric keys", want)
		}
	}
	if _, err := ParseWithEnv([]byte(numbersDoc), keys); err != nil {
		t.Fatalf("the base document does not load: %v", err)
	}
}

// strconv.ParseFloat reads "NaN", "Inf" and "infinity": a NaN compares false with every bound,
// so it passed the range checks of the settings that Options.Validate does not see
// (FailoverAfterSeconds, SharedState's seconds). Every number refuses them.
func TestEnv_NonFiniteNumbersAreRefusedForEveryNumericKey(t *testing.T) {
	bad := []string{"NaN", "nan", "Inf", "+Inf", "-inf", "infinity", "+Infinity", "-Infinity", "1e400", "9999999999h"}
	for _, k := range numericKeys() {
		for _, v := range bad {
			cfg, err := ParseWithEnv([]byte(numbersDoc), append([]string{k.env + "=" + v}, keys...))
			if err == nil {
				t.Errorf("%s=%s: accepted", k.env, v)
				continue
			}
			p := problemAt(t, problemsOf(t, cfg, err), k.show)
			if p.Source != k.env || p.Value != v {
				t.Errorf("%s=%s: problem %+v does not name the variable and the value", k.env, v, p)
			}
		}
	}
}

// JSON has no NaN or infinity, and a literal past float64 is a syntax problem; a duration
// string that overflows, or a quoted "NaN", is refused at its path.
func TestParse_NonFiniteNumbersAreRefusedForEveryNumericKey(t *testing.T) {
	for _, k := range numericKeys() {
		for _, v := range []string{`"NaN"`, `"Infinity"`, `"9999999999h"`, `"-9999999999h"`, `1e400`, `-1e400`} {
			var doc map[string]any
			if err := json.Unmarshal([]byte(numbersDoc), &doc); err != nil {
				t.Fatal(err)
			}
			set(doc, k.path, json.RawMessage(v))
			data, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := ParseWithEnv(data, keys)
			ps := problemsOf(t, cfg, err)
			if strings.HasPrefix(v, `"`) {
				problemAt(t, ps, k.show)
			} else if !strings.Contains(err.Error(), "out of range") {
				t.Errorf("%s = %s: %v", k.show, v, err)
			}
		}
	}
}

// set puts v at path in a decoded JSON document, making the objects and the list on the way.
func set(doc map[string]any, path []string, v any) {
	m := doc
	for i, p := range path[:len(path)-1] {
		if path[i+1] == "0" && i+2 == len(path) {
			m[p] = []any{v}
			return
		}
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[path[len(path)-1]] = v
}
