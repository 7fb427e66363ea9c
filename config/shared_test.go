package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// LLM.SharedState is read from a file and the environment, checked key by key, and its
// credentials come from the variables it names.
func TestSharedState_FromFileAndEnv(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.json")
	if err := os.WriteFile(path, []byte(`{"LLM": {"SharedState": {"Address": "127.0.0.1:6379", "Prefix": "shop:",
		"PasswordEnv": "REDIS_PASSWORD", "TimeoutSeconds": "150ms", "TLS": true}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadWithEnv([]string{"REDIS_PASSWORD=s3cret-value", "LLM__SharedState__FailClosed=true"}, path)
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.SharedState
	if s == nil || s.Driver != "redis" || s.Address != "127.0.0.1:6379" || s.Prefix != "shop:" || !s.TLS || !s.FailClosed ||
		s.TimeoutSeconds != 0.15 {
		t.Fatalf("%+v", s)
	}
	if _, pw := s.Credentials(); pw != "s3cret-value" {
		t.Fatalf("password %q", pw)
	}
	if cfg, err := ParseWithEnv([]byte(`{"LLM": {}}`), nil); err != nil || cfg.SharedState != nil {
		t.Fatalf("not configured: %v %+v", err, cfg)
	}
}

func TestSharedState_Problems(t *testing.T) {
	for _, tc := range []struct{ json, path, want string }{
		{`{}`, "LLM.SharedState.Address", "is required"},
		{`{"Address": "redis"}`, "LLM.SharedState.Address", "host:port"},
		{`{"Address": "u:p@h:1"}`, "LLM.SharedState.Address", "host:port"},
		{`{"Address": "h:1", "Driver": "etcd"}`, "LLM.SharedState.Driver", `"redis"`},
		{`{"Address": "h:1", "TimeoutSeconds": 30}`, "LLM.SharedState.TimeoutSeconds", "between 0.001 and 10"},
		{`{"Address": "h:1", "PollIntervalSeconds": 0.001}`, "LLM.SharedState.PollIntervalSeconds", "between 0.01 and 60"},
		{`{"Address": "h:1", "PasswordEnv": "NOT_SET_ANYWHERE"}`, "LLM.SharedState.PasswordEnv", "not set"},
		{`{"Address": "h:1", "PaswordEnv": "X"}`, "LLM.SharedState.PaswordEnv", "did you mean"},
		{`{"Address": "h:1", "DB": -1}`, "LLM.SharedState.DB", "between 0 and 1000"},
	} {
		_, err := ParseWithEnv([]byte(`{"LLM": {"SharedState": `+tc.json+`}}`), nil)
		var le *Error
		if !errors.As(err, &le) {
			t.Fatalf("%s: %v", tc.json, err)
		}
		found := false
		for _, p := range le.Problems {
			if p.Path == tc.path && strings.Contains(p.Allowed, tc.want) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: want %s %q, got %v", tc.json, tc.path, tc.want, err)
		}
	}
}
