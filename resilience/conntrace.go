package resilience

import (
	"context"
	"net"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
)

// How a call learns the connection that carries it, whatever RoundTripper the pipeline sends
// through (see wire.go for what it is needed for).
//
// net/http reports each request's connection to the GotConn hook of an httptrace.ClientTrace,
// and finds the trace by asking the request's context for it: http.Transport does, for HTTP/1
// and HTTP/2, at the start of every round trip, under any wrapper that keeps the context's
// values (otelhttp and its like derive the contexts they send from the request's). The call is
// that context for the layers below the timeout layer, so it answers the question itself
// (call.Value). The usual way, httptrace.WithClientTrace, would cost every call three
// allocations (a context, the trace, its hook), also when the base never asks — an in-memory
// or mocked transport; answered in Value, a call costs nothing until the base asks, and then
// two allocations (the trace, its hook).
//
// The context key of a trace is unexported. traceKey learns it once, by letting httptrace look
// a trace up in a context that notes the key it is asked for, and checks the key against
// WithClientTrace. Were that ever to fail (a net/http that looks traces up some other way),
// traceKey is nil and calls fall back to WithClientTrace.
//
// It is read atomically (traceKeyNow): a connection's goroutines may look a call's context up
// at any time, and tests replace the key to take the fallback.
var traceKey atomic.Pointer[keyBox]

func init() { traceKey.Store(&keyBox{learnTraceKey()}) }

// keyBox holds the learnt key of a trace, nil when it could not be learnt.
type keyBox struct{ key any }

// traceKeyNow returns the learnt key of a trace, nil for none.
func traceKeyNow() any { return traceKey.Load().key }

// keySpy is a context that notes the first key it is asked for.
type keySpy struct {
	context.Context
	key any
}

func (s *keySpy) Value(key any) any {
	if s.key == nil {
		s.key = key
	}
	return nil
}

func learnTraceKey() any {
	spy := &keySpy{Context: context.Background()}
	_ = httptrace.ContextClientTrace(spy)
	want := &httptrace.ClientTrace{}
	if spy.key == nil || httptrace.WithClientTrace(context.Background(), want).Value(spy.key) != want {
		return nil
	}
	return spy.key
}

// connTrace is a call's client trace: it notes the connection each attempt of the call gets.
// It is never reused, so a hook that fires late can only note a connection of its own call.
type connTrace struct {
	httptrace.ClientTrace
	// use is what the call answers for the trace: this one, or, when the caller's context
	// holds a trace of its own, both composed (ours first), as WithClientTrace composes them.
	use  *httptrace.ClientTrace
	mu   sync.Mutex
	conn net.Conn
	// probed is the count of bytes the kernel had received on the connection at the idle
	// timer's last look (see call.wireQuiet).
	probed atomic.Uint64
}

func newConnTrace() *connTrace {
	t := &connTrace{}
	t.GotConn = t.gotConn
	t.use = &t.ClientTrace
	return t
}

func (t *connTrace) gotConn(info httptrace.GotConnInfo) {
	t.mu.Lock()
	t.conn = info.Conn
	t.mu.Unlock()
}

// traceConn has the call note the connection each of its attempts gets.
func (c *call) traceConn() {
	if traceKeyNow() != nil {
		c.tracing = true // Value answers; the trace is made when the base first asks
		return
	}
	t := newConnTrace()
	c.trace.Store(t)
	c.Context = httptrace.WithClientTrace(c.Context, &t.ClientTrace)
}

// Value answers the lookup of the client trace for a call that traces its connection, and
// hands every other lookup to the call's context.
func (c *call) Value(key any) any {
	if c.tracing && key == traceKeyNow() {
		return c.clientTrace()
	}
	return c.Context.Value(key)
}

// clientTrace returns the call's trace, made on the first lookup. Lookups may come from
// several goroutines at once (http.Transport's writer looks too), hence the compare-and-swap.
func (c *call) clientTrace() *httptrace.ClientTrace {
	if t := c.trace.Load(); t != nil {
		return t.use
	}
	t := newConnTrace()
	if outer, _ := c.Context.Value(traceKeyNow()).(*httptrace.ClientTrace); outer != nil {
		t.use = httptrace.ContextClientTrace(httptrace.WithClientTrace(c.Context, &t.ClientTrace))
	}
	if !c.trace.CompareAndSwap(nil, t) {
		return c.trace.Load().use
	}
	return t.use
}

// connection returns the connection the call's last attempt got, with the trace that noted it;
// nil when none is known (no attempt reached an http.Transport, or the call does not trace).
func (c *call) connection() (net.Conn, *connTrace) {
	t := c.trace.Load()
	if t == nil {
		return nil, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.conn, t
}
