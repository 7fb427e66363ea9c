//go:build !race

package client_test

// raceEnabled reports a test binary built with -race (see race_on_test.go).
const raceEnabled = false
