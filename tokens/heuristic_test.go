package tokens_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/steadyllm/steady/tokens"
)

func TestHeuristic_Edges(t *testing.T) {
	h := tokens.Heuristic
	if h.Name() != tokens.HeuristicName || tokens.HeuristicName != "heuristic" {
		t.Errorf("name %q", h.Name())
	}
	if enc, ok := tokens.Lookup(tokens.HeuristicName); !ok || enc != h {
		t.Error("Heuristic is not registered under its name")
	}
	if h.Count("") != 0 {
		t.Error("the empty string counts")
	}
	for _, s := range []string{"a", " ", ".", "\n", "\x00", "\xff", "字"} {
		if n := h.Count(s); n != 1 {
			t.Errorf("%q counts %d, want 1", s, n)
		}
	}
	// Invalid UTF-8 counts as the U+FFFD the wire carries instead.
	if a, b := h.Count("caf\xe9 au lait"), h.Count("caf\uFFFD au lait"); a != b {
		t.Errorf("invalid byte %d, its replacement %d", a, b)
	}
}

// TestHeuristic_FollowsTheTokenizersSplits: each rule the scan models changes the count the
// way it changes the tokenizer's pieces.
func TestHeuristic_FollowsTheTokenizersSplits(t *testing.T) {
	h := tokens.Heuristic
	for _, tc := range []struct {
		more, fewer string
		why         string
	}{
		{strings.Repeat("getUserName ", 20), strings.Repeat("getusername ", 20), "camelCase splits words"},
		{strings.Repeat("1234567 ", 20), strings.Repeat("123 ", 20), "digits go in threes"},
		{strings.Repeat("x\n", 20), strings.Repeat("x ", 20), "a line break is a piece, a space joins the next word"},
		{strings.Repeat("x\n    y", 20), strings.Repeat("x\ny", 20), "indentation is a piece"},
		{strings.Repeat("a, b; ", 20), strings.Repeat("a b ", 20), "punctuation"},
		{strings.Repeat("语言模型", 20), strings.Repeat("lang", 20), "each ideograph"},
		{strings.Repeat("привет ", 20), strings.Repeat("hi ", 20), "Cyrillic letters"},
		{strings.Repeat("🙂", 20), strings.Repeat("x", 20), "emoji"},
	} {
		if a, b := h.Count(tc.more), h.Count(tc.fewer); a <= b {
			t.Errorf("%s: %d tokens for %q…, %d for %q…", tc.why, a, tc.more[:12], b, tc.fewer[:12])
		}
	}
	// Blanks before a line break are part of its piece: they add nothing.
	if a, b := h.Count(strings.Repeat("x  \n", 50)), h.Count(strings.Repeat("x\n", 50)); a != b {
		t.Errorf("trailing blanks: %d, without %d", a, b)
	}
}

func TestHeuristic_AllocatesNothing(t *testing.T) {
	s := strings.Repeat("The quick brown fox — 狐狸 — jumps over 13 lazy dogs 🐕.\n", 40)
	if n := testing.AllocsPerRun(100, func() { tokens.Heuristic.Count(s) }); n != 0 {
		t.Errorf("%v allocations per Count", n)
	}
}

// FuzzHeuristic: any text counts between 1 and two tokens a byte (0 for ""), and the same
// each time.
func FuzzHeuristic(f *testing.F) {
	for _, s := range []string{"", "hello world", "getX 1234\n\n  }", "語 🙂\u200d x\xff", "ab\r\n\t \u00a0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := tokens.Heuristic.Count(s)
		switch {
		case s == "" && n != 0:
			t.Fatalf("empty: %d", n)
		case s != "" && (n < 1 || n > 2*len(s)):
			t.Fatalf("%q (%d bytes, %d runes): %d tokens", s, len(s), utf8.RuneCountInString(s), n)
		case n != tokens.Heuristic.Count(s):
			t.Fatal("not deterministic")
		}
	})
}

// BenchmarkHeuristic counts a long system prompt (about 1,000 o200k_base tokens of English
// prose, rules and JSON) and reports the time per 1,000 estimated tokens.
func BenchmarkHeuristic(b *testing.B) {
	s := readSystemPrompt(b)
	per := float64(tokens.Heuristic.Count(s)) / 1000
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		tokens.Heuristic.Count(s)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/per, "ns/1000tok")
}
