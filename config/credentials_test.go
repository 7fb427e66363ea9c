package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// Sentinels: passwords written where the name of a variable belongs. The first two have the
// shape of a variable name and nothing of an API key's shape, so only the care taken for
// UsernameEnv and PasswordEnv keeps them out of messages.
const (
	pwName   = "correcthorsebatterystaple"
	pwShort  = "Hunter2secret"
	pwSymbol = "hunter2-Very$ecret"
	pwDigits = "271828" // prints as written: a float64 this short has no exponent
)

// A password placed in PasswordEnv (or UsernameEnv) instead of the name of the variable that
// holds it is never repeated: not in "not set", not in a type error, not in a suggestion.
func TestSharedState_CredentialWrittenAsItsVariableIsNeverEchoed(t *testing.T) {
	shared := func(fields string) string {
		return `{"LLM": {"SharedState": {"Address": "127.0.0.1:6379", ` + fields + `}}}`
	}
	for _, tt := range []struct {
		name, doc string
		env       []string
		secret    string
		path      string // where the problem is
	}{
		{"name-shaped password in a file", shared(`"PasswordEnv": "` + pwName + `"`), nil, pwName, "LLM.SharedState.PasswordEnv"},
		{"short password in a file", shared(`"PasswordEnv": "` + pwShort + `"`), nil, pwShort, "LLM.SharedState.PasswordEnv"},
		{"password with symbols in a file", shared(`"PasswordEnv": "` + pwSymbol + `"`), nil, pwSymbol, "LLM.SharedState.PasswordEnv"},
		{"numeric password in a file", shared(`"PasswordEnv": ` + pwDigits), nil, pwDigits, "LLM.SharedState.PasswordEnv"},
		{"username in a file", shared(`"UsernameEnv": "` + pwName + `"`), nil, pwName, "LLM.SharedState.UsernameEnv"},
		{"numeric username in a file", shared(`"UsernameEnv": ` + pwDigits), nil, pwDigits, "LLM.SharedState.UsernameEnv"},
		{"misspelt key", shared(`"PaswordEnv": "` + pwName + `"`), nil, pwName, "LLM.SharedState.PaswordEnv"},
		{"name-shaped password in a variable", shared(`"TLS": true`),
			[]string{"LLM__SharedState__PasswordEnv=" + pwName}, pwName, "LLM.SharedState.PasswordEnv"},
		{"password with symbols in a variable", shared(`"TLS": true`),
			[]string{"LLM__SharedState__PasswordEnv=" + pwSymbol}, pwSymbol, "LLM.SharedState.PasswordEnv"},
		{"username in a variable", shared(`"TLS": true`),
			[]string{"LLM__SharedState__UsernameEnv=" + pwShort}, pwShort, "LLM.SharedState.UsernameEnv"},
		{"misspelt variable", shared(`"TLS": true`),
			[]string{"LLM__SharedState__PaswordEnv=" + pwName}, pwName, "LLM.SharedState.PaswordEnv"},
		{"set twice in two cases", shared(`"TLS": true`),
			[]string{"LLM__SharedState__PasswordEnv=" + pwName, "llm__sharedstate__passwordenv=" + pwShort}, pwShort, "LLM.SharedState.PasswordEnv"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ParseWithEnv([]byte(tt.doc), tt.env)
			ps := problemsOf(t, cfg, err)
			if p := problemAt(t, ps, tt.path); p.Value != nil {
				t.Errorf("problem %+v shows a value", p)
			}
			var ce *Error
			errors.As(err, &ce)
			for _, text := range []string{fmt.Sprintf("%v", err), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err),
				fmt.Sprintf("%#v", ce.Problems), fmt.Sprintf("%+v", ce.Problems)} {
				if strings.Contains(text, tt.secret) {
					t.Fatalf("the error repeats the secret: %s", text)
				}
			}
		})
	}
}

// Naming a variable that is not set still says which setting names it and what to do.
func TestSharedState_UnsetCredentialVariableSaysWhatToDo(t *testing.T) {
	cfg, err := ParseWithEnv([]byte(`{"LLM": {"SharedState": {"Address": "h:1", "PasswordEnv": "REDIS_PASSWORD"}}}`), nil)
	p := problemAt(t, problemsOf(t, cfg, err), "LLM.SharedState.PasswordEnv")
	if p.Value != nil || !strings.Contains(p.Allowed, "not set") || !strings.Contains(p.Allowed, "name of the variable") {
		t.Errorf("problem %+v", p)
	}
	cfg, err = ParseWithEnv([]byte(`{"LLM": {"SharedState": {"Address": "h:1", "PasswordEnv": "REDIS_PASSWORD"}}}`),
		[]string{"REDIS_PASSWORD=" + pwName})
	if err != nil {
		t.Fatal(err)
	}
	if _, pw := cfg.SharedState.Credentials(); pw != pwName {
		t.Errorf("password %q", pw)
	}
}
