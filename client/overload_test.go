package client_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/internal/testkit/backend"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

// The loads below measure the goals of priority classes against the fake server: an offered
// load twice what the fake allows, one call in five interactive, the rest batch. Two limits:
//
//   - "concurrency": the fake serves 10 calls at once, each in 50 ms (200 calls a second), and
//     answers 503 above that; the client's bulkhead is 10 wide with 20 queue places. Calls
//     arrive at 400 a second for the run.
//   - "flood": the same, but three calls in five are interactive: they alone are more than
//     the fake can serve, and the batch calls live on their minimum share.
//   - "rate": the fake allows 120 requests a minute and answers 429 above; the client paces
//     at that budget. A minute is scaled down to a second of wall time (one clock for the fake
//     and the pipelines); calls arrive at 240 a (fake) minute. Batch calls run in deferred
//     mode, as a job queue's: they never wait, and a refusal says when to come back. Waits
//     are stated on the pipelines' clock: what a caller would wait against a real minute.
//
// Each runs with the classes and without (every call in the default class), for comparison.

// classResult is what the calls of one class got.
type classResult struct {
	sent, served, shed, limited, overloaded, other int
	waits                                          []time.Duration // each served call's wait for a slot or a budget
}

// add counts a call of the class that ended with err, having waited wait for a slot or a
// budget.
func (r *classResult) add(err error, wait time.Duration) {
	var pe *providers.Error
	switch {
	case err == nil:
		r.served++
		r.waits = append(r.waits, wait) // on the pipeline's clock: as long as against a real minute
	case !errors.As(err, &pe):
		r.other++
	case pe.Kind == providers.KindBulkheadFull:
		r.shed++
	case pe.Kind == providers.KindRateLimited:
		r.limited++
	case pe.Kind == providers.KindOverloaded, pe.Kind == providers.KindUnavailable:
		r.overloaded++
	default:
		r.other++
	}
}

func (r *classResult) p(q float64) time.Duration {
	if len(r.waits) == 0 {
		return 0
	}
	w := slices.Clone(r.waits)
	slices.Sort(w)
	return w[min(int(q*float64(len(w))), len(w)-1)]
}

func (r *classResult) String() string {
	return fmt.Sprintf("%d sent, %d served, %d shed (bulkhead_full), %d rate_limited, %d overloaded, %d other; wait p50 %s p99 %s",
		r.sent, r.served, r.shed, r.limited, r.overloaded, r.other, r.p(0.5).Round(100*time.Microsecond),
		r.p(0.99).Round(100*time.Microsecond))
}

type priorityResult struct {
	interactive, batch classResult
	serverSent         int // requests the fake received
	server429, over    int // of them answered 429, and 503/529 for its concurrency limit
}

func (r priorityResult) String() string {
	served := r.interactive.served + r.batch.served
	return fmt.Sprintf("interactive: %v\nbatch: %v\nbatch share of the served calls %.1f %%; the server answered %d requests, 429 to %d, overloaded to %d",
		&r.interactive, &r.batch, 100*float64(r.batch.served)/float64(max(served, 1)), r.serverSent, r.server429, r.over)
}

type waitKey struct{}

// callWait is where a call's waits (for a slot, for a budget) add up, found in its context by
// the observer.
type callWait struct {
	mu sync.Mutex
	d  time.Duration
}

func (w *callWait) add(d time.Duration) {
	w.mu.Lock()
	w.d += d
	w.mu.Unlock()
}

// waitObserver adds each call's waits to its callWait: the bulkhead's queueing, and the waits
// for a budget's room.
func waitObserver(e resilience.Event) {
	if e.Context == nil {
		return
	}
	w, _ := e.Context.Value(waitKey{}).(*callWait)
	if w == nil {
		return
	}
	switch e.Type {
	case resilience.EventBulkheadAdmitted:
		w.add(e.Duration)
	case resilience.EventCooldownWaited:
		w.add(e.Delay)
	}
}

// loadTransport keeps a connection per call in flight: http.DefaultTransport keeps two idle
// per host, and a load of hundreds of calls a second would dial a new one for nearly every
// call, until the machine runs out of ephemeral ports.
func loadTransport(tb testing.TB) *http.Transport {
	tr := &http.Transport{MaxIdleConns: 500, MaxIdleConnsPerHost: 500}
	tb.Cleanup(tr.CloseIdleConnections)
	return tr
}

// runPriorityLoad runs the scenario ("concurrency" or "rate") for d of wall time, with the
// classes or without; in the scenario "flood", the concurrency scenario where three calls in
// five are interactive, so the interactive calls alone are more than the fake can serve.
func runPriorityLoad(tb testing.TB, scenario string, classes bool, d time.Duration) priorityResult {
	return runPriorityLoadScaled(tb, scenario, classes, d, 1)
}

