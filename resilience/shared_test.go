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
	cur := s.m[name]
	if a.OpenUntil.After(cur.OpenUntil) {
		cur.OpenUntil = a.OpenUntil
	}
	if a.CoolUntil.After(cur.CoolUntil) {
		cur.CoolUntil = a.CoolUntil
	}
	s.m[name] = cur
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
	if info := pb.CircuitInfo(); info.NextProbeIn <= 20*time.Second {
		t.Fatalf("b's break %v, want a's", info.NextProbeIn)
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
