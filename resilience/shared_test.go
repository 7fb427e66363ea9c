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

// memShared is a SharedState in memory: what a store like Redis holds, without the network.
type memShared struct {
	mu sync.Mutex
	m  map[string]Advice
}

func (s *memShared) Advise(name string, a Advice) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]Advice{}
	}
	s.m[name] = s.m[name].Merge(a)
}

func (s *memShared) Advice(name string) Advice {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[name]
}

// One instance's opened circuit and 429 pause hold on another instance sharing the state,
// without that one sending a request.
func TestShared_CircuitAndPauseHoldEverywhere(t *testing.T) {
	var calls atomic.Int32
	status := atomic.Int32{}
	status.Store(503)
	s := newScript(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if status.Load() == 429 {
			w.Header().Set("Retry-After", "30")
		}
		w.WriteHeader(int(status.Load()))
	})
	shared := &memShared{}
	o := testOptions()
	o.RetryCount, o.CircuitBreakerThreshold = 0, 2
	a, pa := client(t, o, WithName("openai"), WithSharedState(shared))
	b, pb := client(t, o, WithName("openai"), WithSharedState(shared))
	for range 2 {
		_, _ = doCtx(t, a, context.Background(), s.url())
	}
	if pa.CircuitState() != CircuitOpen || shared.Advice("openai").OpenUntil.IsZero() {
		t.Fatalf("a: %v, shared %+v", pa.CircuitState(), shared.Advice("openai"))
	}
	_, err := doCtx(t, b, context.Background(), s.url())
	if !errors.Is(err, ErrCircuitOpen) || calls.Load() != 2 || pb.CircuitState() != CircuitOpen {
		t.Fatalf("b: %v, %d calls, state %v", err, calls.Load(), pb.CircuitState())
	}
	if info, ia := pb.CircuitInfo(), pa.CircuitInfo(); info.NextProbeIn < ia.NextProbeIn-time.Second {
		t.Fatalf("b's break %v, want a's (%v)", info.NextProbeIn, ia.NextProbeIn)
	}

	// A pause: a third instance of another provider shares it.
	status.Store(429)
	c, _ := client(t, o, WithName("claude"), WithSharedState(shared))
	d, _ := client(t, o, WithName("claude"), WithSharedState(shared))
	_, _ = doCtx(t, c, context.Background(), s.url())
	call := &Call{}
	call.Init(context.Background(), false)
	call.MaxWait = time.Second
	_, err = doCtx(t, d, call, s.url())
	var ce *CooldownError
	if !errors.As(err, &ce) || ce.RetryAfter < 25*time.Second || calls.Load() != 3 {
		t.Fatalf("d: %v, %d calls", err, calls.Load())
	}
}

// memFleet is one instance's view of a memShared that also elects probes and keeps budgets
// (token buckets refilled on the callers' clock), as the Redis store does.
type memFleet struct {
	*memShared
	id         string
	failClosed bool
	down       atomic.Bool // the store "cannot be reached"
	takes      atomic.Int32
}

type memBucket struct {
	tokens float64
	at     time.Time
}

var (
	memMu      sync.Mutex
	memProbes  = map[*memShared]map[string]memProbe{}
	memBuckets = map[*memShared]map[string]*memBucket{}
)

type memProbe struct {
	owner string
	until time.Time
}

var errMemDown = errors.New("mem store down")

func (f *memFleet) ClaimProbe(_ context.Context, name string, hold time.Duration) (bool, time.Duration, error) {
	if f.down.Load() {
		return false, 0, errMemDown
	}
	memMu.Lock()
	defer memMu.Unlock()
	if memProbes[f.memShared] == nil {
		memProbes[f.memShared] = map[string]memProbe{}
	}
	now := time.Now()
	cur := memProbes[f.memShared][name]
	if cur.owner != "" && cur.owner != f.id && cur.until.After(now) {
		return false, cur.until.Sub(now), nil
	}
	memProbes[f.memShared][name] = memProbe{owner: f.id, until: now.Add(hold)}
	return true, 0, nil
}

