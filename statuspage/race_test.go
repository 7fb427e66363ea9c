//go:build race

package statuspage_test

// raceEnabled: the race detector is on, and sync.Pool drops a share of what it is given at
// random, so a count of allocations varies by one or two from run to run.
const raceEnabled = true
