package backend

import (
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
