package tokens

import (
	"hash/maphash"
	"math"
	"math/bits"
	"sync/atomic"
)

// CachedMinBytes is the shortest text a Cached encoding looks up: a shorter one is counted
// each time, since hashing it costs about what counting it does.
const CachedMinBytes = 256

// MaxCachedEntries bounds the entries of a Cached encoding (16 bytes each: 16 MiB).
const MaxCachedEntries = 1 << 20

// Cached returns enc with a cache of its counts of texts of CachedMinBytes or more: the
// system prompt, tool definitions and documents a service sends on every call are counted
// once. Name returns enc's name, so the cached encoding can be registered in enc's place.
//
// The cache holds entries counts — rounded up to a power of two, at most MaxCachedEntries —
// in 16 bytes each, allocated once, on the first count of a long text: 4,096 entries take
// 64 KiB. Each text has one place,
// chosen by its hash; a text that lands on a taken place replaces the count there. It is
// safe for concurrent use without locks, and allocates nothing beyond enc's own counting.
//
// A text is known by its length and a 64-bit hash (hash/maphash, seeded at random per
// cache, so collisions cannot be prepared in advance); the text itself is not kept. Two
// different texts of the same length and hash would share a count: for any one lookup the
// chance is about 2⁻⁶⁴ (5·10⁻²⁰), a wrong estimate once in some 500 years at a billion
// lookups a second. A count read while another goroutine writes the same place is checked
// against the hash too, and is taken as a miss when it does not belong to the text.
//
// A nil enc returns nil; entries < 1 returns enc itself.
func Cached(enc Encoding, entries int) Encoding {
	if enc == nil || entries < 1 {
		return enc
	}
	entries = min(entries, MaxCachedEntries)
	size := 1 << bits.Len(uint(entries-1))
	return &cached{enc: enc, seed: maphash.MakeSeed(), size: size}
}

type cached struct {
	enc   Encoding
	seed  maphash.Seed
	size  int                    // a power of two
	slots atomic.Pointer[[]slot] // nil until the first long text
}

// slot is one entry. val packs the text's length (high 32 bits) and its count (low 32);
// key is the text's hash XOR val, so that a reader that loads key from one write and val
// from another sees a hash that does not match (the lockless hashing of chess programs'
// transposition tables). A zero slot matches no text: lengths start at CachedMinBytes.
type slot struct {
	key, val atomic.Uint64
}

// Name returns the name of the encoding the cache wraps.
func (c *cached) Name() string { return c.enc.Name() }

// Count returns the wrapped encoding's count of text, from the cache when text is there.
func (c *cached) Count(text string) int {
	if len(text) < CachedMinBytes || uint64(len(text)) > math.MaxUint32 {
		return c.enc.Count(text)
	}
	slots := c.slots.Load()
	if slots == nil {
		fresh := make([]slot, c.size)
		c.slots.CompareAndSwap(nil, &fresh) // a concurrent first count may have won
		slots = c.slots.Load()
	}
	h := maphash.String(c.seed, text)
	s := &(*slots)[h&uint64(c.size-1)]
	val := s.val.Load()
	if s.key.Load()^val == h && val>>32 == uint64(len(text)) {
		return int(uint32(val))
	}
	n := c.enc.Count(text)
	if n >= 0 && uint64(n) <= math.MaxUint32 {
		val = uint64(len(text))<<32 | uint64(n)
		s.val.Store(val)
		s.key.Store(h ^ val)
	}
	return n
}
