package resilience

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"
)

// manualClock is a clock that moves only when the test advances it; timers due by then fire.
type manualClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualTimer
}

type manualTimer struct {
	c      *manualClock
	at     time.Time
	f      func()
	active bool
}

func newManualClock() *manualClock { return &manualClock{now: time.Unix(1_800_000_000, 0)} }

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTimer{c: c, at: c.now.Add(d), f: f, active: true}
	c.timers = append(c.timers, t)
	return t
}

// Advance moves the clock by d and runs the timers that fell due, each in its own goroutine.
func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []func()
	for _, t := range c.timers {
		if t.active && !t.at.After(c.now) {
			t.active = false
			due = append(due, t.f)
		}
	}
	c.mu.Unlock()
	for _, f := range due {
		go f()
	}
}

// armed returns how many of the clock's timers are armed: a test that moves the clock for a
// call that waits on it first waits for the call's timer, which a call armed after the move
// would count from the later time.
func (c *manualClock) armed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if t.active {
			n++
		}
	}
	return n
}

func (t *manualTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.active
	t.active = false
	return was
}

func (t *manualTimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.active
	t.at, t.active = t.c.now.Add(d), true
	return was
}

// gate is a handler that holds each request until the test releases it, then answers code.
type gate struct {
	arrived chan struct{}
	release chan struct{}
	code    int
}

func newGate(code int) *gate {
	return &gate{arrived: make(chan struct{}, 100), release: make(chan struct{}), code: code}
}

func (g *gate) handler(w http.ResponseWriter, r *http.Request) {
	g.arrived <- struct{}{}
	select {
	case <-g.release:
	case <-r.Context().Done():
	}
	w.WriteHeader(g.code)
}

// agree checks that every view of the circuit tells the same story, and that admission
// acts on it: a call is turned away without touching the network exactly when the circuit
// reads open or isolated.
func agree(t *testing.T, p *Pipeline, c *http.Client, url string, hits func() int32) CircuitState {
	t.Helper()
	state := p.CircuitState()
	info := p.CircuitInfo()
	if info.State != state {
		t.Fatalf("CircuitState %v but CircuitInfo %v", state, info.State)
	}
	if (state == CircuitOpen) != (info.NextProbeIn > 0) {
		t.Fatalf("state %v with NextProbeIn %v", state, info.NextProbeIn)
	}
	before := hits()
	_, err := doCall(t, c, url)
	rejected := errors.Is(err, ErrCircuitOpen)
	switch state {
	case CircuitOpen, CircuitIsolated:
		if !rejected || hits() != before {
			t.Fatalf("circuit reads %v but a call was admitted (err %v)", state, err)
		}
	case CircuitClosed:
		if rejected || hits() != before+1 {
			t.Fatalf("circuit reads closed but the call was rejected: %v", err)
		}
	}
	return state
}

func TestCircuit_ResetWinsOverAFailingCallInFlight(t *testing.T) {
	g := newGate(500)
	s := newScript(t, g.handler, ok())
	c, p := client(t, breakerOptions(1, 3600))

	done := make(chan error, 1)
	go func() { _, err := doCall(t, c, s.url()); done <- err }()
	<-g.arrived
	p.Reset() // an operator resets while the failing call is still in flight
	close(g.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The failure belonged to the generation before Reset: it must not open the new one.
	if st := agree(t, p, c, s.url(), s.hits.Load); st != CircuitClosed {
		t.Fatalf("circuit %v after a pre-Reset failure landed, want closed", st)
	}
}

func TestCircuit_IsolateThenResetIgnoresCallsFromBefore(t *testing.T) {
	g := newGate(503)
	s := newScript(t, g.handler, ok())
	c, p := client(t, breakerOptions(1, 3600))
	done := make(chan struct{})
	go func() { doCall(t, c, s.url()); close(done) }()
	<-g.arrived
	p.Isolate()
	if st := agree(t, p, c, s.url(), s.hits.Load); st != CircuitIsolated {
		t.Fatalf("state %v, want isolated", st)
	}
	p.Reset()
	close(g.release)
	<-done
	if st := agree(t, p, c, s.url(), s.hits.Load); st != CircuitClosed {
		t.Fatalf("state %v after Reset and a stale failure, want closed", st)
	}
}

func TestCircuit_ProbeInFlightDuringResetCannotReopen(t *testing.T) {
	clk := newManualClock()
	g := newGate(502)
	s := newScript(t, status(500, `x`), g.handler, ok())
	o := breakerOptions(1, 10)
	o.TimeoutSeconds, o.StreamIdleTimeoutSeconds = 0, 0
	c, p := client(t, o, WithClock(clk))
	doCall(t, c, s.url()) // trips the circuit
	if p.CircuitState() != CircuitOpen {
		t.Fatal("not open")
	}
	clk.Advance(10 * time.Second)
	done := make(chan struct{})
	go func() { doCall(t, c, s.url()); close(done) }() // the half-open probe
	<-g.arrived
	if st := p.CircuitState(); st != CircuitHalfOpen {
		t.Fatalf("state %v while the probe is out, want half-open", st)
	}
	p.Reset()
	close(g.release) // the probe fails after the Reset
	<-done
	if st := agree(t, p, c, s.url(), s.hits.Load); st != CircuitClosed {
		t.Fatalf("state %v, want closed: the probe belonged to the circuit before Reset", st)
	}
}

// Reset and Isolate race failing calls, reads and each other; -race checks the memory, and
// after the dust settles every view agrees.
func TestCircuit_ResetRacingFailingCalls(t *testing.T) {
	s := newScript(t, status(500, `x`))
	c, p := client(t, breakerOptions(2, 3600))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := postCtx(context.Background(), c, s.url(), `{}`)
				if err == nil {
					resp.Body.Close()
				}
			}
		}()
	}
	for i := 0; i < 200; i++ {
		switch i % 4 {
		case 0:
			p.Reset()
		case 1:
			p.CircuitInfo()
		case 2:
			p.Isolate()
		case 3:
			p.CircuitState()
		}
	}
	p.Reset()
	close(stop)
	wg.Wait()
	st := p.CircuitState()
	if st != CircuitClosed && st != CircuitOpen {
		t.Fatalf("state %v after the final Reset and plain failures", st)
	}
	p.Reset()
	if st := agree(t, p, &http.Client{Transport: p.Wrap(http.DefaultTransport)}, s.url(), s.hits.Load); st != CircuitClosed {
		t.Fatalf("state %v right after Reset", st)
	}
}

