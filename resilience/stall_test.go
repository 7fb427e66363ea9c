package resilience

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// watching returns a Call whose stream the reader watches (WatchStream).
func watching() *Call {
	c := &Call{}
	c.Init(context.Background(), true)
	c.WatchStream()
	return c
}

// stallOptions: on a manual clock, a total limit of 2 s, an idle limit of 10 s, no first-token
// limit, and the default stall limit (8× the rhythm, 1..10 s).
func stallOptions() Options {
	o := testOptions()
	o.TimeoutSeconds, o.StreamIdleTimeoutSeconds, o.FirstTokenTimeoutSeconds = 2, 10, 0
	o.CircuitBreakerThreshold = 100
	return o
}

// ticker answers a stream's headers, then one event each time the test sends on next, until
// next is closed (the stream ends) or the client goes away; silence otherwise.
func ticker(next <-chan struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for {
			select {
			case _, ok := <-next:
				if !ok {
					return
				}
				_, _ = io.WriteString(w, "data: {\"t\":\"w\"}\n\n")
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	}
}

// readEach reads body on its own goroutine, sending the size of each Read that got bytes on
// got and the error that ended it on errc.
func readEach(body io.Reader) (got chan int, errc chan error) {
	got, errc = make(chan int, 1), make(chan error, 1)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := body.Read(buf)
			if n > 0 {
				got <- n
			}
			if err != nil {
				errc <- err
				return
			}
		}
	}()
	return got, errc
}

// readWaiting returns a report of whether a Read of the pipeline's body is waiting for bytes,
// its limit armed on the clock: a test moves a manual clock once it is, so that the wait is
// the Read's whichever goroutine ran first.
func readWaiting(t *testing.T, body io.ReadCloser) func() bool {
	t.Helper()
	for {
		switch b := body.(type) {
		case *call:
			return b.reading.Load
		case *doneBody:
			body = b.rc
		default:
			t.Fatalf("a body of type %T: no pipeline call inside", body)
			return nil
		}
	}
}

