package resilience

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// rawStream is a TCP server that answers one request with a chunked event stream written by
// write, byte by byte as it chooses: the way a slow link, a re-chunking proxy or TLS records
// split the wire, with no regard for HTTP chunk boundaries.
func rawStream(t *testing.T, write func(conn net.Conn) error) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		br := bufio.NewReader(conn)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		_, _ = io.WriteString(conn, streamHead)
		_ = write(conn)
	}()
	return "http://" + ln.Addr().String() + "/v1/chat/completions"
}

// streamHead is the head of rawStream's answer, written before write runs.
const streamHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"

// chunk frames data as one HTTP/1.1 chunk.
func chunk(data string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(data), data) }

// trickle writes s a few bytes at a time, pausing between pieces.
func trickle(conn net.Conn, s string, piece int, pause time.Duration) error {
	for len(s) > 0 {
		n := min(piece, len(s))
		if _, err := io.WriteString(conn, s[:n]); err != nil {
			return err
		}
		s = s[n:]
		time.Sleep(pause)
	}
	return nil
}

// Rule 9, reproduced: one event in one big HTTP chunk arrives in pieces of 20 bytes, 100 ms
// apart on the pipeline's clock, over 7.5 s. Go's chunked reader blocks inside a single Read
// until the chunk completes, so a per-Read timer of 0.5 s would cut a stream whose bytes never
// stop. Only real silence on the wire may trip StreamIdleTimeoutSeconds.
//
// The clock is the test's, and it moves only once the client has read every byte sent so far
// and waits for more: however late the server's or the reader's goroutine runs, the wire is
// never silent for more than 100 ms of the clock. (On the wall clock, with pieces 20 ms apart,
// the test failed once on a loaded machine: a goroutine held back for 0.5 s, the server's or
// the reader's, is a silence of 0.5 s to the timer.)
func TestStream_IdleTimeoutMeasuresTheWireNotOneRead(t *testing.T) {
	event := "data: " + strings.Repeat("x", 1500) + "\n\n"
	body := chunk(event) + chunk("data: [DONE]\n\n") + "0\r\n\r\n"
	clock := newManualClock()
	reads := make(chan int64, 1<<12) // more than the answer has bytes: a Read returns one at least
	read := make(chan struct{})      // closed when the test ends: the server waits no more
	defer close(read)
	url := rawStream(t, func(conn net.Conn) error {
		sent := int64(len(streamHead))
		// Pieces straddle the chunk boundaries.
		for rest := body; len(rest) > 0; {
			n := min(20, len(rest))
			if _, err := io.WriteString(conn, rest[:n]); err != nil {
				return err
			}
			rest, sent = rest[n:], sent+int64(n)
			// Wait for the client to read all of it and ask for more: its watched
			// connection has noted the bytes on the clock.
			for caught := false; !caught; {
				select {
				case got := <-reads:
					caught = got == sent
				case <-read:
					return nil
				}
			}
			clock.Advance(100 * time.Millisecond)
		}
		return nil
	})
	o := testOptions()
	o.RetryCount = 0
	o.StreamIdleTimeoutSeconds = 0.5
	p, err := New(o, WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	d := &net.Dialer{}
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &readsConn{Conn: conn, reads: reads}, nil
	}}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: p.Wrap(tr)}
	resp, err := post(t, c, url, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("a stream whose bytes kept arriving was cut after %d bytes: %v", len(got), err)
	}
	if string(got) != event+"data: [DONE]\n\n" {
		t.Fatalf("body %q", got)
	}
}

// readsConn tells, as each Read on the connection begins, how many bytes the earlier ones
// returned: when that is all the server sent, whoever reads through it (the pipeline's
// watchedConn) is done with those bytes and waits for more.
type readsConn struct {
	net.Conn
	n     atomic.Int64
	reads chan<- int64
}

func (c *readsConn) Read(p []byte) (int, error) {
	select {
	case c.reads <- c.n.Load():
	default: // never: the channel holds more than the answer has bytes
	}
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// Real silence in the middle of a chunk still trips it.
func TestStream_IdleTimeoutCutsSilenceInsideAChunk(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	url := rawStream(t, func(conn net.Conn) error {
		body := chunk("data: " + strings.Repeat("x", 500) + "\n\n")
		if _, err := io.WriteString(conn, body[:200]); err != nil { // half a chunk, then nothing
			return err
		}
		<-release
		return nil
	})
	o := testOptions()
	o.RetryCount = 0
	o.StreamIdleTimeoutSeconds = 0.2
	c, _ := client(t, o)
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
}

// The same over TLS: the watched connection sits under the TLS one. As above, the clock moves
// 100 ms only once the client has read every byte the server wrote (on the wire: the records
// TLS made of them), so no goroutine held back can make a silence.
func TestStream_IdleTimeoutMeasuresTheWireUnderTLS(t *testing.T) {
	event := "data: " + strings.Repeat("y", 1200) + "\n\n"
	clock := newManualClock()
	reads := make(chan int64, 1<<14)
	read := make(chan struct{}) // closed when the test ends: the server waits no more
	defer close(read)
	var written atomic.Int64 // the bytes the server wrote on the wire, TLS's own included
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_ = buf.Flush()
		_, _ = io.WriteString(conn, streamHead)
		for rest := chunk(event) + "0\r\n\r\n"; len(rest) > 0; {
			n := min(16, len(rest))
			if _, err := io.WriteString(conn, rest[:n]); err != nil {
				return
			}
			rest = rest[n:]
			for caught := false; !caught; {
				select {
				case got := <-reads:
					caught = got == written.Load()
				case <-read:
					return
				}
			}
			clock.Advance(100 * time.Millisecond)
		}
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = writesListener{Listener: ln, n: &written}
	srv.StartTLS()
	defer srv.Close()
	o := testOptions()
	o.RetryCount = 0
	o.StreamIdleTimeoutSeconds = 0.4
	p, err := New(o, WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	tr := srv.Client().Transport.(*http.Transport).Clone()
	d := &net.Dialer{}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &readsConn{Conn: conn, reads: reads}, nil
	}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: p.Wrap(tr)}
	resp, err := post(t, c, srv.URL, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if got, err := io.ReadAll(resp.Body); err != nil || string(got) != event {
		t.Fatalf("a trickling TLS stream was cut: %d bytes, %v", len(got), err)
	}
}

// writesListener counts in n the bytes written on the connections it accepts.
type writesListener struct {
	net.Listener
	n *atomic.Int64
}

func (l writesListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return writesConn{Conn: conn, n: l.n}, nil
}

type writesConn struct {
	net.Conn
	n *atomic.Int64
}

func (c writesConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.n.Add(int64(n))
	return n, err
}
