package resilience

import (
	"context"
	"errors"
	"testing"
)

type tagKey struct{}

// fromCall reports whether e carries the context of the call tagged with tag.
func fromCall(e Event, tag string) bool {
	return e.Context != nil && e.Context.Value(tagKey{}) == tag
}

func TestEvents_CarryTheCallsContext(t *testing.T) {
	s := newScript(t, status(429, `{}`, "Retry-After-Ms", "1"), status(503, `{}`), ok())
	rec := &recorder{}
	o := testOptions()
	o.CircuitBreakerThreshold = 1
	c, _ := client(t, o, OnEvent(rec.observe))

	ctx := context.WithValue(context.Background(), tagKey{}, "first")
	resp, err := postCtx(ctx, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	kinds := map[EventType]int{}
	for _, e := range rec.all() {
		if !fromCall(e, "first") {
			t.Errorf("%s event without the call's context", e.Type)
		}
		kinds[e.Type]++
	}
	if kinds[EventAttemptStarted] != 3 || kinds[EventAttemptFinished] != 3 || kinds[EventRetryScheduled] != 2 {
		t.Errorf("events %v", kinds)
	}
}

func TestEvents_RejectionsTimeoutsAndTransitionsCarryTheCallsContext(t *testing.T) {
	done := make(chan struct{})
	defer close(done)
	s := newScript(t, stall(done))
	rec := &recorder{}
	o := testOptions()
	o.RetryCount = 0
	o.TimeoutSeconds = 0.02
	o.CircuitBreakerThreshold = 1
	o.CircuitBreakerDurationSeconds = 60
	o.BulkheadMaxConcurrency = 1
	o.BulkheadMaxQueue = 0
	c, p := client(t, o, OnEvent(rec.observe))

	// The call times out, which counts as a failure and trips the circuit.
	if _, err := postCtx(context.WithValue(context.Background(), tagKey{}, "slow"), c, s.url(), `{}`); !errors.Is(err, ErrTimeout) {
		t.Fatalf("slow call: %v", err)
	}
	// The next is rejected by the open circuit.
	if _, err := postCtx(context.WithValue(context.Background(), tagKey{}, "rejected"), c, s.url(), `{}`); !errors.Is(err, ErrCircuitOpen) {
		t.Fatalf("rejected call: %v", err)
	}
	// Isolation is no call's doing.
	p.Isolate()
	for _, tc := range []struct {
		kind EventType
		tag  string
	}{{EventTimeout, "slow"}, {EventBreakerStateChanged, "slow"}, {EventBreakerRejected, "rejected"}} {
		found := false
		for _, e := range rec.kind(tc.kind) {
			if e.To == CircuitIsolated {
				if e.Context != nil {
					t.Errorf("isolation event has a context")
				}
				continue
			}
			found = true
			if !fromCall(e, tc.tag) {
				t.Errorf("%s event lacks the context of call %q", tc.kind, tc.tag)
			}
		}
		if !found {
			t.Errorf("no %s event", tc.kind)
		}
	}
}

func TestEvents_BulkheadRejectionCarriesTheCallsContext(t *testing.T) {
	s := newScript(t, ok())
	rec := &recorder{}
	o := testOptions()
	o.BulkheadMaxConcurrency = 1
	o.BulkheadMaxQueue = 0
	c, _ := client(t, o, OnEvent(rec.observe))
	held, err := post(t, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Body.Close()
	_, err = postCtx(context.WithValue(context.Background(), tagKey{}, "turned away"), c, s.url(), `{}`)
	if !errors.Is(err, ErrBulkheadRejected) {
		t.Fatalf("err %v", err)
	}
	rej := rec.kind(EventBulkheadRejected)
	if len(rej) != 1 || !fromCall(rej[0], "turned away") {
		t.Errorf("bulkhead events %+v", rej)
	}
}

func TestEvents_TransitionSeenByAReadHasNoContext(t *testing.T) {
	s := newScript(t, status(503, `{}`))
	rec := &recorder{}
	o := testOptions()
	o.RetryCount = 0
	o.CircuitBreakerThreshold = 1
	o.CircuitBreakerDurationSeconds = 0.005
	c, p := client(t, o, OnEvent(rec.observe))
	resp, err := postCtx(context.WithValue(context.Background(), tagKey{}, "tripper"), c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	eventually(t, "half-open", func() bool { return p.CircuitState() == CircuitHalfOpen })
	var opened, halfOpen bool
	for _, e := range rec.kind(EventBreakerStateChanged) {
		switch e.To {
		case CircuitOpen:
			opened = fromCall(e, "tripper")
		case CircuitHalfOpen:
			halfOpen = e.Context == nil
		}
	}
	if !opened || !halfOpen {
		t.Errorf("open with the call's context: %v; half-open without context: %v (%+v)", opened, halfOpen,
			rec.kind(EventBreakerStateChanged))
	}
}
