package resilience

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// The stream idle timeout must measure silence on the wire, not the length of one Read of
// the response body. The two differ for HTTP/1.1: Go's chunked body reader blocks inside one
// Read until the current chunk is complete (and runs on into the next chunk when its header
// is already buffered), so when the network's pieces do not line up with HTTP chunks — a slow
// link, a proxy that re-chunks, TLS records — one Read can last for seconds while bytes
// arrive every few milliseconds. Only the connection sees those bytes.
//
// So the pipeline watches its connections: when the base transport is an *http.Transport, Wrap
// uses a clone of it whose dialers hand out watchedConns, each noting when it last read
// bytes. Every call learns which connection carried it (an httptrace GotConn hook: any
// answer may turn out to be an event stream, whatever the request's Accept header said), and
// the idle timer, when it fires during a Read, asks that
// connection before cutting the stream. HTTP/2 needs none of this: its body Read returns as
// soon as any data frame of the stream arrives, so the Read itself measures the silence.

// watchedConn is a connection that notes when it last read bytes, on the pipeline's clock.
type watchedConn struct {
	net.Conn
	clock Clock
	last  atomic.Int64 // UnixNano of the last read that returned bytes
}

func (c *watchedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.last.Store(c.clock.Now().UnixNano())
	}
	return n, err
}

// NetConn returns the connection it watches.
func (c *watchedConn) NetConn() net.Conn { return c.Conn }

// watchTransport returns base as the pipeline sends through it: a clone of an *http.Transport
// whose connections are watched, or base itself when it is another RoundTripper (whose
// streams are then timed per Read) or when no idle timeout is set.
func watchTransport(base http.RoundTripper, idle time.Duration, clock Clock) (http.RoundTripper, bool) {
	t, ok := base.(*http.Transport)
	if !ok || idle <= 0 {
		return base, false
	}
	t = t.Clone()
	watch := func(c net.Conn, err error) (net.Conn, error) {
		if err != nil {
			return nil, err
		}
		return &watchedConn{Conn: c, clock: clock}, nil
	}
	switch {
	case t.DialContext != nil:
		dial := t.DialContext
		t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			return watch(dial(ctx, network, addr))
		}
	case t.Dial != nil: // a transport configured the old way
		dial := t.Dial
		t.Dial = func(network, addr string) (net.Conn, error) { return watch(dial(network, addr)) }
	default:
		d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
		t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			return watch(d.DialContext(ctx, network, addr))
		}
	}
	// A custom TLS dialer's connections are left alone: http.Transport needs its *tls.Conn as
	// it is (to negotiate HTTP/2, to fill Response.TLS), so those streams are timed per Read.
	return t, true
}

// watchedOf finds the watchedConn under conn, if any (a TLS connection wraps it).
func watchedOf(conn net.Conn) *watchedConn {
	for conn != nil {
		if w, ok := conn.(*watchedConn); ok {
			return w
		}
		u, ok := conn.(interface{ NetConn() net.Conn })
		if !ok {
			return nil
		}
		conn = u.NetConn()
	}
	return nil
}