// runPriorityLoadScaled is runPriorityLoad with the concurrency scenario's time stretched slow
// times — the fake's service time, the backoff and the arrivals — so that the same overload
// (twice what the fake can take) costs the machine slow times less work a second. A test runs
// at 4: at 1 — 400 calls a second through the race detector — a machine whose cores another
// test run keeps busy served fewer calls than the interactive ones alone, and shed some of
// them rightly.
func runPriorityLoadScaled(tb testing.TB, scenario string, classes bool, d time.Duration, slow int) priorityResult {
	interactiveEvery := func(i int) bool { return i%5 == 0 }
	if scenario == "flood" {
		scenario = "concurrency"
		interactiveEvery = func(i int) bool { return i%5 < 3 }
	}
	o := resilience.DefaultOptions()
	o.RetryBudgetPercent = 0
	// The fake counts a call out when its handler returns, a moment after the client has read
	// the answer and freed the slot: a call sent at once may meet the fake still full. One
	// quick retry covers that race (the fake's refusals are counted all the same).
	o.RetryCount, o.RetryBaseDelaySeconds = 1, 0.05*float64(slow)
	var (
		s        *mocks.Server
		rate     float64 // arrivals per second of wall time
		clockOpt client.Option
	)
	switch scenario {
	case "concurrency":
		s = mocks.NewServer(mocks.WithConcurrencyLimit(mocks.ConcurrencyLimit{Max: 10}),
			mocks.WithScript(mocks.OK().WithDelay(time.Duration(slow)*50*time.Millisecond).Always()), mocks.WithReply("ok"))
		o.BulkheadMaxConcurrency, o.BulkheadMaxQueue = 10, 20
		o.PaceFromHeaders = false
		rate = 400 / float64(slow)
	case "rate":
		clock := backend.NewScaledClock(60)
		clockOpt = client.WithClock(clock)
		s = mocks.NewServer(mocks.WithRateLimits(mocks.RateLimits{RequestsPerMinute: 120}), mocks.WithClock(clock.Now),
			mocks.WithReply("ok"))
		o.BulkheadMaxConcurrency, o.BulkheadMaxQueue = 200, 1000
		o.PaceRequestsPerMinute = 120
		o.TimeoutSeconds, o.StreamIdleTimeoutSeconds, o.RetryMaxDelaySeconds = 600, 600, 60
		rate = 240 // pacing, not the fake's time, limits it: not stretched
	}
	defer s.Close()
	opts := []client.Option{client.WithProvider("openai", o, func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{BaseURL: s.OpenAIBaseURL(), APIKey: "sk-test", HTTPClient: hc, Model: "gpt-4o-mini"})
	}), client.WithObserver(waitObserver), client.WithBaseTransport(loadTransport(tb))}
	if clockOpt != nil {
		opts = append(opts, clockOpt)
	}
	c, err := client.New(opts...)
	if err != nil {
		tb.Fatal(err)
	}
	defer c.CloseIdleConnections()

	var mu sync.Mutex
	var res priorityResult
	var wg sync.WaitGroup
	every := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	for i := 0; time.Since(start) < d; i++ {
		if wait := time.Until(start.Add(time.Duration(i) * every)); wait > 0 {
			time.Sleep(wait)
		}
		interactive := interactiveEvery(i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &callWait{}
			ctx := context.WithValue(context.Background(), waitKey{}, w)
			var callOpts []client.CallOption
			switch {
			case classes && interactive:
				callOpts = append(callOpts, client.WithPriority(resilience.PriorityInteractive))
			case classes:
				callOpts = append(callOpts, client.WithPriority(resilience.PriorityBatch))
			}
			if !interactive && scenario == "rate" {
				callOpts = append(callOpts, client.Deferred(1))
			}
			_, err := c.Chat(ctx, &providers.ChatRequest{MaxTokens: 16,
				Messages: []providers.Message{{Role: providers.RoleUser, Content: "hi"}}}, callOpts...)
			mu.Lock()
			defer mu.Unlock()
			r := &res.batch
			if interactive {
				r = &res.interactive
			}
			r.sent++
			r.add(err, w.d)
		}()
	}
	wg.Wait()
	for _, q := range s.Journal().Requests() {
		res.serverSent++
		switch {
		case strings.HasPrefix(q.Step, "429"):
			res.server429++
		case strings.Contains(q.Step, "concurrency limit"):
			res.over++
		}
	}
	return res
}