// open sends a watched call through c to url and returns its answer.
func open(t *testing.T, c *http.Client, url string, call *Call) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(call, http.MethodPost, url, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// advanceUntil moves clock by step until errc has the read's error, and returns it with the
// time moved; it gives up after limit.
func advanceUntil(t *testing.T, clock *manualClock, errc <-chan error, step, limit time.Duration) (error, time.Duration) {
	t.Helper()
	var moved time.Duration
	for moved < limit {
		select {
		case err := <-errc:
			return err, moved
		case <-time.After(20 * time.Millisecond):
		}
		clock.Advance(step)
		moved += step
	}
	select {
	case err := <-errc:
		return err, moved
	case <-time.After(200 * time.Millisecond):
		return nil, moved
	}
}

// TimeoutSeconds bounds a watched stream until its first content, not its headers: a stream
// whose headers came but whose content does not is cut when TimeoutSeconds runs out (2 s,
// before the idle limit of 10 s), with the total limit's error; an unwatched one is not.
func TestWatchStream_TheTotalLimitRunsUntilTheFirstContent(t *testing.T) {
	for _, watched := range []bool{true, false} {
		next := make(chan struct{})
		s := newScript(t, ticker(next))
		clock := newManualClock()
		c, _ := client(t, stallOptions(), WithClock(clock))
		call := &Call{}
		call.Init(context.Background(), true)
		if watched {
			call.WatchStream()
		}
		resp := open(t, c, s.url(), call)
		_, errc := readEach(resp.Body)
		err, moved := advanceUntil(t, clock, errc, 100*time.Millisecond, 5*time.Second)
		var te *TimeoutError
		switch {
		case watched && (!errors.As(err, &te) || te.Limit != TimeoutTotal || moved > 2500*time.Millisecond):
			t.Fatalf("watched: %v after %v, want the total limit at 2 s", err, moved)
		case !watched && err != nil:
			t.Fatalf("unwatched: %v after %v, want the stream left to its idle limit", err, moved)
		}
		close(next)
	}
}

// When both are set, the tighter of TimeoutSeconds and the first-token limit ends a watched
// stream without content, each with its own error; the first content ends both.
func TestWatchStream_TheTighterLimitBeforeContentWins(t *testing.T) {
	cases := []struct {
		total, first float64
		want         TimeLimit
	}{{2, 10, TimeoutTotal}, {10, 1, TimeoutFirstToken}}
	for _, tc := range cases {
		next := make(chan struct{})
		s := newScript(t, ticker(next))
		clock := newManualClock()
		o := stallOptions()
		o.TimeoutSeconds, o.FirstTokenTimeoutSeconds = tc.total, tc.first
		c, _ := client(t, o, WithClock(clock))
		call := watching()
		call.AwaitFirstToken()
		resp := open(t, c, s.url(), call)
		_, errc := readEach(resp.Body)
		err, moved := advanceUntil(t, clock, errc, 100*time.Millisecond, 15*time.Second)
		var te *TimeoutError
		if !errors.As(err, &te) || te.Limit != tc.want {
			t.Fatalf("total %gs, first token %gs: %v after %v, want the %s limit", tc.total, tc.first, err, moved, tc.want)
		}
		close(next)
	}
	// The first content ends the total limit too.
	next := make(chan struct{})
	defer close(next)
	s := newScript(t, ticker(next))
	clock := newManualClock()
	c, _ := client(t, stallOptions(), WithClock(clock))
	call := watching()
	resp := open(t, c, s.url(), call)
	call.FirstToken()
	_, errc := readEach(resp.Body)
	if err, moved := advanceUntil(t, clock, errc, time.Second, 5*time.Second); err != nil {
		t.Fatalf("%v after %v: the total limit outlived the first content", err, moved)
	}
}

// A watched stream that delivered content every 15 ms and then goes silent is cut as stalled
// at the stall limit's floor (1 s: 8× its rhythm is less), long before the idle limit (10 s);
// the route learnt the rhythm from the stream itself.
func TestStall_AStreamSilentAfterItsRhythmIsCutAtTheStallLimit(t *testing.T) {
	next := make(chan struct{})
	defer close(next)
	s := newScript(t, ticker(next))
	clock := newManualClock()
	var rec recorder
	c, p := client(t, stallOptions(), WithClock(clock), OnEvent(rec.observe))
	if l := p.Latency(); l.StreamGap != 0 || l.StallAfter != 0 {
		t.Fatalf("%+v before any stream, want no rhythm and no stall limit shown", l)
	}
	call := watching()
	resp := open(t, c, s.url(), call)
	call.FirstToken()
	got, errc := readEach(resp.Body)
	waiting := readWaiting(t, resp.Body)
	for range 40 {
		// The wait is measured from the Read's start: the clock moves only once the Read is
		// waiting, or the route learns a wait of nothing.
		eventually(t, "the read to wait", waiting)
		clock.Advance(15 * time.Millisecond)
		next <- struct{}{}
		<-got
	}
	r, ok := p.StreamRhythm()
	if !ok || r < 15*time.Millisecond || r > 32*time.Millisecond {
		t.Fatalf("rhythm %v (%t) after 40 waits of 15 ms", r, ok)
	}
	if l := p.Latency(); l.StreamGap != r || l.StallAfter != time.Second {
		t.Fatalf("latency shows gap %v and stall after %v, want %v and the floor 1 s", l.StreamGap, l.StallAfter, r)
	}
	// The silence is counted from the next Read's start: the clock moves once it waits.
	eventually(t, "the read to wait", waiting)
	err, moved := advanceUntil(t, clock, errc, 100*time.Millisecond, 12*time.Second)
	var te *TimeoutError
	if !errors.As(err, &te) || te.Limit != TimeoutStreamStall || te.After != time.Second {
		t.Fatalf("%v after %v, want the stall limit of 1 s", err, moved)
	}
	if moved > 1500*time.Millisecond {
		t.Fatalf("cut after %v of silence, want about 1 s", moved)
	}
	if ev := rec.kind(EventTimeout); len(ev) != 1 || ev[0].Timeout != TimeoutStreamStall {
		t.Fatalf("timeout events %+v", ev)
	}
}

// The stall limit applies only after the first content: a watched stream of a route whose
// rhythm is known, silent before its first content (a model thinking), is left to the other
// limits; and a pipeline with StreamStallFactor 0 never cuts for a stall.
func TestStall_NotBeforeContentNorWhenOff(t *testing.T) {
	for _, tc := range []struct {
		name    string
		factor  float64
		content bool
	}{{"before content", 8, false}, {"off", 0, true}} {
		next := make(chan struct{})
		s := newScript(t, ticker(next))
		clock := newManualClock()
		o := stallOptions()
		o.TimeoutSeconds, o.StreamStallFactor = 0, tc.factor
		c, p := client(t, o, WithClock(clock))
		for range 100 {
			p.timeouts.learnt().add(15 * time.Millisecond)
		}
		call := watching()
		resp := open(t, c, s.url(), call)
		if tc.content {
			call.FirstToken()
		}
		_, errc := readEach(resp.Body)
		if err, moved := advanceUntil(t, clock, errc, 500*time.Millisecond, 5*time.Second); err != nil {
			t.Fatalf("%s: %v after %v, want no cut before the idle limit", tc.name, err, moved)
		}
		close(next)
	}
}

// The buckets hold what they say: every wait is at most its bucket's edge and above the edge
// of the bucket below; the percentile is trusted only after minRhythmGaps waits, follows the
// tail (1% of long waits moves it, less does not), and forgets old waits.
func TestRhythm_BucketsAndPercentile(t *testing.T) {
	for d := time.Microsecond; d < 2*time.Minute; d = d*11/10 + time.Microsecond {
		i := rhythmBucket(d)
		if i < rhythmBuckets-1 && d > rhythmEdge(i) {
			t.Fatalf("%v in bucket %d whose edge is %v", d, i, rhythmEdge(i))
		}
		if i > 0 && d <= rhythmEdge(i-1) {
			t.Fatalf("%v in bucket %d, below the edge %v of the one before", d, i, rhythmEdge(i-1))
		}
	}
	var r rhythm
	for range minRhythmGaps - 1 {
		r.add(15 * time.Millisecond)
	}
	r.update()
	if r.p99.Load() != 0 {
		t.Fatal("trusted before minRhythmGaps waits")
	}
	for range 1000 - minRhythmGaps + 1 {
		r.add(15 * time.Millisecond)
	}
	r.update()
	if p := time.Duration(r.p99.Load()); p != rhythmEdge(rhythmBucket(15*time.Millisecond)) {
		t.Fatalf("p99 %v of waits of 15 ms", p)
	}
	for range 5 { // 0.5%: below the percentile
		r.add(400 * time.Millisecond)
	}
	r.update()
	if p := time.Duration(r.p99.Load()); p > 20*time.Millisecond {
		t.Fatalf("p99 %v: 0.5%% of long waits moved it", p)
	}
	for range 15 { // 2%: the percentile
		r.add(400 * time.Millisecond)
	}
	r.update()
	if p := time.Duration(r.p99.Load()); p < 400*time.Millisecond || p > 800*time.Millisecond {
		t.Fatalf("p99 %v: 2%% of waits of 400 ms did not move it", p)
	}
	for range 8 * rhythmWindow { // the route speeds up: the old tail is forgotten
		r.add(2 * time.Millisecond)
	}
	if p := time.Duration(r.p99.Load()); p > 5*time.Millisecond {
		t.Fatalf("p99 %v after many waits of 2 ms", p)
	}
	// The limit: the factor times the percentile, within its bounds; the ceiling while
	// untrusted; none when off.
	if got := (stallLimits{min: time.Second, max: 10 * time.Second}).of(time.Second); got != 0 {
		t.Fatalf("limit %v with the factor 0", got)
	}
	sl := stallLimits{factor: 8, min: time.Second, max: 10 * time.Second}
	for _, c := range []struct{ p99, want time.Duration }{
		{0, 10 * time.Second}, {16 * time.Millisecond, time.Second}, {500 * time.Millisecond, 4 * time.Second}, {5 * time.Second, 10 * time.Second},
	} {
		if got := sl.of(c.p99); got != c.want {
			t.Fatalf("limit of p99 %v: %v, want %v", c.p99, got, c.want)
		}
	}
}

// Recording a wait allocates nothing: it runs for every Read of every watched stream.
func TestRhythm_AddAllocatesNothing(t *testing.T) {
	var r rhythm
	if a := testing.AllocsPerRun(1000, func() { r.add(15 * time.Millisecond) }); a != 0 {
		t.Fatalf("%v allocations a wait", a)
	}
}

// The stall options are validated with the others: each bad value named with its range.
func TestOptions_StallValidation(t *testing.T) {
	o := DefaultOptions()
	o.StreamStallFactor, o.StreamStallMinSeconds, o.StreamStallMaxSeconds = 1.5, 0.01, 1e6
	err := o.Validate()
	for _, want := range []string{"StreamStallFactor = 1.5: must be 0 (no stall detection) or a number between 2 and 1000",
		"StreamStallMinSeconds = 0.01: must be a number between 0.05 and 3600",
		"StreamStallMaxSeconds = 1e+06: must be a number between 0.05 and 86400"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v, want %q", err, want)
		}
	}
	o = DefaultOptions()
	o.StreamStallMinSeconds, o.StreamStallMaxSeconds = 5, 2
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "StreamStallMaxSeconds = 2: must be at least StreamStallMinSeconds (5)") {
		t.Fatalf("got %v", err)
	}
	o = DefaultOptions()
	o.StreamStallFactor, o.StreamStallMinSeconds = 0, -1 // off: the bounds are unused
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
}

