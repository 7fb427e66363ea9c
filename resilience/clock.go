package resilience

import "time"

// Clock is the pipeline's source of time: the wall clock by default, a fake one in tests
// (see WithClock). Every wait in the pipeline — backoff sleeps, the total, attempt and
// stream-idle timeouts, the bulkhead queue timeout, the retry budget window, the circuit
// breaker's break — goes through it.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has elapsed, unless the returned timer is
	// stopped first. It behaves as time.AfterFunc.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending call started by Clock.AfterFunc. *time.Timer implements it.
type Timer interface {
	// Stop prevents the call if it has not started and reports whether it did so.
	Stop() bool
	// Reset re-arms the timer to fire after d and reports whether it had been active.
	Reset(d time.Duration) bool
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
