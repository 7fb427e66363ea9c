package resilience

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestTimeout_FiresAfterDuration(t *testing.T) {
	done := make(chan struct{})
	defer close(done)
	s := newScript(t, stall(done))
	o := testOptions()
	o.TimeoutSeconds = 0.05
	var rec recorder
	c, _ := client(t, o, OnEvent(rec.observe))
	_, err := post(t, c, s.url(), `{}`)
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want ErrTimeout and context.DeadlineExceeded", err)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatal("the error does not report Timeout() as a net.Error")
	}
	var te *TimeoutError
	if !errors.As(err, &te) || te.Limit != TimeoutTotal || te.After != 50*time.Millisecond {
		t.Fatalf("timeout error %#v", te)
	}
	if ev := rec.kind(EventTimeout); len(ev) != 1 || ev[0].Timeout != TimeoutTotal {
		t.Fatalf("timeout events %+v", ev)
	}
}

func TestTimeout_CoversAStalledBody(t *testing.T) {
	done := make(chan struct{})
	defer close(done)
	s := newScript(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"partial":`)
		w.(http.Flusher).Flush()
		stall(done)(w, r)
	})
	o := testOptions()
	o.TimeoutSeconds = 0.1
	c, _ := client(t, o)
	resp, err := post(t, c, s.url(), `{}`)
	if err != nil {
		t.Fatalf("headers arrived in time, got %v", err)
	}
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("reading a stalled body: %v, want ErrTimeout", err)
	}
}

func TestTimeout_BodyStaysReadableAfterRoundTripReturns(t *testing.T) {
	release := make(chan struct{})
	s := newScript(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"a":`)
		w.(http.Flusher).Flush()
		<-release // the rest comes only after RoundTrip has returned
		_, _ = io.WriteString(w, `1}`)
	})
	o := testOptions()
	o.AttemptTimeoutSeconds = 5
	c, _ := client(t, o)
	resp, err := post(t, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	close(release)
	if got := readAll(t, resp); got != `{"a":1}` {
		t.Fatalf("body %q", got)
	}
}

func TestTimeout_CallerCancellationIsNotErrTimeout(t *testing.T) {
	done := make(chan struct{})
	defer close(done)
	s := newScript(t, stall(done))
	c, _ := client(t, testOptions())
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	_, err := postCtx(ctx, c, s.url(), `{}`)
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
		t.Fatalf("got %v, want context.Canceled and not ErrTimeout", err)
	}
}

func TestTimeout_CallerDeadlineIsNotErrTimeout(t *testing.T) {
	done := make(chan struct{})
	defer close(done)
	s := newScript(t, stall(done))
	c, _ := client(t, testOptions())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := postCtx(ctx, c, s.url(), `{}`)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrTimeout) {
		t.Fatalf("got %v, want the caller's context.DeadlineExceeded, not ErrTimeout", err)
	}
}

func TestTimeout_AttemptTimeoutIsRetried(t *testing.T) {
	done := make(chan struct{})
	defer close(done)
	s := newScript(t, stall(done), ok())
	o := testOptions()
	o.AttemptTimeoutSeconds = 0.05
	var rec recorder
	c, _ := client(t, o, OnEvent(rec.observe))
	code, err := doCall(t, c, s.url())
	if err != nil || code != 200 || s.hits.Load() != 2 {
		t.Fatalf("%d %v after %d attempts", code, err, s.hits.Load())
	}
	sched := rec.kind(EventRetryScheduled)
	if len(sched) != 1 || !errors.Is(sched[0].Err, ErrTimeout) {
		t.Fatalf("retry events %+v", sched)
	}
}

func TestTimeout_AttemptTimeoutExhaustedIsErrTimeout(t *testing.T) {
	done := make(chan struct{})
	defer close(done)
	s := newScript(t, stall(done))
	o := testOptions()
	o.RetryCount = 1
	o.AttemptTimeoutSeconds = 0.03
	c, _ := client(t, o)
	_, err := doCall(t, c, s.url())
	var te *TimeoutError
	if !errors.As(err, &te) || te.Limit != TimeoutAttempt || s.hits.Load() != 2 {
		t.Fatalf("got %v after %d attempts, want an attempt timeout after 2", err, s.hits.Load())
	}
}

// sse serves n events, one every gap, flushing each.
func sse(n int, gap time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		for i := 0; i < n; i++ {
			_, _ = io.WriteString(w, "data: {\"i\":"+string(rune('0'+i))+"}\n\n")
			w.(http.Flusher).Flush()
			time.Sleep(gap)
		}
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	}
}

func TestStream_PassesThroughUnbuffered(t *testing.T) {
	next := make(chan struct{})
	s := newScript(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		<-next // the second event waits until the client has seen the first
		_, _ = io.WriteString(w, "data: second\n\n")
	})
	c, _ := client(t, testOptions())
	resp, err := post(t, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	got := make(chan string, 1)
	go func() { line, _ := r.ReadString('\n'); got <- line }()
	select {
	case line := <-got:
		if line != "data: first\n" {
			t.Fatalf("first line %q", line)
		}
	case <-time.After(5 * time.Second):
		close(next)
		t.Fatal("the first event did not reach the caller before the stream went on: something buffers")
	}
	close(next)
	rest, _ := io.ReadAll(r)
	if !strings.Contains(string(rest), "data: second") {
		t.Fatalf("rest %q", rest)
	}
}

