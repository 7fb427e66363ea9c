package resilience

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
	"time"
)

// The stream idle timeout must measure silence on the wire, not the length of one Read of
// the response body. The two differ for HTTP/1.1: Go's chunked body reader blocks inside one
// Read until the current chunk is complete (and runs on into the next chunk when its header
// is already buffered), so when the network's pieces do not line up with HTTP chunks — a slow
// link, a proxy that re-chunks, TLS records — one Read can last for seconds while bytes
// arrive every few milliseconds. Only the connection sees those bytes.
//
// So every call learns which connection carried it (an httptrace GotConn hook, see
// conntrace.go: it fires through any RoundTripper that ends in an http.Transport, whatever
// wraps it; any answer may turn out to be an event stream, whatever the request's Accept
// header said), and the idle timer, when it fires during a Read of an HTTP/1 stream, asks how
// long the wire has really been silent before it cuts the stream; when bytes came meanwhile
// it re-arms for the rest of the limit, counted from the last bytes. Two sources answer, the
// first that can:
//
//   - the pipeline's own watched connections: when the base transport is an *http.Transport,
//     Wrap sends through a clone of it whose dialers hand out watchedConns, each noting when
//     it last read bytes, on the pipeline's clock (so a fake clock in tests sees them too);
//   - the kernel (Linux, see silence_linux.go), for every other connection: those of a
//     wrapped base (a logging, counting or tracing RoundTripper around an http.Transport),
//     and those of a custom TLS dialer. TCP_INFO's tcpi_last_data_recv says how long ago the
//     socket last received data. It is real time, so the kernel is asked only when the
//     pipeline runs on the wall clock: under a fake clock (WithClock) such streams are timed
//     per Read. Its answer is trusted only when the socket's count of received bytes
//     (tcpi_bytes_received) is non-zero and has grown since the timer's last look: a sandbox
//     kernel that fills neither field (gVisor) must not keep a silent stream alive forever;
//     one that counts bytes but not their time delays a cut by one more limit at most.
//
// Where neither can answer — another OS, a base that ends in no http.Transport, a Unix
// socket — a Read that lasts the whole limit is the silence. HTTP/2 needs none of this: its
// body Read returns as soon as any data frame of the stream arrives, so the Read itself
// measures the silence, and the connection's bytes may be other streams' anyway.

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
// connections the kernel is asked about, where it can be) or when no idle timeout is set.
func watchTransport(base http.RoundTripper, idle time.Duration, clock Clock) http.RoundTripper {
	t, ok := base.(*http.Transport)
	if !ok || idle <= 0 {
		return base
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
	// it is (to negotiate HTTP/2, to fill Response.TLS), so the kernel is asked about those.
	return t
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

// sysConn finds the connection with a file descriptor under conn, if any: a *tls.Conn, and
// any wrapper with a NetConn method, is looked through.
func sysConn(conn net.Conn) syscall.Conn {
	for conn != nil {
		if sc, ok := conn.(syscall.Conn); ok {
			return sc
		}
		u, ok := conn.(interface{ NetConn() net.Conn })
		if !ok {
			return nil
		}
		conn = u.NetConn()
	}
	return nil
}

// wireQuiet returns how long the wire under the call's stream has been silent, counted from
// the start of the waiting Read at the latest; ok is false when it cannot be told (see above)
// and the Read's own length is the silence. It runs on the idle timer's goroutine.
func (c *call) wireQuiet() (quiet time.Duration, ok bool) {
	if !c.wire {
		return 0, false
	}
	conn, t := c.connection()
	if conn == nil {
		return 0, false
	}
	now := c.t.ev.clock.Now().UnixNano()
	reading := time.Duration(now - c.readSince.Load())
	if w := watchedOf(conn); w != nil {
		return min(time.Duration(now-w.last.Load()), reading), true
	}
	if !c.t.kernel {
		return 0, false
	}
	q, received, ok := kernelSilence(conn)
	if !ok || received == 0 || received == t.probed.Swap(received) {
		return 0, false // no bytes since the last look: silent at least since then
	}
	return min(q, reading), true
}
