package client_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

// The goal of the adaptive limit against a provider that answers 429, not 529, above its
// concurrency (an OpenAI-compatible server or gateway): the fake serves 10 calls at once in 50
// ms each (200 a second) and answers a bare 429 to the next (mocks.ConcurrencyLimit with
// OpenAIStatus 429: no retry hint, rate-limit headers with room); calls arrive at twice that,
// 400 a second, one in five interactive (one in fifty in the sparse runs) and the rest batch,
// through the pipeline of docs/capacity.md's example (adaptive limit from 10 within 1..100,
// 100 queue places, the batch reserve and minimum share at 10 %). After a phase the fake's limit halves to 5 for a second
// phase. The retry delays are the defaults (1 s, doubling, up to 30 s) or short ones (50 ms).
//
// The pipeline learns no budget from the fake's rate-limit headers (PaceFromHeaders off): they
// are the same fixed numbers on every answer, 10 000 requests a minute, below the fake's
// capacity, and would measure the pacer instead.

// overload429Phase is the length of each phase of BenchmarkAdaptive429 (8 s): a longer run is
// -overload429.phase 60s.
var overload429Phase = flag.Duration("overload429.phase", 8*time.Second, "length of each phase of BenchmarkAdaptive429")

// overload429Slow stretches BenchmarkAdaptive429's time (the service time, the arrivals, the
// short delays): 2 is a 100 ms answer at 200 calls a second, so the client's own work between
// two calls — a millisecond or a few on a busy machine — weighs half as much against it.
var overload429Slow = flag.Int("overload429.slow", 1, "time stretch of BenchmarkAdaptive429")

// overload429Phase holds what one phase of the load got.
type phase429 struct {
	limits      map[int]int // samples of the adaptive limit every 10 ms: limit → count
	failures    map[string]int
	capacity    float64 // calls a second the fake can serve
	served      int     // calls served (completed within the phase)
	interactive classResult
	batch       classResult
	wall        time.Duration
}

// goodput is the share of the fake's capacity the served calls used.
func (p *phase429) goodput() float64 {
	return float64(p.served) / p.wall.Seconds() / p.capacity
}

type result429 struct {
	phases                   [2]phase429
	sent, refused429         int64 // requests the fake received, and refused for its limit
	pauses, limitChanges     int64 // cooldowns started, and moves of the limit
	retriesThrough, gaveUpBH int64 // retries through the limit, and retries the bulkhead turned away
}

func (r *result429) String() string {
	s := ""
	for i, p := range r.phases {
		s += fmt.Sprintf("phase %d (fake limit %.0f/s): goodput %.1f %% (%d served in %s)\n  interactive: %v\n  batch: %v\n  limit samples %v, failures %v\n",
			i+1, p.capacity, 100*p.goodput(), p.served, p.wall.Round(time.Millisecond), &p.interactive, &p.batch, p.limits, p.failures)
	}
	return s + fmt.Sprintf("the fake answered %d requests, refused %d for its limit; %d pauses, %d limit changes, %d retries through the limit, %d turned away",
		r.sent, r.refused429, r.pauses, r.limitChanges, r.retriesThrough, r.gaveUpBH)
}

// run429 runs the load for two phases of d each, with time stretched slow times (the fake's
// service time, the arrivals, the short delays) as runPriorityLoadScaled does, and the retry
// delays at their defaults or short.
func run429(tb testing.TB, d time.Duration, slow int, defaultDelays bool) *result429 {
	return runOverStatus(tb, http.StatusTooManyRequests, d, slow, defaultDelays, 10, 5)
}

