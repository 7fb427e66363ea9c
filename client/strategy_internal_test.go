package client

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// idle is a provider that is never called: routing alone is under test.
type idle struct{}

func (idle) Name() string { return "idle" }
func (idle) Chat(context.Context, *providers.ChatRequest) (*providers.ChatResponse, error) {
	return nil, errors.New("not called")
}
func (idle) ChatStream(context.Context, *providers.ChatRequest) (providers.Stream, error) {
	return nil, errors.New("not called")
}
func (idle) Embed(context.Context, *providers.EmbedRequest) (*providers.EmbedResponse, error) {
	return nil, errors.New("not called")
}

const routeModel = "gpt-4o-mini"

// routedEntry returns the entry of a provider of n deployments routed by strategy, whose routes
// for routeModel measured the first-token times ttft (one per deployment, the rest repeat the
// last; 0: no sample).
func routedEntry(tb testing.TB, strategy Strategy, n int, src rand.Source, ttft ...time.Duration) *entry {
	return pacedEntry(tb, strategy, n, 0, src, ttft...)
}

// pacedEntry is routedEntry with deployments limited to rpm requests a minute (0: none).
func pacedEntry(tb testing.TB, strategy Strategy, n, rpm int, src rand.Source, ttft ...time.Duration) *entry {
	tb.Helper()
	deps := make([]Deployment, n)
	for i := range deps {
		deps[i] = Deployment{Name: fmt.Sprintf("d%d", i), Factory: func(*http.Client) (providers.Provider, error) { return idle{}, nil },
			RequestsPerMinute: rpm, TokensPerMinute: 100 * rpm}
	}
	opts := []Option{WithDeployments("p", resilience.DefaultOptions(), strategy, deps...)}
	if src != nil {
		opts = append(opts, WithRandomSource(src))
	}
	c, err := New(opts...)
	if err != nil {
		tb.Fatal(err)
	}
	e := c.entries["p"]
	for i, d := range e.deps {
		t := ttft[min(i, len(ttft)-1)]
		for range 10 * min(t, 1) {
			d.pipeline.Route(routeModel).ObserveLatency(resilience.LatencySample{FirstContent: t, Stream: true})
		}
	}
	return e
}

// picks routes calls of w on e n times and counts the deployment each went to first.
func picks(e *entry, w *walk, n int) map[string]int {
	got := map[string]int{}
	for range n {
		got[e.order(w, routeModel)[0].name]++
	}
	return got
}

// A deployment three times slower than the two others keeps its exploration share and a
// little more (about 5 %); equal ones share evenly; the draws come from the client's source.
func TestStrategyLatency_WeighsByScoreWithAnExplorationShare(t *testing.T) {
	e := routedEntry(t, StrategyLatency, 3, rand.NewPCG(1, 2), 300*time.Millisecond, 100*time.Millisecond)
	w := &walk{c: &Client{}, ask: ask{need: providers.CapStreaming}, op: operation{}}
	const n = 20_000
	got := picks(e, w, n)
	if slow := float64(got["p/d0"]) / n; slow < 0.035 || slow > 0.06 {
		t.Fatalf("the slow deployment has %.3f of the calls (%v)", slow, got)
	}
	if a, b := got["p/d1"], got["p/d2"]; a < n*45/100 || b < n*45/100 {
		t.Fatalf("the fast ones: %v", got)
	}
	// The same source, the same picks.
	again := picks(routedEntry(t, StrategyLatency, 3, rand.NewPCG(1, 2), 300*time.Millisecond, 100*time.Millisecond), w, n)
	if fmt.Sprint(again) != fmt.Sprint(got) {
		t.Fatalf("seeded routing differs: %v then %v", got, again)
	}
}

// A whole answer is scored by the time per output token; a deployment without that measure
// counts as the best (explored), and when none has it the first-token time decides.
func TestStrategyLatency_MeasureFollowsTheCall(t *testing.T) {
	e := routedEntry(t, StrategyLatency, 2, rand.NewPCG(3, 4), 300*time.Millisecond, 100*time.Millisecond)
	whole := &walk{c: &Client{}, ask: ask{need: providers.CapChat}, op: operation{}}
	// No time per token yet anywhere: the first-token times decide, as for a stream.
	if got := picks(e, whole, 2000); got["p/d1"] < 1800 {
		t.Fatalf("no per-token times: %v", got)
	}
	// d0 answers 10 ms a token, d1 30 ms: whole answers go to d0, streams still to d1.
	for range 10 {
		e.deps[0].pipeline.Route(routeModel).ObserveLatency(resilience.LatencySample{FirstContent: time.Second, OutputTokens: 100})
		e.deps[1].pipeline.Route(routeModel).ObserveLatency(resilience.LatencySample{FirstContent: 3 * time.Second, OutputTokens: 100})
	}
	if got := picks(e, whole, 2000); got["p/d0"] < 1800 {
		t.Fatalf("whole answers: %v", got)
	}
	if got := picks(e, &walk{c: &Client{}, ask: ask{need: providers.CapStreaming}, op: operation{}}, 2000); got["p/d1"] < 1800 {
		t.Fatalf("streams: %v", got)
	}
	// A third deployment with no sample is as promising as the best: it gets the best's share.
	e = routedEntry(t, StrategyLatency, 3, rand.NewPCG(5, 6), 300*time.Millisecond, 100*time.Millisecond, 0)
	got := picks(e, &walk{c: &Client{}, ask: ask{need: providers.CapStreaming}, op: operation{}}, 4000)
	if got["p/d1"] < 1600 || got["p/d2"] < 1600 {
		t.Fatalf("an unmeasured deployment is not explored: %v", got)
	}
}

