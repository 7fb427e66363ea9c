package resilience

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"sync/atomic"
	"testing"
)

// A call notes its connection through any base, and every other trace of the request still
// fires: the caller's own (above the pipeline) and a tracing base's (below it).
func TestConnTrace_ComposesWithEveryOtherTrace(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: x\n\n")
	}))
	defer srv.Close()
	o := testOptions()
	o.StreamIdleTimeoutSeconds = 5
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	below := &tracingRT{next: tr}
	c := &http.Client{Transport: p.Wrap(below)}
	var caller atomic.Int64
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { caller.Add(1) },
	})
	resp, err := postCtx(ctx, c, srv.URL, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	call, ok := resp.Body.(*call)
	if !ok {
		t.Fatalf("the body is a %T", resp.Body)
	}
	if conn, _ := call.connection(); conn == nil || caller.Load() != 1 || below.conns.Load() != 1 {
		t.Fatalf("connection %v, the caller's hook fired %d times, the base's %d", conn, caller.Load(), below.conns.Load())
	}
	_, _ = io.Copy(io.Discard, resp.Body)
}

// The trace key is learnt from net/http itself; where that fails, a call traces with
// httptrace.WithClientTrace instead, and the wire is measured all the same.
func TestConnTrace_FallsBackWithoutTheKey(t *testing.T) {
	if traceKeyNow() == nil {
		t.Fatal("the trace key was not learnt: every call pays for WithClientTrace")
	}
	defer traceKey.Store(traceKey.Load())
	traceKey.Store(&keyBox{})
	b := bases[len(bases)-1] // otelhttp-like: its own trace composes with the call's
	onlyWatchedOrLinux(t, b.name)
	if got, err := drip(t, idleClient(t, b.wrap, &http.Transport{})); err != nil {
		t.Fatalf("a stream whose bytes kept arriving was cut after %d bytes: %v", len(got), err)
	}
}
