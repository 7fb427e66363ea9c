package resilience

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
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
		_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
		_ = write(conn)
	}()
	return "http://" + ln.Addr().String() + "/v1/chat/completions"
}

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

// Rule 9, reproduced: one event in one big HTTP chunk arrives over 1.5 s in pieces every
// 20 ms. Go's chunked reader blocks inside a single Read until the chunk completes, so a
// per-Read timer of 0.5 s would cut a stream whose bytes never stop. Only real silence on
// the wire may trip StreamIdleTimeoutSeconds.
func TestStream_IdleTimeoutMeasuresTheWireNotOneRead(t *testing.T) {
	event := "data: " + strings.Repeat("x", 1500) + "\n\n"
	url := rawStream(t, func(conn net.Conn) error {
		body := chunk(event) + chunk("data: [DONE]\n\n") + "0\r\n\r\n"
		// Pieces straddle the chunk boundaries: 20 bytes every 20 ms.
		return trickle(conn, body, 20, 20*time.Millisecond)
	})
	o := testOptions()
	o.RetryCount = 0
	o.StreamIdleTimeoutSeconds = 0.5
	c, _ := client(t, o)
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

// The same over TLS: the watched connection sits under the TLS one.
func TestStream_IdleTimeoutMeasuresTheWireUnderTLS(t *testing.T) {
	event := "data: " + strings.Repeat("y", 1200) + "\n\n"
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_ = buf.Flush()
		_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
		_ = trickle(conn, chunk(event)+"0\r\n\r\n", 16, 20*time.Millisecond)
	}))
	defer srv.Close()
	o := testOptions()
	o.RetryCount = 0
	o.StreamIdleTimeoutSeconds = 0.4
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	tr := srv.Client().Transport.(*http.Transport)
	c := &http.Client{Transport: p.Wrap(tr)}
	defer c.CloseIdleConnections()
	resp, err := post(t, c, srv.URL, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if got, err := io.ReadAll(resp.Body); err != nil || string(got) != event {
		t.Fatalf("a trickling TLS stream was cut: %d bytes, %v", len(got), err)
	}
}