// runOverStatus is run429 against a fake that answers status (429, 529 or 503) above its
// limit — 529 is the control, the overload signal the adaptive limit always knew — with
// PriorityReservePercent reserve (the example's 10), and one call in every interactive (the
// example's 5).
func runOverStatus(tb testing.TB, status int, d time.Duration, slow int, defaultDelays bool, reserve float64, every int) *result429 {
	service := time.Duration(slow) * 50 * time.Millisecond
	s := mocks.NewServer(mocks.WithConcurrencyLimit(mocks.ConcurrencyLimit{Max: 10, OpenAIStatus: status}),
		mocks.WithScript(mocks.OK().WithDelay(service).Always()), mocks.WithReply("ok"))
	defer s.Close()
	o := resilience.DefaultOptions() // docs/capacity.md's example: these values, and the adaptive limit
	o.AdaptiveConcurrency = true
	o.PaceFromHeaders = false
	o.PriorityReservePercent = reserve
	if !defaultDelays {
		o.RetryBaseDelaySeconds = 0.05 * float64(slow)
	}
	var r result429
	observer := func(e resilience.Event) {
		waitObserver(e)
		switch {
		case e.Type == resilience.EventCooldownStarted:
			atomic.AddInt64(&r.pauses, 1)
		case e.Type == resilience.EventConcurrencyLimitChanged:
			atomic.AddInt64(&r.limitChanges, 1)
		case e.Type == resilience.EventRetryScheduled && e.Status == http.StatusTooManyRequests && strings.Contains(e.Reason, "too many at once"):
			atomic.AddInt64(&r.retriesThrough, 1)
		case e.Type == resilience.EventGaveUp && e.GaveUp == resilience.GaveUpBulkhead:
			atomic.AddInt64(&r.gaveUpBH, 1)
		}
	}
	c, err := client.New(client.WithProvider("openai", o, func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{BaseURL: s.OpenAIBaseURL(), APIKey: "sk-test", HTTPClient: hc, Model: "gpt-4o-mini"})
	}), client.WithObserver(observer), client.WithBaseTransport(loadTransport(tb)))
	if err != nil {
		tb.Fatal(err)
	}
	defer c.CloseIdleConnections()

	var mu sync.Mutex
	var wg sync.WaitGroup
	rate := 400 / float64(slow)
	gap := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	ends := [2]time.Time{start.Add(d), start.Add(2 * d)}
	limits := [2]int{10, 5}
	for p := range r.phases {
		r.phases[p].capacity = float64(limits[p]) / service.Seconds()
		r.phases[p].wall = d
		r.phases[p].limits, r.phases[p].failures = map[int]int{}, map[string]int{}
	}
	phaseOf := func(t time.Time) int {
		switch {
		case t.Before(ends[0]):
			return 0
		case t.Before(ends[1]):
			return 1
		}
		return -1
	}
	halved := false
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			time.Sleep(10 * time.Millisecond)
			p := phaseOf(time.Now())
			if p < 0 {
				return
			}
			l := c.Deployments("openai")[0].Concurrency.Limit
			mu.Lock()
			r.phases[p].limits[l]++
			mu.Unlock()
		}
	}()
	for i := 0; ; i++ {
		at := start.Add(time.Duration(i) * gap)
		if !at.Before(ends[1]) {
			break
		}
		if !halved && !at.Before(ends[0]) {
			s.SetConcurrencyLimit(limits[1])
			halved = true
		}
		if wait := time.Until(at); wait > 0 {
			time.Sleep(wait)
		}
		interactive := i%every == 0
		arrival := phaseOf(time.Now())
		if arrival < 0 {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &callWait{}
			ctx := context.WithValue(context.Background(), waitKey{}, w)
			class := resilience.PriorityBatch
			if interactive {
				class = resilience.PriorityInteractive
			}
			_, err := c.Chat(ctx, &providers.ChatRequest{MaxTokens: 16,
				Messages: []providers.Message{{Role: providers.RoleUser, Content: "hi"}}}, client.WithPriority(class))
			done := phaseOf(time.Now())
			mu.Lock()
			defer mu.Unlock()
			if err == nil && done >= 0 {
				r.phases[done].served++
			}
			cr := &r.phases[arrival].batch
			if interactive {
				cr = &r.phases[arrival].interactive
			}
			cr.sent++
			if err != nil {
				var pe *providers.Error
				if errors.As(err, &pe) {
					r.phases[arrival].failures[fmt.Sprintf("%v %s/%s", interactive, pe.Kind, pe.GaveUp)]++
				}
			}
			cr.add(err, w.d)
		}()
	}
	wg.Wait()
	<-sampled
	st := s.Concurrency()
	r.sent, r.refused429 = st.Served+st.Refused, st.Refused
	return &r
}

