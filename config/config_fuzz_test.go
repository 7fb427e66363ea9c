package config

import (
	"errors"
	"os"
	"reflect"
	"testing"
)

// FuzzParse checks that parsing never panics and keeps its contract on any input: either a
// valid Config and no error, or a *Error and no Config, the same answer every time. It parses
// with no environment (ParseWithEnv(data, nil)), so that the answer depends on data alone.
func FuzzParse(f *testing.F) {
	if data, err := os.ReadFile(exampleFile); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseWithEnv(data, nil)
		if err != nil {
			var ce *Error
			if cfg != nil || !errors.As(err, &ce) || len(ce.Problems) == 0 {
				t.Fatalf("Parse = %v, %v (%T)", cfg, err, err)
			}
			_, again := ParseWithEnv(data, nil)
			if again == nil || again.Error() != err.Error() {
				t.Fatalf("Parse is not deterministic:\n%v\n%v", err, again)
			}
			return
		}
		if cfg == nil {
			t.Fatal("Parse returned neither a Config nor an error")
		}
		if err := cfg.Resilience.Validate(); err != nil {
			t.Fatalf("invalid Resilience accepted: %v", err)
		}
		for name, o := range cfg.Policies {
			if err := o.Validate(); err != nil {
				t.Fatalf("invalid policy %q accepted: %v", name, err)
			}
		}
		for name, p := range cfg.Providers {
			if p.Name != name {
				t.Fatalf("provider %q has Name %q", name, p.Name)
			}
			if err := p.Resilience.Validate(); err != nil {
				t.Fatalf("invalid provider %q accepted: %v", name, err)
			}
			if _, ok := cfg.Policies[p.Policy]; p.Policy != "" && !ok {
				t.Fatalf("provider %q refers to unknown policy %q", name, p.Policy)
			}
		}
		for _, name := range cfg.Fallback {
			if _, ok := cfg.Providers[name]; !ok {
				t.Fatalf("fallback names unknown provider %q", name)
			}
		}
		groups := cfg.Groups()
		for kind, names := range cfg.FallbackOn {
			if _, ok := canonical(kind, fallbackKinds); !ok || kind == "canceled" || names == nil {
				t.Fatalf("FallbackOn has kind %q (%v)", kind, names)
			}
			for _, name := range names {
				if p, ok := cfg.Providers[name]; (!ok || p.DeploymentOf != "") && groups[name] == nil {
					t.Fatalf("FallbackOn[%q] names %q, which cannot be called", kind, name)
				}
			}
		}
		again, err := ParseWithEnv(data, nil)
		if err != nil || !reflect.DeepEqual(cfg, again) {
			t.Fatalf("Parse is not deterministic: %v", err)
		}
	})
}
