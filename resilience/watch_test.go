package resilience

import (
	"net/http"
	"testing"
	"time"
)

// A watcher hears every event of the pipeline and of its routes from the moment it watches,
// beside the observer of OnEvent, and nothing after it stops.
func TestWatch_HearsPipelineAndRoutesUntilStopped(t *testing.T) {
	srv := newScript(t, status(503, `{}`), ok(), ok())
	var own, watched recorder
	o := testOptions()
	o.RetryCount = 0
	c, p := client(t, o, OnEvent(own.observe))

	stop := p.Watch(watched.observe)
	resp, err := post(t, c, srv.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	// A call on a route: its events are the route's, which the deployment's watchers hear.
	if _, err := callModel(t, c, srv.url(), "gpt-x", 0); err != nil {
		t.Fatal(err)
	}
	if got, want := len(watched.all()), len(own.all()); got != want || got == 0 {
		t.Fatalf("the watcher heard %d events, the observer %d", got, want)
	}
	var routed bool
	for _, e := range watched.all() {
		routed = routed || e.Route == "gpt-x"
	}
	if !routed {
		t.Fatalf("the watcher heard nothing of the route: %+v", watched.all())
	}

	stop()
	stop() // twice is fine
	before := len(watched.all())
	resp, err = post(t, c, srv.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if n := len(watched.all()); n != before {
		t.Fatalf("a stopped watcher heard %d more events", n-before)
	}
	if len(own.all()) <= before {
		t.Fatal("the observer of OnEvent stopped hearing too")
	}
}

// Several watchers each hear every event; stopping one leaves the others.
func TestWatch_SeveralWatchersStopOnTheirOwn(t *testing.T) {
	p, err := New(testOptions())
	if err != nil {
		t.Fatal(err)
	}
	var a, b recorder
	stopA := p.Watch(a.observe)
	stopB := p.Watch(b.observe)
	_ = p.Watch(nil) // watches nothing
	p.Isolate()
	stopA()
	p.Reset()
	stopB()
	p.Isolate()
	if n := len(a.kind(EventBreakerStateChanged)); n != 1 {
		t.Fatalf("the first watcher heard %d transitions, want the isolation alone", n)
	}
	if n := len(b.kind(EventBreakerStateChanged)); n != 2 {
		t.Fatalf("the second watcher heard %d transitions, want the isolation and the reset", n)
	}
}

// A watcher given types hears only those; the others still reach the watchers that want them.
func TestWatch_HearsOnlyTheTypesItAsksFor(t *testing.T) {
	srv := newScript(t, status(503, `{}`), ok())
	o := testOptions()
	o.RetryCount = 0
	o.CircuitBreakerThreshold = 1
	c, p := client(t, o)
	var some, all recorder
	defer p.Watch(some.observe, EventBreakerStateChanged, EventGaveUp)()
	defer p.Watch(all.observe)()
	resp, err := post(t, c, srv.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	for _, e := range some.all() {
		if e.Type != EventBreakerStateChanged && e.Type != EventGaveUp {
			t.Fatalf("the watcher of two types heard %s", e.Type)
		}
	}
	if len(some.kind(EventBreakerStateChanged)) != 1 || len(some.kind(EventGaveUp)) != 1 {
		t.Fatalf("the watcher of two types heard %+v", some.all())
	}
	if len(all.kind(EventAttemptStarted)) != 1 || len(all.kind(EventAttemptFinished)) != 1 {
		t.Fatalf("the watcher of every type heard %+v", all.all())
	}
}

// A pipeline nobody watches, and one whose watchers all stopped, build no event: the
// successful call allocates no more than it did before anyone watched.
func TestWatch_StoppedWatchersCostNothing(t *testing.T) {
	p, err := New(testOptions())
	if err != nil {
		t.Fatal(err)
	}
	rt := p.Wrap(memOK{})
	call := func() {
		req, _ := http.NewRequest(http.MethodPost, "http://llm.invalid/v1/chat/completions", nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	before := testing.AllocsPerRun(200, call)
	stop := p.Watch(func(Event) {})
	stop()
	if after := testing.AllocsPerRun(200, call); after != before {
		t.Fatalf("%v allocations per call after a watcher came and went, %v before", after, before)
	}
}

// memOK answers every request with an empty 200, in memory.
type memOK struct{}

func (memOK) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
}

// RecentLatencies returns the window oldest first, cut-off calls at the time they waited.
func TestRecentLatencies_OldestFirstWithinTheWindow(t *testing.T) {
	p, err := New(testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if got := p.RecentLatencies(nil); len(got) != 0 {
		t.Fatalf("before any sample: %v", got)
	}
	p.ObserveLatency(LatencySample{FirstContent: 5 * time.Millisecond, Censored: true})
	p.ObserveLatency(LatencySample{Failed: true}) // no time: not in the window
	for i := 1; i <= LatencyWindow+3; i++ {
		p.ObserveLatency(LatencySample{FirstContent: time.Duration(i) * time.Millisecond})
	}
	got := p.RecentLatencies(make([]time.Duration, 0, LatencyWindow))
	if len(got) != LatencyWindow {
		t.Fatalf("%d times, want %d", len(got), LatencyWindow)
	}
	if got[0] != 4*time.Millisecond || got[len(got)-1] != kept(time.Duration(LatencyWindow+3)*time.Millisecond) {
		t.Fatalf("window from %v to %v", got[0], got[len(got)-1])
	}
	q, _ := New(testOptions())
	q.ObserveLatency(LatencySample{FirstContent: 7 * time.Millisecond, Censored: true})
	if got := q.RecentLatencies(nil); len(got) != 1 || got[0] != 7*time.Millisecond {
		t.Fatalf("a cut-off call: %v", got)
	}
	buf := make([]time.Duration, 0, LatencyWindow)
	if n := testing.AllocsPerRun(100, func() { buf = p.RecentLatencies(buf[:0]) }); n != 0 {
		t.Fatalf("%v allocations with room in dst", n)
	}
}
