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

var year2200 = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)

// poisoned is a store whose advice someone wrote by hand: it returns what it was given,
// whatever that is, and keeps what the pipelines advise apart.
type poisoned struct {
	mu sync.Mutex
	m  map[string]Advice
}

func (s *poisoned) Advise(string, Advice) {}

func (s *poisoned) Advice(name string) Advice {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[name]
}

func (s *poisoned) set(name string, a Advice) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]Advice{}
	}
	s.m[name] = a
}

// An opening stored as lasting until the year 2200 holds for the pipeline's own break, then a
// probe closes the circuit; a pause until 2200 lasts the longest pause, then one probe ends it
// for good although the store still says 2200; a closing from 2200 does not close a circuit
// that this instance opened.
func TestShared_PoisonedAdviceHoldsAtMostTheBreakAndTheLongestPause(t *testing.T) {
	var calls atomic.Int32
	var code atomic.Int32
	code.Store(200)
	s := newScript(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(int(code.Load()))
	})
	clock := newManualClock()
	store := &poisoned{}
	o := testOptions()
	o.RetryCount, o.CircuitBreakerThreshold, o.CircuitBreakerDurationSeconds = 0, 2, 30
	o.RateLimitMaxPauseSeconds = 60
	store.set("openai", Advice{OpenedAt: clock.Now(), OpenUntil: year2200})
	a, pa := client(t, o, WithName("openai"), WithClock(clock), WithSharedState(store))
	if _, err := doCtx(t, a, context.Background(), s.url()); !errors.Is(err, ErrCircuitOpen) {
		t.Fatalf("the stored opening does not hold: %v", err)
	}
	if info := pa.CircuitInfo(); info.State != CircuitOpen || info.NextProbeIn > 30*time.Second {
		t.Fatalf("adopted opening: %+v, want at most the pipeline's break of 30s", info)
	}
	clock.Advance(30 * time.Second)
	if _, err := doCtx(t, a, context.Background(), s.url()); err != nil || pa.CircuitState() != CircuitClosed {
		t.Fatalf("after the break the probe should close the circuit: %v, %v", err, pa.CircuitState())
	}

	store.set("claude", Advice{CoolUntil: year2200})
	b, pb := client(t, o, WithName("claude"), WithClock(clock), WithSharedState(store))
	call := &Call{}
	call.Init(context.Background(), false)
	call.MaxWait = time.Second
	_, err := doCtx(t, b, call, s.url())
	var ce *CooldownError
	if !errors.As(err, &ce) || ce.RetryAfter > time.Minute {
		t.Fatalf("stored pause: %v, want one of at most the longest pause (1m)", err)
	}
	clock.Advance(time.Minute)
	before := calls.Load()
	for i := range 3 {
		if _, err := doCtx(t, b, context.Background(), s.url()); err != nil {
			t.Fatalf("call %d after the longest pause: %v", i, err)
		}
	}
	if calls.Load()-before != 3 || pb.CoolingFor() != 0 {
		t.Fatalf("%d calls sent after the pause, pausing %v", calls.Load()-before, pb.CoolingFor())
	}

	store.set("gemini", Advice{ClosedAt: year2200})
	code.Store(503)
	c, pc := client(t, o, WithName("gemini"), WithClock(clock), WithSharedState(store))
	for range 2 {
		_, _ = doCtx(t, c, context.Background(), s.url())
	}
	before = calls.Load()
	if _, err := doCtx(t, c, context.Background(), s.url()); !errors.Is(err, ErrCircuitOpen) || calls.Load() != before {
		t.Fatalf("a closing from 2200 closed this instance's circuit: %v, state %v", err, pc.CircuitState())
	}
}

// skewed is a clock that runs ahead of another by a fixed amount.
type skewed struct {
	*manualClock
	ahead time.Duration
}

func (c skewed) Now() time.Time { return c.manualClock.Now().Add(c.ahead) }

// An opening written by an instance whose clock runs ahead holds on another for at most the
// break plus the difference, when that is within SharedClockSkew, and plus SharedClockSkew
// when it is more.
func TestShared_ClockSkewAddsAtMostTheBoundToAnOpening(t *testing.T) {
	s := newScript(t, status(503, ""))
	for _, ahead := range []time.Duration{3 * time.Second, time.Hour} {
		clock := newManualClock()
		shared := &memShared{}
		o := testOptions()
		o.RetryCount, o.CircuitBreakerThreshold, o.CircuitBreakerDurationSeconds = 0, 2, 10
		a, _ := client(t, o, WithName("openai"), WithClock(skewed{clock, ahead}), WithSharedState(shared))
		b, pb := client(t, o, WithName("openai"), WithClock(clock), WithSharedState(shared))
		for range 2 {
			_, _ = doCtx(t, a, context.Background(), s.url())
		}
		if _, err := doCtx(t, b, context.Background(), s.url()); !errors.Is(err, ErrCircuitOpen) {
			t.Fatalf("ahead by %v: b's call: %v", ahead, err)
		}
		want := 10*time.Second + min(ahead, SharedClockSkew)
		if info := pb.CircuitInfo(); info.State != CircuitOpen || info.NextProbeIn > want {
			t.Fatalf("ahead by %v: %+v, want open for at most %v", ahead, info, want)
		}
	}
}

// A fresh instance shows an opening the fleet knows in its circuit before any call.
func TestShared_AnOpeningTheFleetKnowsShowsBeforeAnyCall(t *testing.T) {
	clock := newManualClock()
	store := &poisoned{}
	store.set("openai", Advice{OpenedAt: clock.Now().Add(-time.Second), OpenUntil: clock.Now().Add(20 * time.Second)})
	p, err := New(testOptions(), WithName("openai"), WithClock(clock), WithSharedState(store))
	if err != nil {
		t.Fatal(err)
	}
	if info := p.CircuitInfo(); info.State != CircuitOpen || info.NextProbeIn != 20*time.Second {
		t.Fatalf("%+v", info)
	}
}

