package mocks_test

import (
	"context"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadyllm/steady/mocks"
)

// Where a latency profile's delay falls, proved on a manual clock: the server can only get
// past a wait when the test moves the clock, or when the client goes away.

func TestLatency_HoldsTheWholeAnswerBack(t *testing.T) {
	for _, w := range wires() {
		for _, c := range []struct {
			name         string
			body         string
			headersFirst bool
		}{
			{"json", w.jsonBody(), false},
			{"json headers-first", w.jsonBody(), true}, // HeadersFirst is for streams only
			{"stream", w.body, false},
		} {
			t.Run(w.name+" "+c.name, func(t *testing.T) {
				clock := newManualTimers()
				l := listen(t)
				s := newServer(t, clock.option(), mocks.WithListener(l),
					mocks.WithLatency(mocks.LatencyProfile{FirstToken: time.Hour, HeadersFirst: c.headersFirst}))
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				type result struct {
					status int
					err    error
				}
				got := make(chan result, 1)
				go func() {
					res, err := do(t, ctx, s, http.MethodPost, w.path, w.header, c.body)
					r := result{err: err}
					if err == nil {
						r.status = res.StatusCode
						_, r.err = readAllClose(res)
					}
					got <- r
				}()
				if d := receive(t, clock.armed, "wait"); d != time.Hour {
					t.Fatalf("the server waits %v, want 1h", d)
				}
				// The handler is in its wait, which only the clock ends: nothing may be sent yet.
				if n := l.written.Load(); n != 0 {
					t.Errorf("the server sent %d bytes before the first-token delay passed", n)
				}
				clock.advance(time.Hour)
				if r := receive(t, got, "response"); r.err != nil || r.status != 200 {
					t.Fatalf("status %d, %v", r.status, r.err)
				}
			})
		}
	}
}

// countingListener counts the bytes the server writes on its connections.
type countingListener struct {
	net.Listener
	written atomic.Int64
}

func listen(t *testing.T) *countingListener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return &countingListener{Listener: l}
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, n: &l.written}, nil
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.n.Add(int64(n))
	return n, err
}

func TestLatency_HeadersFirstOpensTheStreamThenWaits(t *testing.T) {
	for _, w := range wires() {
		t.Run(w.name, func(t *testing.T) {
			clock := newManualTimers()
			s := newServer(t, clock.option(),
				mocks.WithLatency(mocks.LatencyProfile{FirstToken: time.Hour, HeadersFirst: true}))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			// The clock has not moved: the 200 headers and the preamble come anyway.
			res, sr := openStream(t, ctx, s, w, w.body)
			defer res.Body.Close()
			for i := range w.preamble {
				if ev, err := sr.next(); err != nil || strings.Contains(ev.data, `"one"`) {
					t.Fatalf("preamble event %d: %+v, %v", i, ev, err)
				}
			}
			if d := receive(t, clock.armed, "wait"); d != time.Hour {
				t.Fatalf("the server waits %v, want 1h", d)
			}
			clock.advance(time.Hour)
			ev, err := sr.next()
			if err != nil || !strings.Contains(ev.data, `"one"`) {
				t.Errorf("first event after the delay: %+v, %v; want the first word", ev, err)
			}
		})
	}
}

func TestLatency_ClientGoneFreesTheHandler(t *testing.T) {
	for _, w := range wires() {
		for _, c := range []struct {
			name         string
			body         string
			headersFirst bool
		}{
			{"json", w.jsonBody(), false},
			{"stream", w.body, false},
			{"stream headers-first", w.body, true},
		} {
			t.Run(w.name+" "+c.name, func(t *testing.T) {
				// The clock never moves: only the client's going away can end the wait.
				clock := newManualTimers()
				s := newServer(t, clock.option(),
					mocks.WithLatency(mocks.LatencyProfile{FirstToken: time.Hour, HeadersFirst: c.headersFirst}))
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				errc := make(chan error, 1)
				if c.headersFirst {
					res, _ := openStream(t, ctx, s, w, c.body)
					defer res.Body.Close()
				} else {
					go func() {
						res, err := do(t, ctx, s, http.MethodPost, w.path, w.header, c.body)
						if err == nil {
							res.Body.Close()
						}
						errc <- err
					}()
				}
				receive(t, clock.armed, "wait")
				cancel() // a hedge's loser, cancelled
				if d := receive(t, clock.stopped, "early end of the wait"); d != time.Hour {
					t.Errorf("stopped a wait of %v, want 1h", d)
				}
				if !c.headersFirst {
					if err := receive(t, errc, "client error"); err == nil {
						t.Error("the cancelled call got a response")
					}
				}
				waitIdle(t, s)
				if r, _ := s.Journal().Last(); r.FirstTokenDelay != time.Hour {
					t.Errorf("journal: first-token delay %v, want 1h", r.FirstTokenDelay)
				}
			})
		}
	}
}

func TestLatency_CloseEndsTheWait(t *testing.T) {
	clock := newManualTimers()
	s := mocks.NewServer(clock.option(), mocks.WithLatency(mocks.LatencyProfile{FirstToken: time.Hour}))
	errc := make(chan error, 1)
	go func() {
		res, err := do(t, context.Background(), s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), chatBody)
		if err == nil {
			res.Body.Close()
		}
		errc <- err
	}()
	receive(t, clock.armed, "wait")
	s.Close() // must not hang
	if err := receive(t, errc, "client error"); err == nil {
		t.Error("the delayed call got a response after Close")
	}
}

func TestWithAfterFunc_StepDelaysRunOnTheClock(t *testing.T) {
	clock := &instantTimers{}
	s := newServer(t, clock.option(), mocks.WithScript(mocks.Latency(time.Hour),
		mocks.SlowFirstToken(2*time.Hour), mocks.SlowStream(time.Minute)))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, body := range []string{chatBody, wires()[0].body, wires()[0].body} {
		res, err := do(t, ctx, s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), body)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := readAllClose(res); err != nil {
			t.Fatal(err)
		}
	}
	got := clock.recorded()
	if len(got) < 3 || !reflect.DeepEqual(got[:2], []time.Duration{time.Hour, 2 * time.Hour}) || got[2] != time.Minute {
		t.Errorf("waits %v, want 1h, 2h, then a minute between events", got)
	}
}
