package mocks

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestLimiter_TracksABoundedNumberOfKeys(t *testing.T) {
	at := time.Unix(0, 0)
	for _, tc := range []struct {
		name string
		step time.Duration // the clock's advance between keys
	}{
		{"keys that refill (one per minute)", time.Minute},
		{"keys that all stay drained (all within a second)", time.Microsecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLimiter(&RateLimits{RequestsPerMinute: 5, TokensPerMinute: 1000}, nil, nil)
			peak := 0
			for i := range 3 * maxTrackedKeys {
				at = at.Add(tc.step)
				// Long keys: the map must not hold them either.
				if _, ok := l.admit("", strings.Repeat("k", 1024)+strconv.Itoa(i), 10, at); !ok {
					t.Fatal("a limited key was not tracked")
				}
				peak = max(peak, len(l.by))
			}
			if peak > maxTrackedKeys {
				t.Errorf("held %d keys' budgets, want at most %d", peak, maxTrackedKeys)
			}
		})
	}
}

func TestLimiter_ForgetsRefilledKeysFirst(t *testing.T) {
	t0 := time.Unix(0, 0)
	l := newLimiter(&RateLimits{RequestsPerMinute: 1}, nil, nil)
	for i := range maxTrackedKeys - 1 { // drained now, refilled a minute later
		l.admit("", "idle"+strconv.Itoa(i), 1, t0)
	}
	t1 := t0.Add(2 * time.Minute)
	if st, _ := l.admit("", "busy", 1, t1); st.limited { // the table is now full
		t.Fatal("the busy key's first request was refused")
	}
	l.admit("", "newcomer", 1, t1.Add(time.Second)) // makes room
	if len(l.by) != 2 {
		t.Errorf("after the sweep %d keys are tracked, want the busy key and the newcomer", len(l.by))
	}
	if st, _ := l.admit("", "busy", 1, t1.Add(2*time.Second)); !st.limited {
		t.Error("the sweep forgot a drained key and reset its budget, though refilled keys could go")
	}
}

func TestCached_RemembersABoundedNumberOfPrompts(t *testing.T) {
	s := &Server{}
	key := func(i int) (k [sha256.Size]byte) {
		binary.LittleEndian.PutUint64(k[:], uint64(i))
		return k
	}
	for i := range 3 * promptCacheSize {
		if s.cached(key(i)) {
			t.Fatalf("prompt %d: a hit on its first use", i)
		}
	}
	if len(s.cache) != promptCacheSize {
		t.Errorf("remembers %d prompts, want %d", len(s.cache), promptCacheSize)
	}
	if !s.cached(key(3*promptCacheSize-1)) || s.cached(key(0)) {
		t.Error("want the newest prompts remembered and the oldest forgotten")
	}
}

// A request whose reading of the clock is older than the bucket's last (it read the clock
// before another request took the bucket) finds no time passed: the level neither drops nor
// is the same moment refilled twice when a later request comes.
func TestBucket_AnEarlierReadingOfTheClockChangesNothing(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	b := &bucket{limit: 60}
	b.refill(start, time.Minute)
	b.level = 30
	b.refill(start.Add(10*time.Second), time.Minute) // 10 more
	b.refill(start.Add(5*time.Second), time.Minute)  // late: read before the one above
	if b.level != 40 {
		t.Fatalf("level %v after a late reading, want 40", b.level)
	}
	b.refill(start.Add(20*time.Second), time.Minute) // 10 s after the latest: 10 more
	if b.level != 50 {
		t.Fatalf("level %v, want 50: the 5 s before the late reading refilled twice", b.level)
	}
}
