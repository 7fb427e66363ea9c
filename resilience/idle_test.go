package resilience

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The stream idle timeout measures silence on the wire through any base RoundTripper, not
// only a bare *http.Transport: the wrappers applications put around their transport for
// logs, metrics and traces must not turn a slow but live stream into a timeout, nor hide a
// silent one. These tests are about real time: a 1 s limit against a piece every 100 ms, and
// against a silence of 3 s, margins wide enough for a machine whose cores another test run
// keeps busy (a 0.5 s limit cut a drip there).

// bases are the transports a pipeline may be given, each around an *http.Transport.
var bases = []struct {
	name string
	wrap func(t *testing.T, tr *http.Transport) http.RoundTripper
}{
	{"http.Transport", func(_ *testing.T, tr *http.Transport) http.RoundTripper { return tr }},
	{"logging", func(t *testing.T, tr *http.Transport) http.RoundTripper { return &loggingRT{next: tr, t: t} }},
	{"counting", func(_ *testing.T, tr *http.Transport) http.RoundTripper { return &countingRT{next: tr} }},
	{"otelhttp-like", func(_ *testing.T, tr *http.Transport) http.RoundTripper { return &tracingRT{next: tr} }},
}

// loggingRT logs each exchange, as a logging middleware does: request and response pass
// through untouched.
type loggingRT struct {
	next http.RoundTripper
	t    *testing.T
}

func (l *loggingRT) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(r)
	if err == nil {
		l.t.Logf("%s %s: %s", r.Method, r.URL.Path, resp.Status)
	}
	return resp, err
}

// countingRT counts requests and the bytes of their answers, as a metrics middleware does:
// it wraps every response body.
type countingRT struct {
	next            http.RoundTripper
	requests, bytes atomic.Int64
}

func (c *countingRT) RoundTrip(r *http.Request) (*http.Response, error) {
	c.requests.Add(1)
	resp, err := c.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &countedBody{ReadCloser: resp.Body, n: &c.bytes}
	return resp, nil
}

type countedBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// tracingRT does to a request what otelhttp.Transport does: it sends a clone of it under a
// context of its own (the span's, with a client trace of its own), and wraps the response
// body to end the span when the body ends.
type tracingRT struct {
	next  http.RoundTripper
	conns atomic.Int64
}

type spanKey struct{}

func (s *tracingRT) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := context.WithValue(r.Context(), spanKey{}, "span")
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { s.conns.Add(1) }})
	resp, err := s.next.RoundTrip(r.Clone(ctx))
	if err != nil {
		return nil, err
	}
	resp.Body = &spanBody{rc: resp.Body}
	return resp, nil
}

type spanBody struct {
	rc    io.ReadCloser
	ended atomic.Bool
}

func (b *spanBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil {
		b.ended.Store(true)
	}
	return n, err
}

func (b *spanBody) Close() error { b.ended.Store(true); return b.rc.Close() }

// idleClient is a client whose pipeline has a 1 s idle limit and sends through base.
func idleClient(t *testing.T, base func(*testing.T, *http.Transport) http.RoundTripper, tr *http.Transport, opts ...Option) *http.Client {
	t.Helper()
	o := testOptions()
	o.RetryCount = 0
	o.StreamIdleTimeoutSeconds = 1
	p, err := New(o, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: p.Wrap(base(t, tr))}
}

// A chunk of an event stream whose bytes trickle in every 100 ms for 2 s: Go's chunked reader
// blocks in one Read for all of it, and the wire is never silent for more than 100 ms.
func TestIdle_DripInsideAChunkIsNotSilenceThroughAnyBase(t *testing.T) {
	for _, b := range bases {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			onlyWatchedOrLinux(t, b.name)
			got, err := drip(t, idleClient(t, b.wrap, &http.Transport{}))
			if err != nil {
				t.Fatalf("a stream whose bytes kept arriving was cut after %d bytes: %v", len(got), err)
			}
		})
	}
}