// electedOf returns the instance that holds the probe of name in shared, "" for none.
func electedOf(shared *memShared, name string) string {
	memMu.Lock()
	defer memMu.Unlock()
	return memProbes[shared][name].owner
}

func (f *memFleet) EndProbe(name string) {
	memMu.Lock()
	defer memMu.Unlock()
	if memProbes[f.memShared][name].owner == f.id {
		delete(memProbes[f.memShared], name)
	}
}

func (f *memFleet) TakeBudget(_ context.Context, key string, perMinute, want int64, now time.Time) (int64, time.Duration, error) {
	f.takes.Add(1)
	if f.down.Load() {
		return 0, 0, errMemDown
	}
	memMu.Lock()
	defer memMu.Unlock()
	if memBuckets[f.memShared] == nil {
		memBuckets[f.memShared] = map[string]*memBucket{}
	}
	b := memBuckets[f.memShared][key]
	if b == nil {
		b = &memBucket{tokens: float64(perMinute), at: now}
		memBuckets[f.memShared][key] = b
	}
	rate := float64(perMinute) / float64(time.Minute)
	if now.After(b.at) {
		b.tokens = min(float64(perMinute), b.tokens+float64(now.Sub(b.at))*rate)
		b.at = now
	}
	got := min(want, int64(b.tokens))
	b.tokens -= float64(got)
	if got == want {
		return got, 0, nil
	}
	return got, time.Duration((float64(want-got) - b.tokens) / rate), nil
}

func (f *memFleet) FailClosed() bool { return f.failClosed }

// The fleet sends one probe per break: the instance that wins the election probes, the other
// is rejected without a request until the winner's outcome reaches it — a success closes the
// circuit everywhere, a failure reopens it everywhere.
func TestShared_OneProbeForTheFleet(t *testing.T) {
	var calls atomic.Int32
	status := atomic.Int32{}
	status.Store(503)
	hold := make(chan struct{})
	held := make(chan struct{}, 1)
	s := newScript(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Header.Get("X-Hold") != "" {
			held <- struct{}{}
			<-hold
		}
		w.WriteHeader(int(status.Load()))
	})
	shared := &memShared{}
	clock := newManualClock()
	o := testOptions()
	o.RetryCount, o.CircuitBreakerThreshold, o.CircuitBreakerDurationSeconds = 0, 2, 30
	a, pa := client(t, o, WithName("openai"), WithClock(clock), WithSharedState(&memFleet{memShared: shared, id: "a"}))
	b, pb := client(t, o, WithName("openai"), WithClock(clock), WithSharedState(&memFleet{memShared: shared, id: "b"}))
	for range 2 {
		_, _ = doCtx(t, a, context.Background(), s.url())
	}
	if _, err := doCtx(t, b, context.Background(), s.url()); !errors.Is(err, ErrCircuitOpen) || calls.Load() != 2 {
		t.Fatalf("b during the break: %v, %d calls", err, calls.Load())
	}

	// The break ends; b's call becomes the fleet's probe and is held at the server.
	clock.Advance(31 * time.Second)
	status.Store(200)
	probe := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, s.url(), nil)
		req.Header.Set("X-Hold", "1")
		resp, err := b.Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		probe <- err
	}()
	<-held
	for range 3 {
		if _, err := doCtx(t, a, context.Background(), s.url()); !errors.Is(err, ErrCircuitOpen) {
			t.Fatalf("a while b probes: %v", err)
		}
	}
	if n := calls.Load(); n != 3 {
		t.Fatalf("%d requests, want the 2 failures and one probe", n)
	}
	close(hold)
	if err := <-probe; err != nil {
		t.Fatal(err)
	}
	if pb.CircuitState() != CircuitClosed {
		t.Fatalf("b after its probe: %v", pb.CircuitState())
	}
	// The closing reaches a without a probe of its own.
	if _, err := doCtx(t, a, context.Background(), s.url()); err != nil || pa.CircuitState() != CircuitClosed {
		t.Fatalf("a after the fleet's probe: %v, %v", err, pa.CircuitState())
	}

	// A failing probe reopens the circuit for both.
	status.Store(503)
	for range 2 {
		_, _ = doCtx(t, a, context.Background(), s.url())
	}
	clock.Advance(31 * time.Second)
	// b kept the fleet's election a moment after its probe closed the circuit (keepClosing),
	// then gave it back.
	eventually(t, "b to give the election back", func() bool { return electedOf(shared, "openai") == "" })
	_, _ = doCtx(t, a, context.Background(), s.url()) // a probes and fails
	if pa.CircuitState() != CircuitOpen {
		t.Fatalf("a after a failed probe: %v", pa.CircuitState())
	}
	before := calls.Load()
	if _, err := doCtx(t, b, context.Background(), s.url()); !errors.Is(err, ErrCircuitOpen) || calls.Load() != before {
		t.Fatalf("b after a's failed probe: %v, %d new requests", err, calls.Load()-before)
	}
	if info, ia := pb.CircuitInfo(), pa.CircuitInfo(); info.State != CircuitOpen || info.NextProbeIn != ia.NextProbeIn {
		t.Fatalf("b: %+v, want a's new break (%v)", info, ia.NextProbeIn)
	}
}

