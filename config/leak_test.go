package config

import (
	"strings"
	"testing"
)

const leakKey = "0f3c9a8e7d6b5a4c3e2f1a0b9c8d7e6f" // an Azure-style key: no known prefix

// Rule 10: config refuses what would leak, and never repeats the secret while doing so.
func TestConfig_RefusesWhatWouldLeakWithoutEchoingIt(t *testing.T) {
	provider := func(field, value string) string {
		return `{"LLM":{"Providers":{"p":{"Type":"openai-compatible","BaseURL":"http://127.0.0.1/v1",` +
			`"` + field + `":` + value + `}}}}`
	}
	for name, doc := range map[string]string{
		"userinfo in BaseURL":       provider("BaseURL", `"https://user:`+leakKey+`@api.example.com/v1"`),
		"key in the BaseURL query":  provider("BaseURL", `"https://api.example.com/v1?key=`+leakKey+`"`),
		"token-shaped query value":  provider("BaseURL", `"https://api.example.com/v1?q=`+leakKey+`"`),
		"non-http scheme":           provider("BaseURL", `"ftp://api.example.com/?token=`+leakKey+`"`),
		"Azure key as APIKeyEnv":    provider("APIKeyEnv", `"`+leakKey+`"`),
		"sk key as APIKeyEnv":       provider("APIKeyEnv", `"sk-proj-`+leakKey+`"`),
		"mixed-case key":            provider("APIKeyEnv", `"Ab3dEfGh1jKlMnOpQr5tUvWxYz"`),
		"literal APIKey field":      provider("APIKey", `"`+leakKey+`"`),
		"key in an unknown key":     `{"LLM":{"Resilience":{"` + leakKey + `":1}}}`,
		"key as a policy reference": provider("Policy", `"`+leakKey+`"`),
	} {
		_, err := ParseWithEnv([]byte(doc), nil)
		if err == nil {
			t.Fatalf("%s: accepted", name)
		}
		if strings.Contains(err.Error(), leakKey[:8]) || strings.Contains(err.Error(), leakKey[len(leakKey)-8:]) {
			t.Fatalf("%s: the error repeats the secret: %v", name, err)
		}
	}
	// The same through the environment.
	_, err := ParseWithEnv([]byte(`{"LLM":{"Providers":{"p":{"Type":"openai-compatible","BaseURL":"http://127.0.0.1/v1"}}}}`),
		[]string{"LLM__Providers__p__APIKeyEnv=" + leakKey, "LLM__Providers__p__BaseURL=https://x.example.com/?api_key=" + leakKey})
	if err == nil || strings.Contains(err.Error(), leakKey[:8]) {
		t.Fatalf("environment: %v", err)
	}
}

// Errors quote a bounded prefix of an over-long value or name and escape control
// characters, so a hostile name cannot forge a line of the message.
func TestConfig_MessagesAreBoundedAndOnOneLinePerProblem(t *testing.T) {
	long := strings.Repeat("n", 10000)
	forged := "x\nconfig: LLM.Resilience.RetryCount = 3: all good"
	docs := []string{
		`{"LLM":{"Policies":{"` + long + `":{"RetryCount":-1}}}}`,
		`{"LLM":{"Resilience":{"` + long + `":1}}}`,
		`{"LLM":{"Resilience":{"RetryBackoff":"` + long + `"}}}`,
		`{"LLM":{"Providers":{"p":{"Type":"openai","APIKeyEnv":"K","Policy":"` + long + `"}}}}`,
		`{"LLM":{"Resilience":{"Retry\nCount":1}}}`,
		`{"LLM":{"Fallback":["` + strings.ReplaceAll(forged, "\n", `\n`) + `"]}}`,
	}
	for _, doc := range docs {
		_, err := ParseWithEnv([]byte(doc), nil)
		if err == nil {
			t.Fatalf("accepted %.60q", doc)
		}
		if len(err.Error()) > 2000 {
			t.Fatalf("a %d-byte message for %.60q", len(err.Error()), doc)
		}
		if strings.Contains(err.Error(), "\nconfig: LLM.Resilience.RetryCount") {
			t.Fatalf("a name forged a line: %s", err)
		}
	}
	_, err := ParseWithEnv(nil, []string{"LLM__Resilience__" + long + "=1", "LLM__Resilience__Retry\nCount=1"})
	if err == nil || len(err.Error()) > 2000 || strings.Contains(err.Error(), "Retry\nCount") {
		t.Fatalf("environment: %d bytes: %.300s", len(err.Error()), err)
	}
}