// The kernel's clock is real time: a pipeline on another clock (WithClock) does not ask it,
// and times a wrapped base's streams per Read — the 2 s Read of the drip is cut. (A bare
// *http.Transport's connections are watched on the pipeline's own clock, fake or not.)
func TestIdle_KernelIsAskedOnlyOnTheWallClock(t *testing.T) {
	type otherClock struct{ wallClock } // real time, but not the pipeline's own wall clock
	c := idleClient(t, bases[1].wrap, &http.Transport{}, WithClock(otherClock{}))
	if _, err := drip(t, c); err == nil {
		t.Fatal("a pipeline on another clock trusted the kernel's")
	}
}

// onlyWatchedOrLinux skips the test of a wrapped base where the kernel is not asked: off
// Linux, only the pipeline's own watched connections (a bare *http.Transport) tell silence
// from a long Read.
func onlyWatchedOrLinux(t *testing.T, base string) {
	if runtime.GOOS != "linux" && base != "http.Transport" {
		t.Skip("only Linux's kernel tells the silence of a wrapped base's connection")
	}
}

// drip sends a request through c to a server whose answer's one chunk trickles in over 2 s,
// and reads the answer.
func drip(t *testing.T, c *http.Client) ([]byte, error) {
	t.Helper()
	event := "data: " + strings.Repeat("d", 192) + "\n\n" // within one Read's buffer
	url := rawStream(t, func(conn net.Conn) error {
		if _, err := fmt.Fprintf(conn, "%x\r\n", len(event)); err != nil {
			return err
		}
		if err := trickle(conn, event, len(event)/20, 100*time.Millisecond); err != nil {
			return err
		}
		_, err := io.WriteString(conn, "\r\n"+chunk("data: [DONE]\n\n")+"0\r\n\r\n")
		return err
	})
	resp, err := post(t, c, url, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err == nil && string(got) != event+"data: [DONE]\n\n" {
		t.Fatalf("body %q", got)
	}
	return got, err
}

// A real silence of 3 s in the middle of a chunk trips the 1 s limit through every base.
func TestIdle_SilenceInsideAChunkIsCutThroughAnyBase(t *testing.T) {
	event := "data: " + strings.Repeat("s", 192) + "\n\n"
	for _, b := range bases {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			url := rawStream(t, func(conn net.Conn) error {
				if _, err := fmt.Fprintf(conn, "%x\r\n%s", len(event), event[:100]); err != nil {
					return err
				}
				time.Sleep(3 * time.Second)
				_, err := io.WriteString(conn, event[100:]+"\r\n0\r\n\r\n")
				return err
			})
			c := idleClient(t, b.wrap, &http.Transport{})
			resp, err := post(t, c, url, `{}`)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			_, err = io.ReadAll(resp.Body)
			var te *TimeoutError
			if !errors.As(err, &te) || te.Limit != TimeoutStreamIdle {
				t.Fatalf("got %v, want the stream-idle timeout", err)
			}
		})
	}
}

// Over HTTP/2 a body Read returns as soon as a DATA frame of the stream arrives, so the Read
// itself measures the silence of the stream (the connection's bytes may be other streams'):
// a drip every 100 ms for 2 s goes through every base, a silence of 3 s after it is cut.
func TestIdle_HTTP2ThroughAnyBase(t *testing.T) {
	for _, b := range bases {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				for i := range 20 {
					fmt.Fprintf(w, "data: %d\n\n", i)
					w.(http.Flusher).Flush()
					time.Sleep(100 * time.Millisecond)
				}
				select {
				case <-r.Context().Done():
				case <-time.After(3 * time.Second):
				}
			}))
			srv.EnableHTTP2 = true
			srv.StartTLS()
			t.Cleanup(srv.Close)
			tr := srv.Client().Transport.(*http.Transport)
			c := idleClient(t, b.wrap, tr)
			resp, err := post(t, c, srv.URL, `{}`)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.ProtoMajor != 2 {
				t.Fatalf("the test server spoke %s", resp.Proto)
			}
			got, err := io.ReadAll(resp.Body)
			var te *TimeoutError
			if !errors.As(err, &te) || te.Limit != TimeoutStreamIdle {
				t.Fatalf("got %v, want the stream-idle timeout after the drip", err)
			}
			if !strings.HasSuffix(string(got), "data: 19\n\n") {
				t.Fatalf("the drip was cut: %q", got)
			}
		})
	}
}
