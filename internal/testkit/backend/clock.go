package backend

import (
	"sync"
	"time"

	"github.com/steadyllm/steady/resilience"
)

// ScaledClock runs Speed times faster than the wall clock from Start: a minute of it passes
// in a second when Speed is 60. Tests of per-minute limits give it to the pipelines, the
// fake server and the shared budgets alike, so that every side means the same minute.
type ScaledClock struct {
	Start time.Time
	Speed int64
}

// NewScaledClock returns a clock that starts now and runs speed times faster.
func NewScaledClock(speed int64) ScaledClock { return ScaledClock{Start: time.Now(), Speed: speed} }

// Now returns the scaled time.
func (c ScaledClock) Now() time.Time {
	return c.Start.Add(time.Duration(int64(time.Since(c.Start)) * c.Speed))
}

// AfterFunc runs f after d of scaled time.
func (c ScaledClock) AfterFunc(d time.Duration, f func()) resilience.Timer {
	return scaledTimer{time.AfterFunc(d/time.Duration(c.Speed), f), c.Speed}
}

type scaledTimer struct {
	t     *time.Timer
	speed int64
}

func (t scaledTimer) Stop() bool                 { return t.t.Stop() }
func (t scaledTimer) Reset(d time.Duration) bool { return t.t.Reset(d / time.Duration(t.speed)) }

// ManualClock is a clock that moves only when a test advances it: timers due by then fire,
// each in its own goroutine. Tests of breaks and pauses give it to the pipelines
// (client.WithClock) so that an hour passes at once.
type ManualClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualTimer
}

type manualTimer struct {
	c      *ManualClock
	at     time.Time
	f      func()
	active bool
}

// NewManualClock returns a manual clock standing at a fixed time.
func NewManualClock() *ManualClock { return &ManualClock{now: time.Unix(1_800_000_000, 0)} }

// Now returns the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc runs f once the clock has been advanced by d.
func (c *ManualClock) AfterFunc(d time.Duration, f func()) resilience.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTimer{c: c, at: c.now.Add(d), f: f, active: true}
	c.timers = append(c.timers, t)
	return t
}

// Advance moves the clock by d and runs the timers that fell due.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []func()
	kept := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.active && !t.at.After(c.now):
			t.active = false
			due = append(due, t.f)
		case t.active:
			kept = append(kept, t)
		}
	}
	c.timers = kept
	c.mu.Unlock()
	for _, f := range due {
		go f()
	}
}

func (t *manualTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.active
	t.active = false
	return was
}

func (t *manualTimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.active
	t.at = t.c.now.Add(d)
	if !t.active {
		t.active = true
		t.c.timers = append(t.c.timers, t)
	}
	return was
}
