package resilience_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"testing"

	"github.com/steadyllm/steady/resilience"
)

// Benchmarks for the pipeline's performance targets (see docs/performance.md).
// The base transport is in memory, so the difference between BenchmarkPipeline_Success and
// BenchmarkBaseTransport is the pipeline's own overhead.
//
//	go test ./resilience -run '^$' -bench . -benchmem -count 5

// benchBody is a small chat-completion-shaped JSON body, shared by every response: the base
// wraps it in a fresh reader per call, so nothing is copied.
var benchBody = []byte(`{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o-mini",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`)

var benchContentType = []string{"application/json"}

// memTransport answers every request in memory with a canned response: a fresh *http.Response,
// header map and body reader per call, as a real transport would allocate, and nothing else.
type memTransport struct{ status int }

func (t memTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return &http.Response{
		Status:        strconv.Itoa(t.status),
		StatusCode:    t.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": benchContentType},
		Body:          io.NopCloser(bytes.NewReader(benchBody)),
		ContentLength: int64(len(benchBody)),
		Request:       req,
	}, nil
}

// benchRequest is built once and reused: the layers must not mutate the caller's request.
func benchRequest(b *testing.B) *http.Request {
	b.Helper()
	req, err := http.NewRequest(http.MethodGet, "https://api.example.com/v1/chat/completions", nil)
	if err != nil {
		b.Fatal(err)
	}
	return req
}

// consume reads the body to EOF and closes it, as a client decoding JSON would.
func consume(resp *http.Response) error {
	_, err := io.Copy(io.Discard, resp.Body)
	if cerr := resp.Body.Close(); err == nil {
		err = cerr
	}
	return err
}

func call(rt http.RoundTripper, req *http.Request) error {
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		_ = consume(resp)
		return errors.New("status " + resp.Status)
	}
	return consume(resp)
}

func newPipeline(b *testing.B, opts resilience.Options) *resilience.Pipeline {
	b.Helper()
	p, err := resilience.New(opts, resilience.WithName("bench"))
	if err != nil {
		b.Fatal(err)
	}
	return p
}

