package resilience

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"
)

// firstTokenOptions: a first-token limit of 10 s on a manual clock, no other time limit.
func firstTokenOptions() Options {
	o := testOptions()
	o.TimeoutSeconds, o.StreamIdleTimeoutSeconds = 0, 0
	o.FirstTokenTimeoutSeconds = 10
	o.CircuitBreakerThreshold = 1
	return o
}

// awaiting returns a Call that awaits its first token.
func awaiting() *Call {
	c := &Call{}
	c.Init(context.Background(), true)
	c.AwaitFirstToken()
	return c
}

// A provider that never answers: the first-token limit ends the call with a timeout at 10 s,
// one attempt, counted against the circuit, though the retries would have gone on.
func TestFirstToken_ASilentProviderTimesOutOnceAndCounts(t *testing.T) {
	done := make(chan struct{})
	defer close(done)
	s := newScript(t, stall(done))
	clock := newManualClock()
	var rec recorder
	c, p := client(t, firstTokenOptions(), WithClock(clock), OnEvent(rec.observe))
	call := awaiting()
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(call, http.MethodPost, s.url(), nil)
		resp, err := c.Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		errc <- err
	}()
	eventually(t, "the call to be sent", func() bool { return len(rec.kind(EventAttemptStarted)) == 1 })
	clock.Advance(10 * time.Second)
	err := <-errc
	var te *TimeoutError
	if !errors.As(err, &te) || te.Limit != TimeoutFirstToken || te.After != 10*time.Second {
		t.Fatalf("got %v, want the first-token limit", err)
	}
	if n := len(rec.kind(EventAttemptStarted)); n != 1 || call.Info.Attempts != 1 {
		t.Fatalf("%d attempts, want one: a silent route is not retried", n)
	}
	if ev := rec.kind(EventTimeout); len(ev) != 1 || ev[0].Timeout != TimeoutFirstToken {
		t.Fatalf("timeout events %+v", ev)
	}
	if st := p.CircuitState(); st != CircuitOpen {
		t.Fatalf("circuit %v: the first-token timeout did not count", st)
	}
}

// headersThenSilence answers a stream's headers and then nothing, until done.
func headersThenSilence(done <-chan struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-done:
		case <-r.Context().Done():
		}
	}
}

// Headers are not a first token: a stream whose headers came but whose content does not is
// cut at the first-token limit, and its reader gets the timeout.
func TestFirstToken_HeadersAreNotTheFirstToken(t *testing.T) {
	done := make(chan struct{})
	defer close(done)
	s := newScript(t, headersThenSilence(done))
	clock := newManualClock()
	c, _ := client(t, firstTokenOptions(), WithClock(clock))
	call := awaiting()
	req, _ := http.NewRequestWithContext(call, http.MethodPost, s.url(), nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	errc := make(chan error, 1)
	go func() { _, err := io.ReadAll(resp.Body); errc <- err }()
	clock.Advance(10 * time.Second)
	err = <-errc
	var te *TimeoutError
	if !errors.As(err, &te) || te.Limit != TimeoutFirstToken {
		t.Fatalf("read: %v, want the first-token limit", err)
	}
}

// Once the first content arrived (Call.FirstToken), the limit no longer applies.
func TestFirstToken_EndsWithTheFirstContent(t *testing.T) {
	done := make(chan struct{})
	s := newScript(t, headersThenSilence(done))
	clock := newManualClock()
	o := firstTokenOptions()
	// A watched stream silent after its first content is the stall limit's to cut (see
	// stall_test.go); here only the first-token limit is on trial.
	o.StreamStallFactor = 0
	c, _ := client(t, o, WithClock(clock))
	call := awaiting()
	req, _ := http.NewRequestWithContext(call, http.MethodPost, s.url(), nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	call.FirstToken()
	errc := make(chan error, 1)
	go func() { _, err := io.ReadAll(resp.Body); errc <- err }()
	time.Sleep(10 * time.Millisecond) // the read begins first, as it may: the limit is not rearmed by it
	clock.Advance(time.Minute)
	select {
	case err := <-errc:
		t.Fatalf("the stream ended after its first content: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(done) // the server ends the stream
	if err := <-errc; err != nil {
		t.Fatalf("read: %v", err)
	}
	_ = resp.Body.Close()
}

// A call that fails before any answer (a refused connection, retries exhausted) leaves
// nothing of its first-token limit behind: no entry in the shared queue, which would keep the
// call alive until the limit ran out.
func TestFirstToken_AFailedCallLeavesNoLimitBehind(t *testing.T) {
	s := newScript(t, status(503, `{}`))
	o := firstTokenOptions()
	o.RetryCount, o.CircuitBreakerThreshold = 0, 100
	c, p := client(t, o, WithClock(newManualClock()))
	for range 3 {
		req, _ := http.NewRequestWithContext(awaiting(), http.MethodPost, s.url(), nil)
		if resp, err := c.Do(req); err == nil {
			_ = resp.Body.Close()
		}
	}
	// 503 answers end through the body; a call that fails in the transport ends here.
	req, _ := http.NewRequestWithContext(awaiting(), http.MethodPost, "http://127.0.0.1:1/v1/chat/completions", nil)
	if _, err := c.Do(req); err == nil {
		t.Fatal("a refused connection succeeded")
	}
	p.timeouts.firsts.mu.Lock()
	p.timeouts.firsts.dropFinished()
	p.timeouts.firsts.mu.Unlock()
	if n := p.timeouts.firsts.pending(); n != 0 {
		t.Fatalf("%d calls still wait on their first-token limit after they ended", n)
	}
}
