package mocks_test

import (
	"sync"
	"testing"
	"time"

	"github.com/steadyllm/steady/mocks"
)

// Test clocks for mocks.WithAfterFunc: every wait of the server goes through them, so no test
// of a delay depends on how fast the machine is.

// instantTimers lets every wait pass at once and records how long each was meant to last.
type instantTimers struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (c *instantTimers) after(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.mu.Unlock()
	go f()
	return func() bool { return false }
}

func (c *instantTimers) option() mocks.Option { return mocks.WithAfterFunc(c.after) }

// recorded returns the waits so far, and forgets them.
func (c *instantTimers) recorded() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.waits
	c.waits = nil
	return w
}

// manualTimers is a clock that moves only when the test advances it. armed receives the
// length of every wait as the server starts it, stopped the length of every wait that ended
// before its time (the client went away, the server closed).
type manualTimers struct {
	mu      sync.Mutex
	now     time.Duration
	pending []*manualTimer
	armed   chan time.Duration
	stopped chan time.Duration
}

type manualTimer struct {
	at     time.Duration
	f      func()
	active bool
}

func newManualTimers() *manualTimers {
	return &manualTimers{armed: make(chan time.Duration, 1024), stopped: make(chan time.Duration, 1024)}
}

func (c *manualTimers) option() mocks.Option { return mocks.WithAfterFunc(c.after) }

func (c *manualTimers) after(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	t := &manualTimer{at: c.now + d, f: f, active: true}
	c.pending = append(c.pending, t)
	c.mu.Unlock()
	c.armed <- d
	return func() bool {
		c.mu.Lock()
		was := t.active
		t.active = false
		c.mu.Unlock()
		if was {
			c.stopped <- d
		}
		return was
	}
}

// advance moves the clock by d and fires the timers that fell due.
func (c *manualTimers) advance(d time.Duration) {
	c.mu.Lock()
	c.now += d
	var due []func()
	kept := c.pending[:0]
	for _, t := range c.pending {
		switch {
		case t.active && t.at <= c.now:
			t.active = false
			due = append(due, t.f)
		case t.active:
			kept = append(kept, t)
		}
	}
	c.pending = kept
	c.mu.Unlock()
	for _, f := range due {
		go f()
	}
}

// receive returns the next value of ch; it fails the test if none comes within ten seconds,
// a bound on a broken test, not a timing anyone asserts.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s", what)
		panic("unreachable")
	}
}
