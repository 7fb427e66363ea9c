package tokens_test

import (
	"testing"

	"github.com/steadyllm/steady/tokens"
)

func TestEncodingForModel_Table(t *testing.T) {
	for model, want := range map[string]string{
		"gpt-4o":                              tokens.O200kBase,
		"gpt-4o-2024-08-06":                   tokens.O200kBase,
		"gpt-4o-mini":                         tokens.O200kBase,
		"GPT-4o-Mini":                         tokens.O200kBase,
		"gpt-4.1":                             tokens.O200kBase,
		"gpt-4.1-mini-2025-04-14":             tokens.O200kBase,
		"gpt-4.1-nano":                        tokens.O200kBase,
		"gpt-4.5-preview":                     tokens.O200kBase,
		"gpt-5":                               tokens.O200kBase,
		"gpt-5-mini":                          tokens.O200kBase,
		"gpt-5.1":                             tokens.O200kBase,
		"gpt-5.2-codex":                       tokens.O200kBase,
		"o1":                                  tokens.O200kBase,
		"o1-mini":                             tokens.O200kBase,
		"o3-mini-2025-01-31":                  tokens.O200kBase,
		"o4-mini":                             tokens.O200kBase,
		"chatgpt-4o-latest":                   tokens.O200kBase,
		"gpt-oss-120b":                        tokens.O200kBase,
		"openai/gpt-4o":                       tokens.O200kBase,
		"azure/openai/gpt-4.1-mini":           tokens.O200kBase,
		"ft:gpt-4o-mini-2024-07-18:acme::abc": tokens.O200kBase,
		"gpt-4o@2024-08-06":                   tokens.O200kBase,
		"gpt-4":                               tokens.Cl100kBase,
		"gpt-4-0613":                          tokens.Cl100kBase,
		"gpt-4-turbo":                         tokens.Cl100kBase,
		"gpt-4-32k":                           tokens.Cl100kBase,
		"gpt-3.5-turbo":                       tokens.Cl100kBase,
		"gpt-3.5-turbo-0125":                  tokens.Cl100kBase,
		"gpt-35-turbo":                        tokens.Cl100kBase,
		"text-embedding-3-small":              tokens.Cl100kBase,
		"text-embedding-3-large":              tokens.Cl100kBase,
		"text-embedding-ada-002":              tokens.Cl100kBase,
		"ft:gpt-3.5-turbo-0125:acme::x":       tokens.Cl100kBase,
		"":                                    "",
		"claude-sonnet-4-5":                   "",
		"anthropic/claude-3-5-haiku":          "",
		"gemini-2.5-pro":                      "",
		"llama-3.1-70b":                       "",
		"my-prod-deployment":                  "",
		"gpt-4.2":                             "", // an unannounced 4.x is not gpt-4's
		"gpt-40":                              "",
		"o10":                                 "",
		"gpt-4ox":                             "",
		"text-embedding-3":                    tokens.Cl100kBase,
	} {
		if got := tokens.EncodingForModel(model); got != want {
			t.Errorf("EncodingForModel(%q) = %q, want %q", model, got, want)
		}
	}
}

func TestEncodingForModel_AllocatesNothing(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { tokens.EncodingForModel("openai/ft:gpt-4o-mini:acme::x") }); n != 0 {
		t.Errorf("%v allocations, want 0", n)
	}
}

// words is an encoding for the tests of the rules: one token per space-separated word.
type words string

func (w words) Name() string { return string(w) }
func (w words) Count(text string) int {
	n, in := 0, false
	for i := 0; i < len(text); i++ {
		if text[i] == ' ' || text[i] == '\n' {
			in = false
		} else if !in {
			in, n = true, n+1
		}
	}
	return n
}

func TestRegister_LookupAndReplace(t *testing.T) {
	if _, ok := tokens.Lookup("test_words"); ok {
		t.Fatal("found before registering")
	}
	tokens.Register(words("test_words"))
	enc, ok := tokens.Lookup("test_words")
	if !ok || enc.Name() != "test_words" {
		t.Fatalf("Lookup = %v, %v", enc, ok)
	}
	tokens.Register(other("test_words"))
	if enc, _ := tokens.Lookup("test_words"); enc.Count("a b") != 42 {
		t.Error("a second registration did not replace the first")
	}
	if _, ok := tokens.Lookup(""); ok {
		t.Error(`Lookup("") found something`)
	}
	if n := testing.AllocsPerRun(100, func() { tokens.Lookup("test_words") }); n != 0 {
		t.Errorf("Lookup: %v allocations, want 0", n)
	}
}

type other string

func (o other) Name() string     { return string(o) }
func (o other) Count(string) int { return 42 }

func TestRegister_PanicsOnNilAndUnnamed(t *testing.T) {
	for name, enc := range map[string]tokens.Encoding{"nil": nil, "unnamed": words("")} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			tokens.Register(enc)
		}()
	}
}

func TestForModel_NeedsARegisteredEncoding(t *testing.T) {
	if _, ok := tokens.ForModel("claude-opus-4"); ok {
		t.Error("an unknown model found an encoding")
	}
	tokens.Register(words(tokens.Cl100kBase))
	if enc, ok := tokens.ForModel("gpt-4"); !ok || enc.Name() != tokens.Cl100kBase {
		t.Errorf("ForModel(gpt-4) = %v, %v", enc, ok)
	}
}
