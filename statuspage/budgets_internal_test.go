package statuspage

import (
	"testing"
	"time"
)

// The time left of a budget's window, as the server renders it, changes only with the unit it
// is shown in: an open page is not sent a new state at every refresh for it. And it reads as
// the script's countdown does.
func TestSettled_ChangesOnlyWithTheUnitShown(t *testing.T) {
	for _, c := range []struct {
		from, to time.Duration
		most     int // distinct texts at most, read every 250 ms from `from` down to `to`
	}{
		{time.Minute, 0, 7},                            // tens of seconds
		{time.Hour, time.Minute, 60},                   // minutes
		{48 * time.Hour, 47 * time.Hour, 11},           // tenths of an hour
		{31 * 24 * time.Hour, 30 * 24 * time.Hour, 11}, // tenths of a day
	} {
		seen := map[string]bool{}
		for d := c.from; d > c.to; d -= 250 * time.Millisecond {
			seen[settled(d.Milliseconds())] = true
		}
		if len(seen) > c.most {
			t.Errorf("from %s to %s: %d texts, want at most %d", c.from, c.to, len(seen), c.most)
		}
	}
	for ms, want := range map[int64]string{59_999: "50s", 9_999: "now", 3_599_999: "59m00s", 3_600_000: "1.0h",
		47*3_600_000 + 1: "47.0h", 30 * 86_400_000: "30.0d"} {
		if got := settled(ms); got != want {
			t.Errorf("settled(%d) = %q, want %q", ms, got, want)
		}
	}
}
