package tokens

import (
	"hash/maphash"
	"strings"
	"testing"
)

// calls counts its calls; texts of one length and different first bytes count differently.
type calls struct{ n int }

func (c *calls) Name() string       { return "calls" }
func (c *calls) Count(s string) int { c.n++; return len(s)/4 + int(s[0])%7 }

// TestCached_TornEntryIsAMiss: a place whose key and value come from different writes (as a
// reader can see while two goroutines write it) is not taken for the text's count.
func TestCached_TornEntryIsAMiss(t *testing.T) {
	inner := &calls{}
	c := Cached(inner, 1).(*cached)
	a, b := strings.Repeat("a", 300), strings.Repeat("b", 300)
	c.Count(a)
	c.Count(a)
	if inner.n != 1 {
		t.Fatalf("%d inner counts of a repeated text", inner.n)
	}
	s := &(*c.slots.Load())[0]
	keyA := s.key.Load()
	c.Count(b) // overwrites the one place
	s.key.Store(keyA)
	inner.n = 0
	if got := c.Count(a); got != 81 || inner.n != 1 {
		t.Errorf("torn place: count %d after %d inner counts, want 81 after 1", got, inner.n)
	}
	// And a value of another length under the right hash is a miss too.
	h := maphash.String(c.seed, a)
	val := uint64(301)<<32 | 9
	s.val.Store(val)
	s.key.Store(h ^ val)
	inner.n = 0
	if got := c.Count(a); got != 81 || inner.n != 1 {
		t.Errorf("wrong length: count %d after %d inner counts, want 81 after 1", got, inner.n)
	}
}

func TestCached_Size(t *testing.T) {
	for _, tc := range []struct{ entries, size int }{{1, 1}, {2, 2}, {1000, 1024}, {4096, 4096}, {1 << 30, MaxCachedEntries}} {
		c := Cached(&calls{}, tc.entries).(*cached)
		if c.size != tc.size {
			t.Errorf("Cached(enc, %d): %d places, want %d", tc.entries, c.size, tc.size)
		}
		if c.slots.Load() != nil {
			t.Errorf("Cached(enc, %d) allocated before the first long text", tc.entries)
		}
	}
}
