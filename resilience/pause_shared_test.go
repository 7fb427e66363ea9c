package resilience

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// dayLong429 answers 429 with a day's Retry-After; a request with X-Hold waits for release.
func dayLong429(t *testing.T, release <-chan struct{}) (*script, *atomic.Int32) {
	var calls atomic.Int32
	s := newScript(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Header.Get("X-Hold") != "" {
			<-release
		}
		w.Header().Set("Retry-After", "86400")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	return s, &calls
}

// A pause one instance cut at the maximum is cut on every instance, each with its one probe:
// the others hear the server's own end and cut it themselves, so when the pause ends the
// fleet does not send a burst.
func TestShared_ACutPauseIsCutEverywhereWithOneProbe(t *testing.T) {
	release := make(chan struct{})
	s, calls := dayLong429(t, release)
	clock := newManualClock()
	shared := &memShared{}
	o := testOptions()
	o.RetryCount, o.TimeoutSeconds, o.StreamIdleTimeoutSeconds = 0, 0, 0
	o.RateLimitMaxPauseSeconds = 60
	a, _ := client(t, o, WithName("openai"), WithClock(clock), WithSharedState(shared))
	b, pb := client(t, o, WithName("openai"), WithClock(clock), WithSharedState(shared))
	if resp, err := doCtx(t, a, context.Background(), s.url()); err != nil || resp.StatusCode != 429 {
		t.Fatalf("first: %v %v", resp, err)
	}
	if info := pb.CircuitInfo(); info.CoolingFor != 60*time.Second || !pb.cool.capped.Load() {
		t.Fatalf("B adopted %+v (cut %v), want a pause cut at 1m0s", info, pb.cool.capped.Load())
	}
	clock.Advance(60 * time.Second)
	probe := make(chan struct{})
	go func() {
		defer close(probe)
		req, _ := http.NewRequest(http.MethodPost, s.url(), nil)
		req.Header.Set("X-Hold", "1")
		if resp, err := b.Do(req); err == nil {
			_ = resp.Body.Close()
		}
	}()
	eventually(t, "B's probe to reach the server", func() bool { return calls.Load() == 2 })
	call := &Call{}
	call.Init(context.Background(), false)
	call.MaxWait = -1
	if _, err := doCtx(t, b, call, s.url()); !errors.Is(err, ErrCoolingDown) {
		t.Fatalf("a second call on B while its probe is out: %v", err)
	}
	close(release)
	<-probe
	if n := calls.Load(); n != 2 {
		t.Fatalf("%d requests, want the first and B's probe", n)
	}
}

// An instance whose own pause was cut keeps its probe when it adopts another instance's later
// pause: only a probe's answer clears the cut.
func TestShared_AdoptingALaterPauseKeepsTheProbe(t *testing.T) {
	s, _ := dayLong429(t, nil)
	clock := newManualClock()
	shared := &memShared{}
	o := testOptions()
	o.RetryCount, o.TimeoutSeconds, o.StreamIdleTimeoutSeconds = 0, 0, 0
	o.RateLimitMaxPauseSeconds = 60
	a, pa := client(t, o, WithName("openai"), WithClock(clock), WithSharedState(shared))
	if resp, err := doCtx(t, a, context.Background(), s.url()); err != nil || resp.StatusCode != 429 {
		t.Fatalf("first: %v %v", resp, err)
	}
	clock.Advance(time.Second)
	shared.Advise(pa.SharedName(), Advice{CoolUntil: clock.Now().Add(90 * time.Second)}) // another instance, later
	if info := pa.CircuitInfo(); !pa.cool.capped.Load() || info.CoolingFor != 60*time.Second {
		t.Fatalf("after adopting a later pause: cooling %s, cut %v; want a pause cut at 1m0s with its probe",
			info.CoolingFor, pa.cool.capped.Load())
	}
}

// A probe's answer and another call's day-long 429 arriving together never leave a pause cut
// at the maximum without its probe.
func TestCooldown_AnsweredAndExtendTogetherKeepTheProbe(t *testing.T) {
	o := testOptions()
	o.RateLimitMaxPauseSeconds = 60
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	c := &p.cool
	ok200 := &http.Response{StatusCode: http.StatusOK}
	for i := range 5000 {
		c.end()
		c.set(1, true, false) // a cut pause that is over, its probe out
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Add(2)
		go func() { defer wg.Done(); <-start; c.answered(ok200, nil) }()
		go func() {
			defer wg.Done()
			<-start
			c.extend(context.Background(), c.ev.now(), 24*time.Hour, true)
		}()
		close(start)
		wg.Wait()
		if c.until.Load() > c.ev.now().UnixNano() && !c.capped.Load() {
			t.Fatalf("round %d: a pause cut at the maximum was left without its probe", i)
		}
	}
}

// blockingJoiner is a store whose first read of the fleet's view hangs until released.
type blockingJoiner struct {
	memShared
	release chan struct{}
	joined  atomic.Int32
	left    atomic.Int32
}

func (s *blockingJoiner) Join(ctx context.Context, name string) error {
	<-s.release
	s.joined.Add(1)
	return nil
}
func (s *blockingJoiner) Leave(string) { s.left.Add(1) }

// A call never waits for the store to be joined: a bare pipeline's first call joins it in the
// background (the client joins at construction, through SetSharedScope); a StopSharing that
// comes before the join is done leaves as soon as it is.
func TestShared_AFirstCallNeverWaitsForTheJoin(t *testing.T) {
	store := &blockingJoiner{release: make(chan struct{})}
	s := newScript(t, ok())
	c, p := client(t, testOptions(), WithName("openai"), WithSharedState(store))
	resp, err := doCtx(t, c, context.Background(), s.url()) // would hang here if it waited
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("first call: %v %v", resp, err)
	}
	p.StopSharing()
	close(store.release)
	eventually(t, "the join to end and be undone", func() bool { return store.joined.Load() == 1 && store.left.Load() == 1 })
}
