package interop

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/steadyllm/steady/mocks"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newServer starts a fake closed at the end of the test.
func newServer(t *testing.T, opts ...mocks.Option) *mocks.Server {
	t.Helper()
	s := mocks.NewServer(opts...)
	t.Cleanup(s.Close)
	return s
}

// checkAttempts asserts that the journal holds n attempts of one call, numbered by the SDK's
// X-Stainless-Retry-Count header 0, 1, …, and that the gap before each retry is at least
// minGap (a lower bound only: timing assertions never bound from above).
func checkAttempts(t *testing.T, s *mocks.Server, n int, minGap time.Duration) {
	t.Helper()
	reqs := s.Journal().Requests()
	if len(reqs) != n {
		var steps []string
		for _, r := range reqs {
			steps = append(steps, r.Step)
		}
		t.Fatalf("%d attempts %v, want %d", len(reqs), steps, n)
	}
	for i, r := range reqs {
		if got, ok := r.RetryCount(); !ok || got != i {
			t.Errorf("attempt %d: X-Stainless-Retry-Count = %q", i+1, r.Header.Get("X-Stainless-Retry-Count"))
		}
	}
	for i, gap := range s.Journal().Intervals() {
		if gap < minGap {
			t.Errorf("retry %d came %v after the previous attempt, want at least %v", i+1, gap, minGap)
		}
	}
}

// hint is the retry-after-ms the tests send; minGap allows for coarse timers.
const (
	hint   = 120 * time.Millisecond
	minGap = hint * 9 / 10
)
