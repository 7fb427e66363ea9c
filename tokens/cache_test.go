package tokens_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/steadyllm/steady/tokens"
)

// counting is an Encoding that counts its calls; its count of a text is the text's length
// plus the sum of its bytes, so that texts of one length count differently.
type counting struct{ calls atomic.Int64 }

func (c *counting) Name() string { return "counting" }
func (c *counting) Count(s string) int {
	c.calls.Add(1)
	n := len(s)
	for i := 0; i < len(s); i++ {
		n += int(s[i])
	}
	return n
}

func long(i int) string { return fmt.Sprintf("%04d", i) + strings.Repeat("x", tokens.CachedMinBytes) }

func TestCached_CountsALongTextOnce(t *testing.T) {
	inner := &counting{}
	enc := tokens.Cached(inner, 16)
	if enc.Name() != "counting" {
		t.Errorf("Name %q", enc.Name())
	}
	s := long(1)
	want := (&counting{}).Count(s)
	for i := 0; i < 5; i++ {
		if got := enc.Count(s); got != want {
			t.Fatalf("count %d, want %d", got, want)
		}
	}
	if n := inner.calls.Load(); n != 1 {
		t.Errorf("the inner encoding counted the text %d times, want 1", n)
	}
	// A text of the same length that differs by one byte is another entry.
	other := long(2)
	if got, want := enc.Count(other), (&counting{}).Count(other); got != want {
		t.Errorf("other text: %d, want %d", got, want)
	}
	// Short texts are counted every time.
	inner.calls.Store(0)
	short := strings.Repeat("y", tokens.CachedMinBytes-1)
	enc.Count(short)
	enc.Count(short)
	if n := inner.calls.Load(); n != 2 {
		t.Errorf("a %d-byte text was counted %d times in two calls, want 2", len(short), n)
	}
}

// TestCached_EvictsByReplacing: with one entry, texts that alternate replace each other and
// every count is still the inner encoding's.
func TestCached_EvictsByReplacing(t *testing.T) {
	inner := &counting{}
	enc := tokens.Cached(inner, 1)
	a, b := long(1), long(2)
	for i := 0; i < 4; i++ {
		for _, s := range []string{a, b} {
			if got, want := enc.Count(s), (&counting{}).Count(s); got != want {
				t.Fatalf("%d, want %d", got, want)
			}
		}
	}
	if n := inner.calls.Load(); n != 8 {
		t.Errorf("%d inner counts, want 8 (every call a miss)", n)
	}
}

func TestCached_Edges(t *testing.T) {
	if tokens.Cached(nil, 10) != nil {
		t.Error("Cached(nil) is not nil")
	}
	inner := &counting{}
	for _, n := range []int{0, -1} {
		if tokens.Cached(inner, n) != tokens.Encoding(inner) {
			t.Errorf("Cached(enc, %d) is not enc", n)
		}
	}
	if tokens.Cached(inner, 1).Count("") != 0 {
		t.Error("the empty string counts")
	}
}

// TestCached_Concurrent counts many texts from many goroutines through a cache smaller than
// the set, so that places are overwritten while they are read; every count must be the
// inner encoding's (run with -race).
func TestCached_Concurrent(t *testing.T) {
	enc := tokens.Cached(&counting{}, 8)
	texts := make([]string, 64)
	want := make([]int, len(texts))
	for i := range texts {
		texts[i] = long(i)
		want[i] = (&counting{}).Count(texts[i])
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < 200; r++ {
				i := (r*7 + g*13) % len(texts)
				if got := enc.Count(texts[i]); got != want[i] {
					t.Errorf("text %d: %d, want %d", i, got, want[i])
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestCached_AllocatesNothing(t *testing.T) {
	prompt := readSystemPrompt(t)
	enc := tokens.Cached(tokens.Heuristic, 4)
	enc.Count(prompt) // the first long text allocates the table
	if n := testing.AllocsPerRun(100, func() { enc.Count(prompt) }); n != 0 {
		t.Errorf("hit: %v allocations", n)
	}
	a, b := long(1), long(2)
	miss := tokens.Cached(tokens.Heuristic, 1)
	miss.Count(a)
	if n := testing.AllocsPerRun(100, func() { miss.Count(a); miss.Count(b) }); n != 0 {
		t.Errorf("miss: %v allocations", n)
	}
}