// Two instances pacing one budget of 60 requests a minute send 60 between them, not 120; a
// store that cannot be reached lets calls through under each instance's own budget (fail
// open), or refuses them (fail closed).
func TestShared_FleetBudget(t *testing.T) {
	var calls atomic.Int32
	s := newScript(t, func(w http.ResponseWriter, r *http.Request) { calls.Add(1) })
	shared := &memShared{}
	clock := newManualClock()
	o := testOptions()
	o.PaceRequestsPerMinute = 60
	fa, fb := &memFleet{memShared: shared, id: "a"}, &memFleet{memShared: shared, id: "b", failClosed: true}
	a, _ := client(t, o, WithName("openai"), WithClock(clock), WithSharedState(fa))
	b, _ := client(t, o, WithName("openai"), WithClock(clock), WithSharedState(fb))
	refused := 0
	for _, c := range []*http.Client{a, b} {
		for range 40 {
			call := &Call{}
			call.Init(context.Background(), false)
			call.MaxWait = -1 // never wait: the clock does not move
			_, err := doCtx(t, c, call, s.url())
			var ce *CooldownError
			switch {
			case errors.As(err, &ce) && ce.Budget == "requests":
				refused++
			case err != nil:
				t.Fatal(err)
			}
		}
	}
	if n := calls.Load(); n > 60 || n < 58 || int(n)+refused != 80 {
		t.Fatalf("%d sent, %d refused: want at most the fleet's 60", n, refused)
	}
	if fa.takes.Load() > 45 {
		t.Fatalf("%d store round trips for 40 calls", fa.takes.Load())
	}

	// The store goes away: a fails open, b fails closed.
	clock.Advance(time.Minute)
	fa.down.Store(true)
	fb.down.Store(true)
	before := calls.Load()
	for range 5 {
		if _, err := doCtx(t, a, context.Background(), s.url()); err != nil {
			t.Fatalf("a fails open: %v", err)
		}
	}
	var sse *SharedStateError
	for i := 0; i < 200; i++ {
		_, err := doCtx(t, b, context.Background(), s.url())
		if errors.As(err, &sse) {
			break
		}
		if err != nil {
			t.Fatalf("b: %v", err)
		}
	}
	if sse == nil || !errors.Is(sse, ErrSharedStateUnavailable) || !errors.Is(sse, errMemDown) {
		t.Fatalf("b fails closed: %v", sse)
	}
	if calls.Load() <= before {
		t.Fatal("a sent nothing while the store was down")
	}
}
