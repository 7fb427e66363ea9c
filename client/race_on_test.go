//go:build race

package client_test

// raceEnabled reports a test binary built with -race, whose sync.Pools drop objects at random:
// counts of allocations through the HTTP stack vary from run to run there.
const raceEnabled = true