// dryBudget is a store whose budget is damaged: it grants nothing and gives a wait of its
// own (0: none), until it has been asked 1000 times.
type dryBudget struct {
	memShared
	wait  time.Duration
	takes atomic.Int32
}

func (s *dryBudget) TakeBudget(_ context.Context, _ string, _, want int64, _ time.Time) (int64, time.Duration, error) {
	if s.takes.Add(1) > 1000 {
		return want, 0, nil
	}
	return 0, s.wait, nil
}

func (s *dryBudget) FailClosed() bool { return false }

// A damaged fleet budget that answers "no room" with no wait, or with a wait of a century,
// makes a call wait within its own limit and then refuse, after a few questions to the store.
func TestShared_ADamagedBudgetNeverMakesACallLoopOrWaitBeyondItsLimit(t *testing.T) {
	s := newScript(t, ok())
	for _, wait := range []time.Duration{0, -time.Second, 100 * 365 * 24 * time.Hour} {
		store := &dryBudget{wait: wait}
		o := instantOptions()
		o.PaceRequestsPerMinute = 60
		c, _ := client(t, o, WithName("openai"), WithClock(newInstantClock()), WithSharedState(store))
		// The first call spends the instance's first unit of the fleet's budget, which is dry.
		call := &Call{}
		call.Init(context.Background(), false)
		call.MaxWait = 3 * time.Second
		_, err := doCtx(t, c, call, s.url())
		var ce *CooldownError
		if !errors.As(err, &ce) || ce.RetryAfter > time.Second+SharedClockSkew {
			t.Fatalf("store wait %v: %v, want a refusal after at most the call's 3s", wait, err)
		}
		if n := store.takes.Load(); n > 10 {
			t.Fatalf("store wait %v: %d questions to the store for one call", wait, n)
		}
	}
}

// watched is a store that reports its trouble through Watchers.
type watched struct {
	memShared
	ws Watchers
}

func (s *watched) Watch(f func(error)) (stop func()) { return s.ws.Add(f) }

func (s *watched) fire(err error) { s.ws.Notify(err) }

// Three pipelines sharing one store report its failure and its recovery once each, through
// the first pipeline still sharing.
func TestShared_StoreTroubleIsReportedOncePerStoreNotPerPipeline(t *testing.T) {
	store := &watched{}
	rec := &recorder{}
	var ps []*Pipeline
	for _, name := range []string{"a", "b", "c"} {
		p, err := New(testOptions(), WithName(name), WithSharedState(store), OnEvent(rec.observe))
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	store.fire(errors.New("down"))
	store.fire(nil)
	failed, recovered := rec.kind(EventSharedStateFailed), rec.kind(EventSharedStateRecovered)
	if len(failed) != 1 || len(recovered) != 1 || failed[0].Pipeline != "a" {
		t.Fatalf("%d failure and %d recovery events (%+v), want one of each", len(failed), len(recovered), failed)
	}
	ps[0].StopSharing()
	store.fire(errors.New("down again"))
	if failed = rec.kind(EventSharedStateFailed); len(failed) != 2 || failed[1].Pipeline != "b" {
		t.Fatalf("after a stopped sharing: %+v", failed)
	}
	for _, p := range ps {
		p.StopSharing()
	}
	store.fire(nil)
	if n := len(rec.kind(EventSharedStateRecovered)); n != 1 {
		t.Fatalf("%d recoveries reported after every pipeline stopped sharing", n)
	}
}

// joiner is a store that counts who joins and leaves, and records the names advised.
type joiner struct {
	memShared
	mu      sync.Mutex
	members map[string]int
	joins   int
}

func (s *joiner) Join(_ context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.members == nil {
		s.members = map[string]int{}
	}
	s.members[name]++
	s.joins++
	return nil
}

func (s *joiner) Leave(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.members[name]--; s.members[name] == 0 {
		delete(s.members, name)
	}
}

// A scope set before the first call names what the pipeline shares under, and joins the store
// once; set after it, it changes nothing. StopSharing leaves the store once.
func TestShared_ScopeNamesTheSharingAndStopSharingLeaves(t *testing.T) {
	s := newScript(t, status(429, "", "Retry-After", "30"))
	store := &joiner{}
	o := testOptions()
	o.RetryCount = 0
	c, p := client(t, o, WithName("openai"), WithSharedState(store))
	if !p.SetSharedScope("k1") || p.SharedName() != "openai@k1" {
		t.Fatalf("scope not taken: %q", p.SharedName())
	}
	_, _ = doCtx(t, c, context.Background(), s.url())
	if p.SetSharedScope("k2") {
		t.Fatal("a scope set after the first call was taken")
	}
	if store.Advice("openai@k1").CoolUntil.IsZero() || store.Advice("openai") != (Advice{}) {
		t.Fatalf("the pause was not shared under the scoped name: %+v", store.memShared.m)
	}
	if store.joins != 1 || store.members["openai@k1"] != 1 {
		t.Fatalf("joins %d, members %v", store.joins, store.members)
	}
	p.StopSharing()
	p.StopSharing()
	if len(store.members) != 0 {
		t.Fatalf("members after StopSharing: %v", store.members)
	}
	// Alone now: a pause the store holds is not adopted any more by a fresh look.
	store.memShared.Advise("openai@k1", Advice{CoolUntil: time.Now().Add(time.Hour)})
	if p.CircuitInfo().CoolingFor > 31*time.Second {
		t.Fatal("a pipeline that stopped sharing adopted advice")
	}
}
