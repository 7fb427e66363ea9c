package config

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/steadyllm/steady/resilience"
)

func TestProvider_APIKey(t *testing.T) {
	env := lookupIn([]string{"OPENAI_API_KEY=sk-1", "EMPTY="})
	tests := []struct {
		apiKeyEnv string
		want      string
		err       error
	}{
		{"OPENAI_API_KEY", "sk-1", nil},
		{"MISSING", "", ErrNoAPIKey},
		{"EMPTY", "", ErrNoAPIKey},
		{"", "", nil}, // a server that needs no key
	}
	for _, tt := range tests {
		p := Provider{Name: "p", APIKeyEnv: tt.apiKeyEnv}
		got, err := p.APIKeyFrom(env)
		if got != tt.want || !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
			t.Errorf("%q: got %q, %v; want %q, %v", tt.apiKeyEnv, got, err, tt.want, tt.err)
		}
		if err != nil && !strings.Contains(err.Error(), tt.apiKeyEnv) {
			t.Errorf("%q: error %q does not name the variable", tt.apiKeyEnv, err)
		}
	}
}

func TestProvider_APIKeyReadsTheProcessEnvironment(t *testing.T) {
	t.Setenv("STEADY_CONFIG_TEST_KEY", "sk-from-env")
	got, err := Provider{APIKeyEnv: "STEADY_CONFIG_TEST_KEY"}.APIKey()
	if got != "sk-from-env" || err != nil {
		t.Errorf("APIKey = %q, %v", got, err)
	}
}

func TestProvider_PrintingRevealsNoKey(t *testing.T) {
	const secret = "sk-very-secret"
	t.Setenv("OPENAI_API_KEY", secret)
	cfg, err := LoadWithEnv(append([]string{"OPENAI_API_KEY=" + secret}, keys...), exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Providers["openai"]
	if key, _ := p.APIKey(); key != secret {
		t.Fatalf("APIKey = %q", key)
	}
	for _, s := range []string{fmt.Sprint(p), fmt.Sprintf("%+v", p), fmt.Sprintf("%#v", p), fmt.Sprintf("%#v", cfg)} {
		if strings.Contains(s, secret) {
			t.Errorf("printing reveals the key: %s", s)
		}
	}
}

func TestProvider_EffectiveResilienceOfAHandBuiltProvider(t *testing.T) {
	if got := (Provider{}).EffectiveResilience(); !reflect.DeepEqual(got, resilience.DefaultOptions()) {
		t.Errorf("zero Provider: %+v, want the defaults", got)
	}
	o := resilience.DefaultOptions()
	o.RetryCount = 1
	if got := (Provider{Resilience: o}).EffectiveResilience(); got.RetryCount != 1 {
		t.Errorf("RetryCount = %d, want 1", got.RetryCount)
	}
}
