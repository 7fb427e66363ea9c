package resilience

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func bulkheadOptions(maxConc, maxQueue int) Options {
	o := testOptions()
	o.BulkheadMaxConcurrency = maxConc
	o.BulkheadMaxQueue = maxQueue
	return o
}

func TestBulkhead_RejectsWhenFull(t *testing.T) {
	s := newScript(t, ok())
	var rec recorder
	c, _ := client(t, bulkheadOptions(1, 0), OnEvent(rec.observe))
	held, err := post(t, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = post(t, c, s.url(), `{}`)
	var be *BulkheadRejectedError
	if !errors.Is(err, ErrBulkheadRejected) || !errors.As(err, &be) || be.MaxConcurrency != 1 {
		t.Fatalf("got %v, want ErrBulkheadRejected", err)
	}
	if s.hits.Load() != 1 || len(rec.kind(EventBulkheadRejected)) != 1 {
		t.Fatalf("%d hits, events %+v", s.hits.Load(), rec.kind(EventBulkheadRejected))
	}
	readAll(t, held)
}

func TestBulkhead_HoldsSlotUntilBodyClosed(t *testing.T) {
	s := newScript(t, ok())
	c, p := client(t, bulkheadOptions(1, 0))
	held, err := post(t, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if p.bh.inFlight() != 1 {
		t.Fatal("RoundTrip returned and the slot was freed before the body was closed")
	}
	if _, err := post(t, c, s.url(), `{}`); !errors.Is(err, ErrBulkheadRejected) {
		t.Fatalf("got %v while the first body is open", err)
	}
	held.Body.Close()
	if code, err := doCall(t, c, s.url()); err != nil || code != 200 {
		t.Fatalf("after close: %d %v", code, err)
	}
	if p.bh.inFlight() != 0 {
		t.Fatalf("%d slots still taken", p.bh.inFlight())
	}
}

func TestBulkhead_ReleasesAtEOFAndOnError(t *testing.T) {
	s := newScript(t, ok())
	c, p := client(t, bulkheadOptions(1, 0))
	resp, err := post(t, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body) // EOF without Close
	if p.bh.inFlight() != 0 {
		t.Fatal("slot held after EOF")
	}
	resp.Body.Close()
	s.srv.Close()
	if _, err := post(t, c, s.url(), `{}`); err == nil {
		t.Fatal("want an error from a closed server")
	}
	if p.bh.inFlight() != 0 {
		t.Fatal("slot held after a failed round trip")
	}
}

// countingTransport measures the exchanges open at once below the pipeline: from RoundTrip
// until the response body is closed.
type countingTransport struct {
	base      http.RoundTripper
	open, max atomic.Int32
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	n := c.open.Add(1)
	for {
		m := c.max.Load()
		if n <= m || c.max.CompareAndSwap(m, n) {
			break
		}
	}
	resp, err := c.base.RoundTrip(req)
	if err != nil {
		c.open.Add(-1)
		return nil, err
	}
	resp.Body = &doneBody{rc: resp.Body, f: finishFunc(func(error) { c.open.Add(-1) })}
	return resp, nil
}

type finishFunc func(error)

func (f finishFunc) finish(err error) { f(err) }

func TestBulkhead_NeverExceedsLimitUnder200Callers(t *testing.T) {
	s := newScript(t, func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(time.Millisecond)
		_, _ = io.WriteString(w, "ok")
	})
	p, err := New(bulkheadOptions(5, 1000))
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 10}
	defer tr.CloseIdleConnections()
	counter := &countingTransport{base: tr}
	c := &http.Client{Transport: p.Wrap(counter)}
	var wg sync.WaitGroup
	var failures atomic.Int32
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := postCtx(context.Background(), c, s.url(), `{}`)
			if err != nil {
				failures.Add(1)
				return
			}
			io.ReadAll(resp.Body)
			resp.Body.Close()
		}()
	}
	wg.Wait()
	if failures.Load() != 0 || s.hits.Load() != 200 {
		t.Fatalf("%d failures, %d hits", failures.Load(), s.hits.Load())
	}
	if m := counter.max.Load(); m > 5 || m < 1 {
		t.Fatalf("%d exchanges were open at once, limit 5", m)
	}
}

func TestBulkhead_QueueTimeout(t *testing.T) {
	s := newScript(t, ok())
	o := bulkheadOptions(1, 1)
	o.BulkheadQueueTimeoutSeconds = 0.03
	c, _ := client(t, o)
	held, err := post(t, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Body.Close()
	_, err = post(t, c, s.url(), `{}`)
	var be *BulkheadRejectedError
	if !errors.As(err, &be) || be.Waited != 30*time.Millisecond {
		t.Fatalf("got %v, want a rejection after waiting the queue timeout", err)
	}
}

func TestBulkhead_QueuedCallerProceedsWhenSlotFrees(t *testing.T) {
	s := newScript(t, ok())
	c, p := client(t, bulkheadOptions(1, 1))
	held, err := post(t, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	result := make(chan error, 1)
	go func() {
		_, err := doCall(t, c, s.url())
		result <- err
	}()
	eventually(t, "the second caller to queue", func() bool { return p.bh.waiting.Load() == 1 })
	held.Body.Close()
	if err := <-result; err != nil {
		t.Fatal(err)
	}
}

func TestBulkhead_CallerCancelWhileQueued(t *testing.T) {
	s := newScript(t, ok())
	c, p := client(t, bulkheadOptions(1, 1))
	held, err := post(t, c, s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Body.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		eventually(t, "queued", func() bool { return p.bh.waiting.Load() == 1 })
		cancel()
	}()
	if _, err := postCtx(ctx, c, s.url(), `{}`); !errors.Is(err, context.Canceled) || errors.Is(err, ErrBulkheadRejected) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}
