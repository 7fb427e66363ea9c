package tiktoken_test

import (
	"testing"
	"time"
)

// timeAfter is a generous deadline for a test that must not hang.
func timeAfter(t testing.TB, seconds int) <-chan time.Time {
	t.Helper()
	return time.After(time.Duration(seconds) * time.Second)
}