func TestCircuit_EveryViewAgreesThroughTheCycle(t *testing.T) {
	clk := newManualClock()
	s := newScript(t, status(503, `x`), status(503, `x`), status(503, `x`), ok())
	o := breakerOptions(2, 30)
	o.TimeoutSeconds, o.StreamIdleTimeoutSeconds = 0, 0
	c, p := client(t, o, WithClock(clk))
	want := []CircuitState{CircuitClosed, CircuitClosed, CircuitOpen}
	for i, w := range want {
		if st := agree(t, p, c, s.url(), s.hits.Load); st != w {
			t.Fatalf("step %d: %v, want %v", i, st, w)
		}
	}
	if info := p.CircuitInfo(); info.NextProbeIn != 30*time.Second {
		t.Fatalf("NextProbeIn %v, want exactly the break on the pipeline's clock", info.NextProbeIn)
	}
	clk.Advance(29 * time.Second)
	if info := p.CircuitInfo(); info.State != CircuitOpen || info.NextProbeIn != time.Second {
		t.Fatalf("info %+v one second before the probe", info)
	}
	clk.Advance(time.Second)
	if st := p.CircuitState(); st != CircuitHalfOpen {
		t.Fatalf("state %v once the break is over, want half-open", st)
	}
	doCall(t, c, s.url()) // the probe fails (third 503): open again, for a full break
	if info := p.CircuitInfo(); info.State != CircuitOpen || info.NextProbeIn != 30*time.Second {
		t.Fatalf("info %+v after a failed probe", info)
	}
	clk.Advance(30 * time.Second)
	doCall(t, c, s.url()) // the probe succeeds
	if st := agree(t, p, c, s.url(), s.hits.Load); st != CircuitClosed {
		t.Fatalf("state %v after a successful probe", st)
	}
	p.Isolate()
	clk.Advance(time.Hour)
	if st := agree(t, p, c, s.url(), s.hits.Load); st != CircuitIsolated {
		t.Fatalf("state %v: isolation must outlast any break", st)
	}
}

// A caller that gives up mid-stream never counts against the provider, even when the reader
// also reported a failure (it saw the connection drop because the caller cancelled).
func TestCircuit_CallerCancelBeatsAReportedFailure(t *testing.T) {
	done := make(chan struct{})
	defer close(done)
	s := newScript(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		stall(done)(w, r)
	})
	c, p := client(t, breakerOptions(1, 3600))
	ctx, cancel := context.WithCancel(context.Background())
	ctx, report := WithFailureReporter(ctx)
	resp, err := postCtx(ctx, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	_, rerr := resp.Body.Read(make([]byte, 10))
	report(rerr)
	resp.Body.Close()
	if st := p.CircuitState(); st != CircuitClosed {
		t.Fatalf("state %v: the caller's cancellation was counted as a failure", st)
	}
}

func (t *manualTimer) isActive() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	return t.active
}