// Against a provider that answers 429 above its concurrency, the adaptive limit absorbs the
// 429s: the route never pauses, no interactive call fails, and the batch calls are served.
// The test asserts counts only, on a load stretched four times (the race detector, a busy
// machine); BenchmarkAdaptive429 measures the waits and the goodput.
func TestAdaptive_A429AboveTheConcurrencyNeverPausesTheRoute(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for eight seconds")
	}
	for _, defaults := range []bool{false, true} {
		r := run429(t, 4*time.Second, 4, defaults)
		t.Logf("default delays %v:\n%v", defaults, r)
		if r.pauses != 0 {
			t.Errorf("default delays %v: %d route-wide pauses, want none", defaults, r.pauses)
		}
		if r.refused429 == 0 || r.retriesThrough == 0 {
			t.Errorf("default delays %v: the fake refused %d, %d retries through the limit: the load never met the limit",
				defaults, r.refused429, r.retriesThrough)
		}
		for p, ph := range r.phases {
			if i := ph.interactive; i.sent == 0 || i.served != i.sent {
				t.Errorf("default delays %v, phase %d: interactive %v, want every call served", defaults, p+1, &i)
			}
			if ph.batch.served == 0 {
				t.Errorf("default delays %v, phase %d: batch %v, want some served", defaults, p+1, &ph.batch)
			}
		}
	}
}

// BenchmarkAdaptive429 states, for docs/capacity.md, the interactive calls' waits and the
// goodput against a provider that answers 429 above its concurrency, in each phase (before and
// after the fake's limit halves), with the retry delays short and at their defaults.
//
// Each case's variants are named with a "+" (429/default-delays+no-reserve), so that
// -bench 'Adaptive429/^429$/^default-delays$' runs the one case alone.
func BenchmarkAdaptive429(b *testing.B) {
	// The batch reserve (PriorityReservePercent, 10 % in the example) keeps one slot of ten
	// from batch calls while the interactive calls hold none: the runs without it show what
	// that slot costs in goodput and saves in interactive waits, with one call in five
	// interactive (they hold about four slots, more than the reserve) and one in fifty (they
	// hold none most of the time).
	for _, tc := range []struct {
		name    string
		status  int
		reserve float64
		every   int
	}{{"429/short-delays", 429, 10, 5}, {"429/default-delays", 429, 10, 5}, {"429/default-delays+no-reserve", 429, 0, 5},
		{"529/default-delays", 529, 10, 5},
		{"429/default-delays+sparse-interactive", 429, 10, 50}, {"429/default-delays+sparse-interactive+no-reserve", 429, 0, 50}} {
		b.Run(tc.name, func(b *testing.B) {
			var r *result429
			for range b.N {
				r = runOverStatus(b, tc.status, *overload429Phase, max(*overload429Slow, 1), strings.Contains(tc.name, "default-delays"),
					tc.reserve, tc.every)
			}
			for p, ph := range r.phases {
				b.ReportMetric(float64(ph.interactive.p(0.99))/1e6, fmt.Sprintf("p%d-interactive-p99-wait-ms", p+1))
				b.ReportMetric(100*ph.goodput(), fmt.Sprintf("p%d-%%goodput", p+1))
				b.ReportMetric(float64(ph.interactive.sent-ph.interactive.served), fmt.Sprintf("p%d-interactive-failed", p+1))
			}
			b.ReportMetric(float64(r.pauses), "pauses")
			b.Logf("%s:\n%v", tc.name, r)
		})
	}
}
