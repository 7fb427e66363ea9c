package redact

import (
	"strings"
	"testing"
)

const key = "0f3c9a8e7d6b5a4c3e2f1a0b9c8d7e6f" // an Azure-style key: no sk- prefix

func TestRedact_ConfiguredKeyWholeAndCut(t *testing.T) {
	s := New(key)
	for _, in := range []string{
		"bad key " + key + " rejected",
		"bad key " + key[:20] + "… rejected", // the server cut it
		key + key,
		"prefix:" + key[:8],
	} {
		out := s.Redact(in)
		if strings.Contains(out, key[:8]) {
			t.Errorf("Redact(%q) = %q still holds the start of the key", in, out)
		}
	}
	if got := s.Redact("key " + key[:7] + " is short"); !strings.Contains(got, key[:7]) {
		t.Errorf("seven characters of a key are not a key: %q", got)
	}
}

func TestRedact_Shapes(t *testing.T) {
	s := New()
	for in, leak := range map[string]string{
		"Authorization: Bearer abc.def.ghi":           "abc.def.ghi",
		"use api_key=SECRETVALUE123 please":           "SECRETVALUE123",
		`{"x-api-key": "SECRETVALUE123"}`:             "SECRETVALUE123",
		"Incorrect API key provided: sk-proj-abcdef1": "sk-proj-abcdef1",
		"token:SECRETVALUE123":                        "SECRETVALUE123",
	} {
		if out := s.Redact(in); strings.Contains(out, leak) {
			t.Errorf("Redact(%q) = %q", in, out)
		}
	}
	if out := s.Redact("model gpt-4o is overloaded"); out != "model gpt-4o is overloaded" {
		t.Errorf("ordinary text changed: %q", out)
	}
}

func TestText_RedactsBeforeClipping(t *testing.T) {
	s := New(key)
	msg := strings.Repeat("x", 90) + key
	out := s.Text(msg, 100) // a naive clip would keep the key's first ten characters
	if strings.Contains(out, key[:8]) {
		t.Fatalf("Text kept a prefix of the key: %q", out)
	}
	if got := s.Text("line one\nforged: line two\r\n", 0); strings.ContainsAny(got, "\r\n") {
		t.Fatalf("control characters survived: %q", got)
	}
	if got := Clip(strings.Repeat("é", 10), 5); got != "éé…" {
		t.Fatalf("Clip on a rune boundary: %q", got)
	}
}

func FuzzRedact(f *testing.F) {
	f.Add("error: "+key, 40)
	f.Add("Bearer "+key, 10)
	f.Fuzz(func(t *testing.T, text string, max int) {
		out := New(key).Text(text, max%500)
		if strings.Contains(out, key[:minPartial]) {
			t.Fatalf("Text(%q) = %q leaks the key", text, out)
		}
		if strings.ContainsAny(out, "\n\r") {
			t.Fatalf("Text(%q) = %q spans lines", text, out)
		}
	})
}

func TestLooksLikeKey(t *testing.T) {
	for _, s := range []string{
		"sk-proj-abcdefghijklmnop", "sk-ant-api03-abcdefghij", key, "AIzaSyA1b2C3d4E5f6G7h8I9j0K_l1M2n3O4p5Q6",
		"Abcdefghijklmnopqrstuvwxyz123", "abcdefghij0123456789", "gsk_abcdefghijklmnopq",
	} {
		if !LooksLikeKey(s) {
			t.Errorf("LooksLikeKey(%q) = false", s)
		}
	}
	for _, s := range []string{
		"OPENAI_API_KEY", "AZURE_OPENAI_API_KEY_EASTUS2", "ANTHROPIC_API_KEY", "MY_KEY", "myOpenAIKey",
		"LLM_PROVIDER_2_API_KEY", "", "gpt-4o-mini-2024-07-18", "Mixtral-8x7B-Instruct-v01",
		"/tmp/TestLoad_MissingFile102425865/002/appsettings.json", "claude-sonnet-4-5-20250929",
	} {
		if LooksLikeKey(s) {
			t.Errorf("LooksLikeKey(%q) = true for a variable name", s)
		}
	}
}

func TestCheckBaseURL(t *testing.T) {
	for _, ok := range []string{"https://api.openai.com/v1", "http://127.0.0.1:8080/v1", "https://gw.example.com/v1?api-version=2024-10-21"} {
		if p := CheckBaseURL(ok); p != "" {
			t.Errorf("CheckBaseURL(%q) = %q", ok, p)
		}
	}
	for _, bad := range []string{
		"https://user:" + key + "@api.example.com", "https://api.example.com/v1?key=" + key,
		"https://api.example.com/v1?api_key=short", "https://api.example.com/v1?x=" + key,
		"ftp://api.example.com?token=" + key, "api.example.com/v1", "https://", "://x",
		"https://api.example.com/v1?Signature=abc",
	} {
		p := CheckBaseURL(bad)
		if p == "" {
			t.Errorf("CheckBaseURL(%q) accepted it", bad)
		}
		if strings.Contains(p, key[:8]) || strings.Contains(p, "short") {
			t.Errorf("CheckBaseURL(%q) = %q repeats a secret", bad, p)
		}
	}
}

// Text takes a short cut for IDs and model names (letters, digits, '.', '_', '-'), which
// must still lose a key hidden among them and agree with the full path everywhere else.
func TestText_PlainFieldsStillLoseKeys(t *testing.T) {
	s := New(key)
	for in, want := range map[string]string{
		"gpt-4o-mini-2024-07-18":  "gpt-4o-mini-2024-07-18",
		"chatcmpl-" + key:         "chatcmpl-" + Mask,
		"msg_" + key[:12]:         "msg_" + Mask,
		"req-sk-abcdefghijklmnop": "req-sk-" + Mask,
		"a.b_c-d":                 "a.b_c-d",
		"model bearer " + key:     "model bearer " + Mask, // not plain: the full path
	} {
		if got := s.Text(in, 0); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
		if plain(in) {
			if full := Clip(Line(s.Redact(in)), 0); full != s.Text(in, 0) {
				t.Errorf("Text(%q): short cut %q, full path %q", in, s.Text(in, 0), full)
			}
		}
	}
}

func TestSafe_EscapesControlCharactersAndCuts(t *testing.T) {
	cases := []struct {
		in   string
		max  int
		want string
	}{
		{"job-42", 128, "job-42"},
		{"a\r\nX-Admin: 1", 128, `a\r\nX-Admin: 1`},
		{"nul\x00here", 128, `nul\x00here`},
		{"bad\xffutf8", 128, `bad\xffutf8`},
		{"sep\u2028line", 128, `sep\u2028line`},
		{strings.Repeat("x", 200), 128, strings.Repeat("x", 128) + "…"},
		{strings.Repeat("\n", 100), 10, `\n\n\n\n\n` + "…"},
	}
	for _, c := range cases {
		if got := Safe(c.in, c.max); got != c.want {
			t.Errorf("Safe(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
		if got := Safe(c.in, c.max); c.max > 0 && len(got) > c.max+len("…") {
			t.Errorf("Safe(%q) is %d bytes", c.in, len(got))
		}
	}
}