// With the classes, interactive calls are never shed, wait little, and the batch calls absorb
// what the fake cannot take while still being served. The run is short and the machine may be
// busy: the test checks what cannot depend on timing; BenchmarkPriority measures the rest.
func TestPriority_InteractiveCallsAreServedWhileBatchAbsorbsTheOverload(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for six seconds")
	}
	for _, scenario := range []string{"concurrency", "rate"} {
		r := runPriorityLoadScaled(t, scenario, true, 3*time.Second, 4)
		t.Logf("%s:\n%v", scenario, r)
		if i := r.interactive; i.served != i.sent || i.sent == 0 {
			t.Errorf("%s: interactive %v, want every call served", scenario, &i)
		}
		if refused := r.server429 + r.over; refused*100 > r.serverSent {
			t.Errorf("%s: the server refused %d of %d requests (429: %d)", scenario, refused, r.serverSent, r.server429)
		}
		if b := r.batch; b.served == 0 || b.shed+b.limited == 0 {
			t.Errorf("%s: batch %v, want some served and some shed", scenario, &b)
		}
	}
}

// BenchmarkPriority states, for docs/capacity.md, what the classes achieve under both loads, with
// and without them (one five-second run each).
func BenchmarkPriority(b *testing.B) {
	for _, scenario := range []string{"concurrency", "flood", "rate"} {
		for _, classes := range []bool{true, false} {
			name := scenario + "/classes"
			if !classes {
				name = scenario + "/fifo"
			}
			b.Run(name, func(b *testing.B) {
				var r priorityResult
				for range b.N {
					r = runPriorityLoad(b, scenario, classes, 5*time.Second)
				}
				b.ReportMetric(float64(r.interactive.sent-r.interactive.served), "interactive-failed")
				b.ReportMetric(float64(r.interactive.p(0.99))/1e6, "interactive-p99-wait-ms")
				b.ReportMetric(100*float64(r.batch.served)/float64(max(r.batch.served+r.interactive.served, 1)), "%batch-of-served")
				b.Logf("%s:\n%v", name, r)
			})
		}
	}
}

// adaptiveResult is what the adaptive limit did against a fake whose concurrency limit
// changed during the run.
type adaptiveResult struct {
	settled, followed time.Duration // time to enter, and stay within, 10 % of the fake's limit
	inBand            [2]float64    // share of the samples within 10 % of the limit, after settling, in each phase
	goodput           [2]float64    // answers a second in each phase
	capacity          [2]float64    // what the fake could serve a second in each phase
	sent, refused     int           // requests the fake received, and answered 529 for its limit
	served, failed    int           // calls served, and calls that failed
	limits            [2][]int      // samples of the limit, each phase
}

func (r adaptiveResult) String() string {
	return fmt.Sprintf("settled within 10 %% in %s (%.0f %% of samples in the band after), followed the halving in %s (%.0f %%); "+
		"goodput %.0f/s of %.0f, then %.0f/s of %.0f; the fake answered 529 to %d of %d requests (%.2f %%); %d calls failed",
		r.settled.Round(time.Millisecond), 100*r.inBand[0], r.followed.Round(time.Millisecond), 100*r.inBand[1],
		r.goodput[0], r.capacity[0], r.goodput[1], r.capacity[1], r.refused, r.sent, 100*float64(r.refused)/float64(max(r.sent, 1)), r.failed)
}

