package config

import (
	"fmt"
	"net"
	"strings"

	"github.com/steadyllm/steady/internal/redact"
)

// buildSharedState decodes and checks LLM.SharedState.
func buildSharedState(ps *problems, tree map[string]any, env func(string) (string, bool)) *SharedState {
	str := func(key string) string { s, _ := tree[key].(string); return strings.TrimSpace(s) }
	secs := func(key string) float64 { f, _ := tree[key].(float64); return f }
	db, _ := tree["DB"].(int)
	tls, _ := tree["TLS"].(bool)
	closed, _ := tree["FailClosed"].(bool)
	s := &SharedState{Driver: strings.ToLower(str("Driver")), Address: str("Address"), Prefix: str("Prefix"), DB: db,
		UsernameEnv: str("UsernameEnv"), PasswordEnv: str("PasswordEnv"), TLS: tls,
		PollIntervalSeconds: secs("PollIntervalSeconds"), TimeoutSeconds: secs("TimeoutSeconds"), FailClosed: closed, lookup: env}
	path := keyLLM + "." + keySharedState + "."
	add := func(key string, value any, allowed string) {
		ps.add(Problem{Path: path + key, Value: value, Allowed: allowed})
	}
	if s.Driver == "" {
		s.Driver = "redis"
	}
	if s.Driver != "redis" {
		add("Driver", str("Driver"), `must be "redis" (the default)`)
	}
	if s.Address == "" {
		add("Address", nil, `is required: Redis's host:port, such as "127.0.0.1:6379"`)
	} else if host, port, err := net.SplitHostPort(s.Address); err != nil || host == "" || port == "" || redact.LooksLikeKey(s.Address) {
		add("Address", nil, `must be host:port, such as "redis.internal:6379", without credentials (use UsernameEnv and PasswordEnv)`)
	}
	if s.DB < 0 || s.DB > 1000 {
		add("DB", s.DB, "must be between 0 and 1000")
	}
	// The bounds are written so that a NaN, had it come in, would fail them too.
	if s.PollIntervalSeconds != 0 && !(s.PollIntervalSeconds >= 0.01 && s.PollIntervalSeconds <= 60) {
		add("PollIntervalSeconds", s.PollIntervalSeconds, "must be between 0.01 and 60 seconds (0: the default, 0.25)")
	}
	if s.TimeoutSeconds != 0 && !(s.TimeoutSeconds >= 0.001 && s.TimeoutSeconds <= 10) {
		add("TimeoutSeconds", s.TimeoutSeconds, "must be between 0.001 and 10 seconds (0: the default, 0.2)")
	}
	// What is written in UsernameEnv or PasswordEnv is never shown: a user who put the password
	// itself there would find it repeated in logs. A password of any shape can pass for the name
	// of a variable ("hunter2"), so the shape of the value cannot decide when showing is safe.
	for _, c := range []struct{ key, what string }{{"UsernameEnv", "username"}, {"PasswordEnv", "password"}} {
		name := str(c.key)
		switch {
		case name == "":
		case !validEnvName(name):
			add(c.key, nil, fmt.Sprintf("must be the name of an environment variable (letters, digits and _, "+
				"not starting with a digit), not the %s itself", c.what))
		default:
			if v, ok := env(name); !ok || v == "" {
				add(c.key, nil, fmt.Sprintf("names an environment variable that is not set (or is empty): set it "+
					"to the %s; this setting holds the name of the variable, never the %s itself (which is "+
					"why the name is not repeated here)", c.what, c.what))
			}
		}
	}
	return s
}