// The total timeout ends when a stream's headers arrive: a stream that outlives it is fine
// as long as no gap exceeds the idle timeout.
func TestStream_OutlivesTotalTimeoutWhileEventsFlow(t *testing.T) {
	s := newScript(t, sse(6, 30*time.Millisecond))
	o := testOptions()
	o.TimeoutSeconds = 0.06
	o.StreamIdleTimeoutSeconds = 2
	c, _ := client(t, o)
	resp, err := post(t, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Fatalf("stream cut short: %q", body)
	}
}

func TestStream_IdleTimeoutCutsAStalledStream(t *testing.T) {
	done := make(chan struct{})
	defer close(done)
	s := newScript(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		stall(done)(w, r)
	})
	o := testOptions()
	o.StreamIdleTimeoutSeconds = 0.05
	var rec recorder
	c, _ := client(t, o, OnEvent(rec.observe))
	resp, err := post(t, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	var te *TimeoutError
	if !errors.As(err, &te) || te.Limit != TimeoutStreamIdle || string(body) != "data: one\n\n" {
		t.Fatalf("got %q, %v; want the first event, then a stream-idle timeout", body, err)
	}
	if ev := rec.kind(EventTimeout); len(ev) != 1 || ev[0].Timeout != TimeoutStreamIdle {
		t.Fatalf("timeout events %+v", ev)
	}
}

func TestStream_SlowConsumerIsNotIdle(t *testing.T) {
	s := newScript(t, sse(3, 0))
	o := testOptions()
	o.StreamIdleTimeoutSeconds = 0.02
	c, _ := client(t, o)
	resp, err := post(t, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond) // the caller is slow; the server is not idle
	if body := readAll(t, resp); !strings.HasSuffix(body, "[DONE]\n\n") {
		t.Fatalf("body %q", body)
	}
}

// Total timeouts share one timer per pipeline: quick calls must not pile up in its queue,
// and a stalled call behind them must still time out on its own deadline.
func TestTimeout_SharedTimerKeepsEachCallsDeadline(t *testing.T) {
	done := make(chan struct{})
	defer close(done)
	var stalled atomic.Bool
	s := newScript(t, func(w http.ResponseWriter, r *http.Request) {
		if stalled.Load() {
			stall(done)(w, r)
			return
		}
		ok()(w, r)
	})
	o := testOptions()
	o.TimeoutSeconds = 0.15
	c, p := client(t, o)
	for i := 0; i < 50; i++ {
		if code, err := doCall(t, c, s.url()); err != nil || code != 200 {
			t.Fatalf("call %d: %d %v", i, code, err)
		}
	}
	if n := p.timeouts.deadlines.pending(); n > 1 {
		t.Fatalf("%d finished calls still queued", n)
	}
	stalled.Store(true)
	results := make(chan error, 3)
	for i := 0; i < 3; i++ {
		go func() { _, err := doCall(t, c, s.url()); results <- err }()
	}
	for i := 0; i < 3; i++ {
		if err := <-results; !errors.Is(err, ErrTimeout) {
			t.Fatalf("stalled call %d: %v, want ErrTimeout", i, err)
		}
	}
	eventually(t, "the queue to drain", func() bool { return p.timeouts.deadlines.pending() == 0 })
}

// A slow call at the front of the shared timer's queue does not keep the calls that finished
// after it queued until its own deadline: each holds its context, which its caller may have
// filled with a whole answer. A thousand quick calls behind one held at the server leave at most
// a sweep's worth queued (twice what was live at the last sweep, and never fewer than
// minSweep before one). Before, all thousand stayed queued until the slow call ended.
func TestTimeout_FinishedCallsBehindASlowOneAreNotKept(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	held := make(chan struct{}, 1)
	var slow atomic.Bool
	slow.Store(true)
	s := newScript(t, func(w http.ResponseWriter, r *http.Request) {
		if slow.CompareAndSwap(true, false) {
			held <- struct{}{}
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		ok()(w, r)
	})
	t.Cleanup(free) // a failure frees the slow call too, before the server waits for it
	o := testOptions()
	o.TimeoutSeconds = 600 // the slow call's deadline is far away
	c, p := client(t, o)
	first := make(chan error, 1)
	go func() { _, err := doCall(t, c, s.url()); first <- err }()
	<-held
	for i := 0; i < 1000; i++ {
		if code, err := doCall(t, c, s.url()); err != nil || code != 200 {
			t.Fatalf("call %d: %d %v", i, code, err)
		}
	}
	if n := p.timeouts.deadlines.pending(); n > 2*minSweep {
		t.Fatalf("%d calls queued behind the slow one, %d of them finished", n, n-1)
	}
	free()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}

// The response names the caller's request, not the pipeline's copy that carried the call's
// context, so that a long stream does not keep the copy alive.
func TestTimeout_ResponseNamesTheCallersRequest(t *testing.T) {
	s := newScript(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {}\n\n")
	})
	p, err := New(testOptions())
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	req, _ := http.NewRequest(http.MethodPost, s.url(), strings.NewReader(`{}`))
	resp, err := p.Wrap(tr).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Request != req {
		t.Fatalf("resp.Request is %p, want the caller's %p", resp.Request, req)
	}
	if _, ok := resp.Request.Context().(*call); ok {
		t.Fatal("the response carries the pipeline's call context")
	}
}
