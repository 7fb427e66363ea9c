package interop

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/steadyllm/steady/resilience"
)

// The resilience pipeline over a base wrapped by the real otelhttp.Transport (which sends a
// clone of each request under a context of its own, adds a client trace of its own and wraps
// the response body): the stream idle limit still measures silence on the wire (Linux asks
// the kernel, see resilience/wire.go). A chunk whose bytes trickle in every 100 ms for 2 s is
// one long Read of Go's chunked reader, and must not trip a 0.5 s limit; 1.5 s of real
// silence must.
func TestOtelhttp_StreamIdleMeasuresTheWire(t *testing.T) {
	event := "data: " + strings.Repeat("o", 192) + "\n\n"
	for _, tc := range []struct {
		name  string
		write func(conn net.Conn) error
		cut   bool
	}{
		{"drip", func(conn net.Conn) error {
			if _, err := fmt.Fprintf(conn, "%x\r\n", len(event)); err != nil {
				return err
			}
			for i := 0; i < len(event); i += len(event) / 20 {
				if _, err := io.WriteString(conn, event[i:min(i+len(event)/20, len(event))]); err != nil {
					return err
				}
				time.Sleep(100 * time.Millisecond)
			}
			_, err := io.WriteString(conn, "\r\n0\r\n\r\n")
			return err
		}, false},
		{"silence", func(conn net.Conn) error {
			if _, err := fmt.Fprintf(conn, "%x\r\n%s", len(event), event[:100]); err != nil {
				return err
			}
			time.Sleep(1500 * time.Millisecond)
			_, err := io.WriteString(conn, event[100:]+"\r\n0\r\n\r\n")
			return err
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := chunkedServer(t, tc.write)
			o := resilience.DefaultOptions()
			o.RetryCount = 0
			o.StreamIdleTimeoutSeconds = 0.5
			p, err := resilience.New(o)
			if err != nil {
				t.Fatal(err)
			}
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			var traced atomic.Int64
			base := otelhttp.NewTransport(tr, otelhttp.WithClientTrace(func(context.Context) *httptrace.ClientTrace {
				return &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { traced.Add(1) }}
			}))
			c := &http.Client{Transport: p.Wrap(base)}
			resp, err := c.Post(url, "application/json", strings.NewReader(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			var te *resilience.TimeoutError
			switch {
			case tc.cut && !(errors.As(err, &te) && te.Limit == resilience.TimeoutStreamIdle):
				t.Fatalf("1.5 s of silence: %v, want the stream-idle timeout", err)
			case !tc.cut && (err != nil || string(got) != event):
				t.Fatalf("a stream whose bytes kept arriving: %d bytes, %v", len(got), err)
			case traced.Load() != 1:
				t.Fatalf("otelhttp's own client trace fired %d times", traced.Load())
			}
		})
	}
}

// chunkedServer answers one request on 127.0.0.1 with the headers of a chunked event stream,
// then lets write put the body on the wire as it chooses.
func chunkedServer(t *testing.T, write func(conn net.Conn) error) string {
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
		req, err := http.ReadRequest(bufio.NewReader(conn))
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
		_ = write(conn)
	}()
	return "http://" + ln.Addr().String() + "/v1/chat/completions"
}
