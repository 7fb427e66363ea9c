package tiktoken_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/steadyllm/steady/tokens"
)

func lookup(t testing.TB, name string) tokens.Encoding {
	t.Helper()
	enc, ok := tokens.Lookup(name)
	if !ok {
		t.Fatalf("%s is not registered", name)
	}
	return enc
}

// TestCount_PublishedTokenizations are token counts printed by OpenAI's Python tiktoken in
// the cookbook "How to count tokens with tiktoken" (sections 3 and 5), and by its README
// ("hello world" is two tokens in both).
func TestCount_PublishedTokenizations(t *testing.T) {
	for _, tc := range []struct {
		text          string
		o200k, cl100k int
	}{
		{"tiktoken is great!", 0, 6},
		{"antidisestablishmentarianism", 6, 6},
		{"2 + 2 = 4", 7, 7},
		{"お誕生日おめでとう", 8, 9},
		{"hello world", 2, 2},
	} {
		if tc.o200k > 0 {
			if got := lookup(t, tokens.O200kBase).Count(tc.text); got != tc.o200k {
				t.Errorf("o200k_base %q: %d tokens, tiktoken says %d", tc.text, got, tc.o200k)
			}
		}
		if got := lookup(t, tokens.Cl100kBase).Count(tc.text); got != tc.cl100k {
			t.Errorf("cl100k_base %q: %d tokens, tiktoken says %d", tc.text, got, tc.cl100k)
		}
	}
}

// TestCount_AsTheWireSendsIt: invalid UTF-8 counts as the U+FFFD encoding/json replaces it
// with, and special-token markers as the text they are.
func TestCount_AsTheWireSendsIt(t *testing.T) {
	for _, name := range []string{tokens.O200kBase, tokens.Cl100kBase} {
		enc := lookup(t, name)
		if a, b := enc.Count("caf\xe9 au lait"), enc.Count("caf\uFFFD au lait"); a != b {
			t.Errorf("%s: invalid UTF-8 counts %d, its replacement %d", name, a, b)
		}
		if n := enc.Count("<|endoftext|>"); n < 3 {
			t.Errorf("%s: <|endoftext|> counts %d: counted as a special token, not as text", name, n)
		}
		if enc.Count("") != 0 {
			t.Errorf("%s: the empty string counts", name)
		}
	}
}

// TestCount_LongPieceIsNotQuadratic: a long run of letters is one piece for the split
// expression; older versions of the library merged it in quadratic time (40 kB took 0.35 s).
// Counted here with a generous bound that only a quadratic merge would break.
func TestCount_LongPieceIsNotQuadratic(t *testing.T) {
	if testing.Short() {
		t.Skip("counts 400 kB")
	}
	s := strings.Repeat("qwertyuiopasdfghjklzxcvbnm", 400000/26)
	enc := lookup(t, tokens.O200kBase)
	done := make(chan int, 1)
	go func() { done <- enc.Count(s) }()
	select {
	case n := <-done:
		if n < len(s)/8 {
			t.Errorf("%d tokens for %d letters", n, len(s))
		}
	case <-timeAfter(t, 20):
		t.Fatal("400 kB of letters took more than 20 s")
	}
}

// TestCount_Concurrent counts from many goroutines at once, the first counts building the
// vocabularies among them (run with -race).
func TestCount_Concurrent(t *testing.T) {
	text := "Concurrent counting must give every goroutine the same answer. 同じ答え."
	want := map[string]int{}
	for _, name := range []string{tokens.O200kBase, tokens.Cl100kBase} {
		want[name] = lookup(t, name).Count(text)
	}
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, name := range []string{tokens.O200kBase, tokens.Cl100kBase} {
				if got := lookup(t, name).Count(text); got != want[name] {
					t.Errorf("%s: %d, want %d", name, got, want[name])
				}
			}
		}()
	}
	wg.Wait()
}

// TestRegistered_AreCached: the registered encodings count a long text they have seen
// without the tokenizer (which allocates thousands of times per prompt), and give the
// tokenizer's count.
func TestRegistered_AreCached(t *testing.T) {
	prompt := readSystemPrompt(t)
	for _, name := range []string{tokens.O200kBase, tokens.Cl100kBase} {
		enc := lookup(t, name)
		if enc.Name() != name {
			t.Errorf("%s registered as %q", name, enc.Name())
		}
		first := enc.Count(prompt)
		if n := testing.AllocsPerRun(10, func() {
			if enc.Count(prompt) != first {
				t.Errorf("%s: a second count differs", name)
			}
		}); n != 0 {
			t.Errorf("%s: %v allocations counting a text a second time: not cached", name, n)
		}
	}
}