func BenchmarkBaseTransport(b *testing.B) {
	rt := http.RoundTripper(memTransport{status: http.StatusOK})
	req := benchRequest(b)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := call(rt, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPipeline_Success: one successful call through all four layers with
// DefaultOptions (total timeout, breaker, bulkhead, retry budget and jitter all on).
func BenchmarkPipeline_Success(b *testing.B) {
	rt := newPipeline(b, resilience.DefaultOptions()).Wrap(memTransport{status: http.StatusOK})
	req := benchRequest(b)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := call(rt, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPipeline_SuccessWatched is BenchmarkPipeline_Success with a watcher (Watch): one
// that hears every event, so that the call's own events (an attempt started and finished, a
// slot given) are built and delivered; and one that hears what goes wrong only, as a status
// page does, for which the call builds only its attempt's end.
func BenchmarkPipeline_SuccessWatched(b *testing.B) {
	for _, bc := range []struct {
		name  string
		types []resilience.EventType
	}{
		{"every-event", nil},
		{"what-goes-wrong", []resilience.EventType{resilience.EventAttemptFinished, resilience.EventRetryScheduled,
			resilience.EventGaveUp, resilience.EventTimeout, resilience.EventBreakerStateChanged}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p := newPipeline(b, resilience.DefaultOptions())
			stop := p.Watch(func(resilience.Event) {}, bc.types...)
			defer stop()
			rt := p.Wrap(memTransport{status: http.StatusOK})
			req := benchRequest(b)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := call(rt, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPipeline_SuccessRouted is BenchmarkPipeline_Success for a call that names its route
// (a model, as the client's calls do): the route's layers run under the deployment's, and cost
// no allocation more.
func BenchmarkPipeline_SuccessRouted(b *testing.B) {
	rt := newPipeline(b, resilience.DefaultOptions()).Wrap(memTransport{status: http.StatusOK})
	rc := &resilience.Call{}
	rc.Init(context.Background(), false)
	rc.Route = "gpt-4o"
	req := benchRequest(b).WithContext(rc)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := call(rt, req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBaseTransportParallel(b *testing.B) {
	rt := http.RoundTripper(memTransport{status: http.StatusOK})
	req := benchRequest(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := call(rt, req); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkPipeline_SuccessParallel shares one pipeline (one bulkhead, breaker and budget)
// between GOMAXPROCS goroutines, which is how an SDK client is used.
func BenchmarkPipeline_SuccessParallel(b *testing.B) {
	rt := newPipeline(b, resilience.DefaultOptions()).Wrap(memTransport{status: http.StatusOK})
	req := benchRequest(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := call(rt, req); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkPipeline_CircuitOpen: a call rejected by the breaker, either isolated by hand or
// genuinely open after CircuitBreakerThreshold consecutive 500s.
func BenchmarkPipeline_CircuitOpen(b *testing.B) {
	b.Run("isolated", func(b *testing.B) {
		p := newPipeline(b, resilience.DefaultOptions())
		rt := p.Wrap(memTransport{status: http.StatusOK})
		p.Isolate()
		benchRejected(b, rt, resilience.ErrCircuitOpen)
	})
	b.Run("tripped", func(b *testing.B) {
		opts := resilience.DefaultOptions()
		opts.CircuitBreakerMinDurationSeconds = opts.CircuitBreakerDurationSeconds // 30 s, whatever -benchtime
		p := newPipeline(b, opts)
		rt := p.Wrap(memTransport{status: http.StatusInternalServerError}) // 500: a failure, not retried
		req := benchRequest(b)
		for range opts.CircuitBreakerThreshold {
			if err := call(rt, req); err == nil {
				b.Fatal("500 reported as success")
			}
		}
		if s := p.CircuitState(); s != resilience.CircuitOpen {
			b.Fatalf("circuit %s after %d failures, want open", s, opts.CircuitBreakerThreshold)
		}
		benchRejected(b, rt, resilience.ErrCircuitOpen)
		if s := p.CircuitState(); s != resilience.CircuitOpen {
			b.Fatalf("circuit %s at the end, want open (the benchmark outlasted the break?)", s)
		}
	})
}

// BenchmarkPipeline_BulkheadFull: a call rejected by a full bulkhead. Its only slot is held
// by a response whose body is still open; the queue has no room.
func BenchmarkPipeline_BulkheadFull(b *testing.B) {
	opts := resilience.DefaultOptions()
	opts.BulkheadMaxConcurrency = 1
	opts.BulkheadMaxQueue = 0
	rt := newPipeline(b, opts).Wrap(memTransport{status: http.StatusOK})
	held, err := rt.RoundTrip(benchRequest(b))
	if err != nil {
		b.Fatal(err)
	}
	defer held.Body.Close()
	benchRejected(b, rt, resilience.ErrBulkheadRejected)
}

func benchRejected(b *testing.B, rt http.RoundTripper, want error) {
	b.Helper()
	req := benchRequest(b)
	if _, err := rt.RoundTrip(req); !errors.Is(err, want) {
		b.Fatalf("got %v, want %v", err, want)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if resp, err := rt.RoundTrip(req); err == nil {
			_ = consume(resp)
			b.Fatal("call was not rejected")
		}
	}
}

// sink keeps benchmark results alive, so the compiler cannot drop the work.
var sink any

// BenchmarkNew reports what building a pipeline allocates: New alone, and New plus Wrap.
func BenchmarkNew(b *testing.B) {
	opts := resilience.DefaultOptions()
	base := memTransport{status: http.StatusOK}
	b.Run("New", func(b *testing.B) {
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			p, err := resilience.New(opts, resilience.WithName("bench"))
			if err != nil {
				b.Fatal(err)
			}
			sink = p
		}
	})
	b.Run("New+Wrap", func(b *testing.B) {
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			p, err := resilience.New(opts, resilience.WithName("bench"))
			if err != nil {
				b.Fatal(err)
			}
			sink = p.Wrap(base)
		}
	})
}

// BenchmarkPipelineRetained measures the heap one live pipeline keeps (B/pipeline), as the
// HeapAlloc growth after a GC while a batch of pipelines is kept alive. What New allocates
// and frees at once (validation, option closures) is not counted. Each iteration builds a
// batch of retainedBatch pipelines, so ns/op is per batch; ns/pipeline is reported as well.
//
// A client keeps one pipeline per deployment and one per route of it (each model it serves),
// so Route counts what one route (Pipeline.Route) adds to a live deployment, made before the
// count starts. (The chain of layers a route keeps per wrapped transport is counted by
// TestPipeline_Memory.)
func BenchmarkPipelineRetained(b *testing.B) {
	const retainedBatch = 1000
	opts := resilience.DefaultOptions()
	base := memTransport{status: http.StatusOK}
	var parents []*resilience.Pipeline
	cases := []struct {
		name    string
		prepare func(b *testing.B) // not counted
		build   func(b *testing.B, i int) any
	}{
		{"New", func(*testing.B) {}, func(b *testing.B, _ int) any { return newPipeline(b, opts) }},
		{"New+Wrap", func(*testing.B) {}, func(b *testing.B, _ int) any {
			return newPipeline(b, opts).Wrap(base) // the chain references the pipeline
		}},
		{"Route", func(b *testing.B) {
			parents = make([]*resilience.Pipeline, retainedBatch)
			for i := range parents {
				parents[i] = newPipeline(b, opts)
			}
		}, func(_ *testing.B, i int) any {
			return parents[i].Route("gpt-4o")
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			keep := make([]any, retainedBatch)
			var ms runtime.MemStats
			var grown, built float64
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				clear(keep)
				c.prepare(b)
				runtime.GC()
				runtime.ReadMemStats(&ms)
				before := ms.HeapAlloc
				b.StartTimer()
				for i := range keep {
					keep[i] = c.build(b, i)
				}
				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&ms)
				grown += float64(int64(ms.HeapAlloc) - int64(before))
				built += retainedBatch
				runtime.KeepAlive(keep)
				runtime.KeepAlive(parents)
				b.StartTimer()
			}
			b.ReportMetric(grown/built, "B/pipeline")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/built, "ns/pipeline")
		})
	}
}

// BenchmarkPipeline_SuccessAblation switches off, through Options only, the parts that can be
// switched off, to attribute the success-path cost: the total and stream-idle timeouts (the
// timeout layer becomes a pass-through) and the retry budget.
func BenchmarkPipeline_SuccessAblation(b *testing.B) {
	variants := []struct {
		name string
		set  func(*resilience.Options)
	}{
		{"default", func(*resilience.Options) {}},
		{"no-timeout", func(o *resilience.Options) { o.TimeoutSeconds, o.StreamIdleTimeoutSeconds = 0, 0 }},
		{"no-budget", func(o *resilience.Options) { o.RetryBudgetPercent = 0 }},
		{"no-timeout-no-budget", func(o *resilience.Options) {
			o.TimeoutSeconds, o.StreamIdleTimeoutSeconds, o.RetryBudgetPercent = 0, 0, 0
		}},
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			opts := resilience.DefaultOptions()
			v.set(&opts)
			rt := newPipeline(b, opts).Wrap(memTransport{status: http.StatusOK})
			req := benchRequest(b)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := call(rt, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
