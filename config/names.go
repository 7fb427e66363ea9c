package config

import (
	"strings"
	"unicode"

	"github.com/steadyllm/steady/internal/redact"
)

// names remembers the provider and policy names seen so far, spelled as first declared, so a
// later source that writes "OpenAI" updates the provider an earlier one declared as "openai".
type names struct {
	providers nameSet
	policies  nameSet
}

// nameSet is a set of user-chosen names, matched case-insensitively in constant time (a load
// stays linear in the number of names).
type nameSet struct {
	byLower map[string]string // lower case → the spelling first declared
}

// resolve returns the known spelling of name, declaring it when it is new.
func (n *nameSet) resolve(name string) string {
	lower := strings.ToLower(name)
	if c, ok := n.byLower[lower]; ok {
		return c
	}
	if n.byLower == nil {
		n.byLower = map[string]string{}
	}
	n.byLower[lower] = name
	return name
}

// Advice shared by the file and environment readers.
const (
	secretAdvice = "an API key must not be written into the configuration: put it in an " +
		"environment variable and name that variable in APIKeyEnv"
	envNameAdvice = "must be the name of an environment variable (letters, digits and _, not " +
		"starting with a digit), not the API key itself"
)

// credentialKeys are the settings that name the variable holding a secret. What is written
// there may be the secret itself, put in the wrong place, so problems never show it.
var credentialKeys = []string{keyAPIKeyEnv, "UsernameEnv", "PasswordEnv"}

// namesCredential reports whether a JSON path ends at one of credentialKeys.
func namesCredential(path string) bool {
	for _, k := range credentialKeys {
		if strings.HasSuffix(path, "."+k) {
			return true
		}
	}
	return false
}

// checkName returns why a policy or provider name is unusable, or "".
func checkName(name string) string {
	if strings.TrimSpace(name) == "" {
		return "a name must not be empty"
	}
	if strings.ContainsFunc(name, unicode.IsControl) {
		return "a name must not contain control characters"
	}
	return ""
}

// validEnvName reports whether s is a portable environment variable name that does not look
// like an API key written where its variable's name belongs.
func validEnvName(s string) bool {
	if s == "" || redact.LooksLikeKey(s) {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// joinPath appends key to a JSON path, bracketing keys that are not plain names (such as
// "gpt-4.1") so the path stays unambiguous.
func joinPath(path, key string) string {
	plain := key != "" && len(key) <= maxShown && !redact.LooksLikeKey(key) && !strings.ContainsFunc(key, func(r rune) bool {
		return !(r == '_' || r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r))
	})
	switch {
	case !plain:
		return path + "[" + show(key) + "]"
	case path == "":
		return key
	}
	return path + "." + key
}
