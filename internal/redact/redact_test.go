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