// Failures and a budget running low weigh a deployment down; one that cannot take the call
// comes last, whatever its speed.
func TestStrategyLatency_ErrorsBudgetsAndAvailability(t *testing.T) {
	e := routedEntry(t, StrategyLatency, 2, rand.NewPCG(7, 8), 100*time.Millisecond)
	stream := &walk{c: &Client{}, ask: ask{need: providers.CapStreaming}, op: operation{}}
	for range 6 { // error rate 1 − 0.75⁶ ≈ 0.82: about five times its time
		e.deps[0].pipeline.Route(routeModel).ObserveLatency(resilience.LatencySample{Failed: true})
	}
	if got := picks(e, stream, 2000); got["p/d1"] < 1800 {
		t.Fatalf("the failing deployment is not avoided: %v", got)
	}
	e.deps[1].pipeline.Isolate()
	for range 50 {
		if order := e.order(stream, routeModel); order[0].name != "p/d0" || order[1].name != "p/d1" {
			t.Fatalf("an isolated deployment first: %v %v", order[0].name, order[1].name)
		}
	}
	for _, tc := range []struct{ rate, left, want float64 }{
		{0, 1, 1}, {0.5, 1, 2}, {1, 1, 10}, {0, 0.6, 1}, {0, 0.25, 2}, {0, 0, 10}, {0.5, 0.25, 4},
	} {
		if got := penalty(tc.rate, tc.left); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("penalty(%v, %v) = %v, want %v", tc.rate, tc.left, got, tc.want)
		}
	}
}

// A sticky key stays on its rendezvous home while the home scores within twice the best, and
// moves — to the same second choice every time — when it does not.
func TestStrategyLatency_StickyKeyStaysWhileHealthy(t *testing.T) {
	e := routedEntry(t, StrategyLatency, 3, nil, 100*time.Millisecond)
	w := &walk{c: &Client{}, ask: ask{need: providers.CapStreaming}, op: operation{pl: plan{sticky: "user-42"}}}
	home := e.order(w, routeModel)
	first, second := home[0], home[1]
	if h := rendezvous("user-42", first.name); h < rendezvous("user-42", second.name) {
		t.Fatal("not the rendezvous order")
	}
	slow := func(d *deployment, ttft time.Duration) {
		for range 20 {
			d.pipeline.Route(routeModel).ObserveLatency(resilience.LatencySample{FirstContent: ttft, Stream: true})
		}
	}
	slow(first, 190*time.Millisecond) // 1.9 times the best: stays
	for range 100 {
		if got := e.order(w, routeModel)[0]; got != first {
			t.Fatalf("moved from %s to %s at 1.9×", first.name, got.name)
		}
	}
	slow(first, 300*time.Millisecond) // three times: moves to its second, every time
	for range 100 {
		if got := e.order(w, routeModel); got[0] != second || got[1] != first {
			t.Fatalf("at 3×: %s, %s", got[0].name, got[1].name)
		}
	}
	slow(first, 100*time.Millisecond)
	if got := e.order(w, routeModel)[0]; got != first {
		t.Fatalf("did not come home: %s", got.name)
	}
}

// The rendezvous weight is FNV-1a over the key, a zero byte and the name, as it always was: a
// key keeps its deployment across versions.
func TestRendezvous_IsFNV1aOfKeyAndName(t *testing.T) {
	for _, tc := range [][2]string{{"user-42", "p/d0"}, {"", "p/d1"}, {"conversation-7", ""}} {
		h := fnv.New64a()
		_, _ = h.Write([]byte(tc[0] + "\x00" + tc[1]))
		if got := rendezvous(tc[0], tc[1]); got != h.Sum64() {
			t.Errorf("rendezvous(%q, %q) = %x, want %x", tc[0], tc[1], got, h.Sum64())
		}
	}
}

// Routing by latency allocates nothing, sticky or not.
func TestStrategyLatency_AllocatesNothing(t *testing.T) {
	e := routedEntry(t, StrategyLatency, 3, nil, 300*time.Millisecond, 100*time.Millisecond)
	for _, w := range []*walk{{c: &Client{}, ask: ask{need: providers.CapStreaming}, op: operation{}}, {c: &Client{}, ask: ask{need: providers.CapChat}, op: operation{pl: plan{sticky: "user-42"}}}} {
		if n := testing.AllocsPerRun(1000, func() { _ = e.order(w, routeModel) }); n != 0 {
			t.Fatalf("%v allocations (sticky %q)", n, w.op.pl.sticky)
		}
	}
}

// BenchmarkRoute measures picking the order of a provider's three deployments, per strategy
// (the latency strategy also with a sticky key), with every route measured: "unpaced" knows
// no per-minute limit, "paced" reads one of requests and one of tokens per route (as a route
// that learnt them from the answers' headers does).
func BenchmarkRoute(b *testing.B) {
	type bench struct {
		name     string
		strategy Strategy
		sticky   string
	}
	cases := []bench{{"latency", StrategyLatency, ""}, {"latency-sticky", StrategyLatency, "user-42"}}
	for _, s := range Strategies {
		if s != StrategyLatency {
			cases = append(cases, bench{string(s), s, ""})
		}
	}
	for _, tc := range cases {
		for _, rpm := range []int{0, 1000} {
			name := tc.name + "/unpaced"
			if rpm > 0 {
				name = tc.name + "/paced"
			}
			b.Run(name, func(b *testing.B) {
				e := pacedEntry(b, tc.strategy, 3, rpm, nil, 300*time.Millisecond, 100*time.Millisecond, 120*time.Millisecond)
				w := &walk{c: &Client{}, ask: ask{need: providers.CapStreaming}, op: operation{pl: plan{sticky: tc.sticky}}}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					_ = e.order(w, routeModel)
				}
			})
		}
	}
}