// A route that has not learnt its rhythm yet (too few waits) cuts a stream silent after its
// content at the ceiling, StreamStallMaxSeconds (10 s), which no rhythm could raise: before
// an idle limit of 30 s.
func TestStall_AnUnknownRhythmCutsAtTheCeiling(t *testing.T) {
	next := make(chan struct{})
	defer close(next)
	s := newScript(t, ticker(next))
	clock := newManualClock()
	o := stallOptions()
	o.StreamIdleTimeoutSeconds = 30
	c, p := client(t, o, WithClock(clock))
	call := watching()
	resp := open(t, c, s.url(), call)
	call.FirstToken()
	got, errc := readEach(resp.Body)
	next <- struct{}{}
	<-got
	if _, ok := p.StreamRhythm(); ok {
		t.Fatal("a rhythm trusted after one wait")
	}
	if l := p.Latency(); l.StreamGap != 0 || l.StallAfter != 10*time.Second {
		t.Fatalf("latency shows gap %v and stall after %v, want none and the ceiling 10 s while learning", l.StreamGap, l.StallAfter)
	}
	// The silence is counted from the next Read's start: the clock moves once it waits.
	eventually(t, "the read to wait", readWaiting(t, resp.Body))
	err, moved := advanceUntil(t, clock, errc, time.Second, 40*time.Second)
	var te *TimeoutError
	if !errors.As(err, &te) || te.Limit != TimeoutStreamStall || te.After != 10*time.Second || moved > 12*time.Second {
		t.Fatalf("%v after %v, want the stall limit's ceiling (10 s)", err, moved)
	}
}

// A later request made with a Call whose content has begun (a provider resuming a cut
// stream) continues that answer: neither TimeoutSeconds nor the first-token limit cuts it
// while it waits for more.
func TestWatchStream_AResumeContinuesAnAnswerBegun(t *testing.T) {
	next := make(chan struct{})
	defer close(next)
	s := newScript(t, ticker(next), ticker(next))
	clock := newManualClock()
	o := stallOptions()
	o.FirstTokenTimeoutSeconds = 1
	c, _ := client(t, o, WithClock(clock))
	call := watching()
	call.AwaitFirstToken()
	first := open(t, c, s.url(), call)
	call.FirstToken()
	_ = first.Body.Close() // cut: the provider asks for the rest
	resumed := open(t, c, s.url(), call)
	_, errc := readEach(resumed.Body)
	if err, moved := advanceUntil(t, clock, errc, 500*time.Millisecond, 5*time.Second); err != nil {
		t.Fatalf("the resumed stream was cut after %v: %v", moved, err)
	}
}
