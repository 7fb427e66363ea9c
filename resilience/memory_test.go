package resilience

import (
	"errors"
	"math"
	"net/http"
	"runtime"
	"testing"
	"time"
)

// memoryTarget is the most one pipeline may hold (docs/performance.md): a client
// keeps one per deployment and one per route of it, each model the deployment serves.
const memoryTarget = 4096

// unusedBase is a base transport that is never called: the pipelines below are only built.
type unusedBase struct{}

func (unusedBase) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("unusedBase: not for calls")
}

// allocated returns the bytes build(i) allocates, per call, after prepare(n) (not counted): the
// least over a few rounds of n calls. It counts from the allocator's own tally of the bytes it
// handed out (MemStats.TotalAlloc, exact once ReadMemStats has flushed every cache), which no
// collection changes, so the figure does not depend on when the collector runs; another
// goroutine allocating meanwhile can only add to a round, and the least round is taken.
// Building a pipeline frees nothing it allocated (BenchmarkPipelineRetained shows what it
// keeps), so this is also what a live one holds, or a little more.
func allocated(n int, prepare func(n int), build func(i int)) float64 {
	least := math.Inf(1)
	var before, after runtime.MemStats
	for range 5 {
		prepare(n)
		runtime.ReadMemStats(&before)
		for i := range n {
			build(i)
		}
		runtime.ReadMemStats(&after)
		least = min(least, float64(after.TotalAlloc-before.TotalAlloc)/float64(n))
	}
	return least
}

// A pipeline with the default options, and each route of it, holds less than memoryTarget:
// New alone, New with the chain of Wrap, a route made by Route, and a route with the chain of
// layers it keeps for a wrapped transport (made by the first call that names it).
func TestPipeline_Memory(t *testing.T) {
	const n = 100
	opts := DefaultOptions()
	pipes := make([]*Pipeline, n)
	kept := make([]any, n) // what is built stays alive until it is counted
	var (
		parents []*Pipeline
		rts     []*bulkheadTransport
	)
	newPipeline := func() *Pipeline {
		p, err := New(opts, WithName("openai-eu"))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	none := func(int) { clear(kept) }
	deployments := func(n int) {
		clear(kept)
		parents, rts = make([]*Pipeline, n), make([]*bulkheadTransport, n)
		for i := range parents {
			parents[i] = newPipeline()
			rts[i] = parents[i].Wrap(unusedBase{}).(*bulkheadTransport)
		}
	}
	cases := []struct {
		name    string
		prepare func(n int)
		build   func(i int)
	}{
		{"New", none, func(i int) { pipes[i] = newPipeline() }},
		{"New+Wrap", none, func(i int) { kept[i] = newPipeline().Wrap(unusedBase{}) }},
		{"Route", deployments, func(i int) { pipes[i] = parents[i].Route("gpt-4o-mini-2024-07-18") }},
		{"Route+chain", deployments, func(i int) { kept[i] = rts[i].routed("gpt-4o-mini-2024-07-18") }},
		// A pipeline allocates its window of first-content times with its first sample: the
		// same, measured once (the largest a pipeline gets).
		{"New+Wrap+measured", none, func(i int) {
			p := newPipeline()
			p.ObserveLatency(LatencySample{FirstContent: time.Millisecond, Stream: true})
			kept[i] = p.Wrap(unusedBase{})
		}},
		{"Route+measured", deployments, func(i int) {
			r := parents[i].Route("gpt-4o-mini-2024-07-18")
			r.ObserveLatency(LatencySample{FirstContent: time.Millisecond, Stream: true})
			pipes[i] = r
		}},
	}
	for _, c := range cases {
		b := allocated(n, c.prepare, c.build)
		t.Logf("%-18s %5.0f B", c.name, b)
		if b >= memoryTarget {
			t.Errorf("%s: %.0f B, want under %d B", c.name, b, memoryTarget)
		}
	}
	runtime.KeepAlive(pipes)
	runtime.KeepAlive(kept)
	runtime.KeepAlive(parents)
	if len(parents[0].Routes()) != 1 {
		t.Fatal("the route counted is not the deployment's")
	}
}
