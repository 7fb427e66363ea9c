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

// A per-call policy changes the retries of its call only: a concurrent call on the same
// pipeline keeps the pipeline's.
func TestPolicy_RetriesOfOneCallOnly(t *testing.T) {
	var attempts sync.Map // X-Call → *atomic.Int32
	s := newScript(t, func(w http.ResponseWriter, r *http.Request) {
		n, _ := attempts.LoadOrStore(r.Header.Get("X-Call"), new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	o := testOptions()
	o.RetryCount = 3
	var rec recorder
	c, _ := client(t, o, OnEvent(rec.observe))
	patient := o
	patient.RetryCount = 6
	pp, err := NewPolicy("batch", patient)
	if err != nil {
		t.Fatal(err)
	}
	none := o
	none.RetryCount = 0
	np, err := NewPolicy("interactive", none)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, tc := range []struct {
		call string
		ctx  context.Context
	}{
		{"pipeline", context.Background()},
		{"batch", WithPolicy(context.Background(), pp)},
		{"interactive", WithPolicy(context.Background(), np)},
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(tc.ctx, http.MethodPost, s.url(), nil)
			req.Header.Set("X-Call", tc.call)
			resp, err := c.Do(req)
			if err != nil {
				t.Errorf("%s: %v", tc.call, err)
				return
			}
			_ = resp.Body.Close()
		}()
	}
	wg.Wait()
	want := map[string]int32{"pipeline": 4, "batch": 7, "interactive": 1}
	for call, n := range want {
		got, _ := attempts.Load(call)
		if got == nil || got.(*atomic.Int32).Load() != n {
			t.Errorf("%s: %v attempts, want %d", call, got, n)
		}
	}
	maxOf := map[string]int{}
	for _, e := range rec.kind(EventAttemptStarted) {
		maxOf[e.Policy] = e.MaxAttempts
	}
	if maxOf[""] != 4 || maxOf["batch"] != 7 || maxOf["interactive"] != 1 {
		t.Errorf("events' MaxAttempts by policy: %v", maxOf)
	}
}

// A per-call total timeout ends its call at its own limit, while a concurrent call under the
// pipeline's longer limit goes on; the error names the per-call limit.
func TestPolicy_TotalTimeoutOfOneCallOnly(t *testing.T) {
	release := make(chan struct{})
	s := newScript(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Call") == "short" {
			<-r.Context().Done()
			return
		}
		<-release
		w.WriteHeader(http.StatusOK)
	})
	o := testOptions()
	o.TimeoutSeconds = 60
	c, p := client(t, o)
	short := p.Policy().WithTimeout(50 * time.Millisecond)
	longDone := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, s.url(), nil)
		req.Header.Set("X-Call", "long")
		resp, err := c.Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		longDone <- err
	}()
	req, _ := http.NewRequestWithContext(WithPolicy(context.Background(), short), http.MethodPost, s.url(), nil)
	req.Header.Set("X-Call", "short")
	_, err := c.Do(req)
	var te *TimeoutError
	if !errors.As(err, &te) || te.Limit != TimeoutTotal || te.After != 50*time.Millisecond {
		t.Fatalf("short call: %v, want a total timeout after 50ms", err)
	}
	select {
	case err := <-longDone:
		t.Fatalf("the long call ended with the short one: %v", err)
	default:
	}
	close(release)
	if err := <-longDone; err != nil {
		t.Fatalf("long call: %v", err)
	}
}

// The per-call policy's attempt timeout and retryable statuses apply; the circuit stays the
// pipeline's: failures under any policy count towards the same breaker.
func TestPolicy_SharesTheCircuit(t *testing.T) {
	s := newScript(t, status(500, `{}`))
	o := testOptions()
	o.RetryCount = 0
	o.CircuitBreakerThreshold = 2
	c, p := client(t, o)
	retry500 := o
	retry500.RetryableStatusCodes = []int{500}
	retry500.RetryCount = 1
	pol, err := NewPolicy("retry500", retry500)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(WithPolicy(context.Background(), pol), http.MethodPost, s.url(), nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if n := len(s.recordedBodies()); n != 2 {
		t.Fatalf("%d attempts, want 2 (the policy retries 500 once)", n)
	}
	resp, err = post(t, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if n := len(s.recordedBodies()); n != 3 {
		t.Fatalf("%d attempts, want 3 (the pipeline does not retry 500)", n)
	}
	if st := p.CircuitState(); st != CircuitOpen {
		t.Fatalf("circuit %v after two failed calls under two policies, want open", st)
	}
}

func TestPolicy_Validation(t *testing.T) {
	o := DefaultOptions()
	o.RetryCount = 99
	_, err := NewPolicy("bad", o)
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Problems[0].Field != "RetryCount" {
		t.Fatalf("got %v, want a ValidationError naming RetryCount", err)
	}
	p, err := NewPolicy("ok", DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "ok" || p.Timeout() != 30*time.Second || p.Retries() != 3 {
		t.Fatalf("policy %+v", p)
	}
	o = DefaultOptions()
	o.AttemptTimeoutSeconds = 5
	p, _ = NewPolicy("a", o)
	if q := p.WithTimeout(2 * time.Second); q.attempt != 0 || q.total != 2*time.Second || p.total != 30*time.Second {
		t.Fatalf("WithTimeout: %+v (original %+v)", q, p)
	}
	if WithPolicy(context.Background(), nil).(*Call).Policy != nil {
		t.Fatal("a nil policy is kept as nil")
	}
}