// runAdaptive runs 2×limit callers in a closed loop against a fake (Anthropic) that serves
// limit calls at once in 50 ms each, through a client whose adaptive limit starts at 5; after
// phase, the fake's limit halves, for another phase.
func runAdaptive(tb testing.TB, limit int, phase time.Duration) adaptiveResult {
	const service = 50 * time.Millisecond
	s := mocks.NewServer(mocks.WithConcurrencyLimit(mocks.ConcurrencyLimit{Max: limit}),
		mocks.WithScript(mocks.OK().WithDelay(service).Always()), mocks.WithReply("ok"))
	defer s.Close()
	o := resilience.DefaultOptions()
	o.AdaptiveConcurrency = true
	o.BulkheadMaxConcurrency, o.AdaptiveMinConcurrency, o.AdaptiveMaxConcurrency = 5, 1, 200
	o.BulkheadMaxQueue = 1000
	o.RetryBaseDelaySeconds = 0.05 // time scaled as the service time is: 50 ms, not 1 s
	o.PaceFromHeaders = false      // the fake's fixed rate-limit headers say 4 000 a minute: not the point here
	c, err := client.New(client.WithProvider("claude", o, func(hc *http.Client) (providers.Provider, error) {
		return anthropic.New(anthropic.Config{BaseURL: s.AnthropicBaseURL(), APIKey: "sk-ant-test", HTTPClient: hc,
			Model: "claude-haiku-4-5"})
	}), client.WithBaseTransport(loadTransport(tb)))
	if err != nil {
		tb.Fatal(err)
	}
	defer c.CloseIdleConnections()

	var stop atomic.Bool
	var served [2]atomic.Int64
	var failed atomic.Int64
	var phaseNo atomic.Int32
	var wg sync.WaitGroup
	for range 2 * limit {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				p := phaseNo.Load()
				if _, err := c.Chat(context.Background(), &providers.ChatRequest{MaxTokens: 16,
					Messages: []providers.Message{{Role: providers.RoleUser, Content: "hi"}}}); err == nil {
					served[p].Add(1)
				} else {
					failed.Add(1)
				}
			}
		}()
	}
	var r adaptiveResult
	targets := [2]int{limit, limit / 2}
	for p := range 2 {
		if p == 1 {
			s.SetConcurrencyLimit(targets[1])
			phaseNo.Store(1)
		}
		start := time.Now()
		var times []time.Duration
		for time.Since(start) < phase {
			time.Sleep(10 * time.Millisecond)
			r.limits[p] = append(r.limits[p], c.Deployments("claude")[0].Concurrency.Limit)
			if len(r.limits[p])%100 == 0 && debugAdaptive {
				tb.Logf("phase %d: client %+v server %+v", p, c.Deployments("claude")[0].Concurrency, s.Concurrency())
			}
			times = append(times, time.Since(start))
		}
		r.goodput[p] = float64(served[p].Load()) / time.Since(start).Seconds()
		r.capacity[p] = float64(targets[p]) / service.Seconds()
		// Settled: the first sample from which the limit stays within 10 % for the rest of
		// the phase but for brief probes (95 % of the samples).
		within := func(l int) bool {
			return float64(l) >= 0.9*float64(targets[p]) && float64(l) <= 1.1*float64(targets[p])+0.5
		}
		at := phase
		for i := range r.limits[p] {
			in := 0
			for _, l := range r.limits[p][i:] {
				if within(l) {
					in++
				}
			}
			if within(r.limits[p][i]) && float64(in) >= 0.95*float64(len(r.limits[p])-i) {
				at = times[i]
				r.inBand[p] = float64(in) / float64(len(r.limits[p])-i)
				break
			}
		}
		if p == 0 {
			r.settled = at
		} else {
			r.followed = at
		}
	}
	stop.Store(true)
	wg.Wait()
	r.failed = int(failed.Load())
	r.served = int(served[0].Load() + served[1].Load())
	for _, q := range s.Journal().Requests() {
		r.sent++
		if strings.Contains(q.Step, "concurrency limit") {
			r.refused++
		}
	}
	return r
}

// The adaptive limit finds the fake's capacity from a guess far below it, and follows it
// down when it halves, without failing calls. Loose bounds: the machine may be busy; the
// benchmark measures how close and how fast.
func TestAdaptive_FindsTheFakesCapacityAndFollowsItDown(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for six seconds")
	}
	r := runAdaptive(t, 16, 3*time.Second)
	t.Logf("%v", r)
	last := func(p int) int { return r.limits[p][len(r.limits[p])-1] }
	if l := last(0); l < 8 || l > 32 {
		t.Errorf("limit %d after the first phase, want near 16", l)
	}
	if l := last(1); l < 4 || l > 16 {
		t.Errorf("limit %d after the halving, want near 8", l)
	}
	if r.failed*100 > r.served { // a call fails when its four attempts all meet a 529
		t.Errorf("%d calls failed, %d served", r.failed, r.served)
	}
	if float64(r.refused) > 0.1*float64(r.sent) {
		t.Errorf("%d of %d requests refused", r.refused, r.sent)
	}
}

var debugAdaptive = false

// BenchmarkAdaptiveConcurrency states, for docs/capacity.md, how fast and how close the adaptive
// limit finds a fake's concurrency limit of 20 (from a guess of 5) and follows it when it
// halves after 15 s, with a service time of 50 ms: time runs 20 to 40 times faster than
// against a real model, whose answers take one or two seconds.
func BenchmarkAdaptiveConcurrency(b *testing.B) {
	var r adaptiveResult
	for range b.N {
		r = runAdaptive(b, 20, 15*time.Second)
	}
	b.ReportMetric(r.settled.Seconds(), "s-to-settle")
	b.ReportMetric(r.followed.Seconds(), "s-to-follow")
	b.ReportMetric(100*float64(r.refused)/float64(max(r.sent, 1)), "%529")
	b.Logf("%v", r)
	for p, ls := range r.limits {
		counts := map[int]int{}
		for _, l := range ls {
			counts[l]++
		}
		keys := slices.Sorted(maps.Keys(counts))
		var sb strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&sb, " %d:%d", k, counts[k])
		}
		b.Logf("phase %d, samples of the limit every 10 ms (limit:count):%s", p+1, sb.String())
	}
}
