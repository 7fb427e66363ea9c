package client_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// BenchmarkStreamFailures measures, on the real clock and with the default policy, what the
// caller of a stream sees when the failures that hurt streaming users most strike the primary:
// the seconds until the complete answer, and the attempts the primary got. The table in
// docs/failures.md comes from one run: go test ./client -run '^$' -bench StreamFailures
// -benchtime 1x. The tests (failover_stream_test.go, routes_test.go) prove the same behaviour
// on a manual clock.
func BenchmarkStreamFailures(b *testing.B) {
	answer := words("s", 60)
	cut := mocks.Reply(words("p", 60))
	cut.Cut, cut.CutAfter, cut.CountContent = mocks.CutAbort, 40, true
	stall := mocks.Reply(words("p", 60))
	stall.StallAfter, stall.StallFor = 40, 30*time.Second
	// A stream that delivers a token every 15 ms and stalls for good after 40, under the idle
	// limit of the scorecard's baseline (30 s): the route's rhythm cuts it, not the idle limit.
	rhythm := mocks.Reply(words("p", 60)).WithChunkDelay(15 * time.Millisecond)
	rhythm.StallAfter = 40
	malformed := mocks.Reply(words("p", 60))
	malformed.MalformedAt = 10
	long := &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: strings.Repeat("word ", 400)}}}
	cases := []struct {
		name    string
		primary []mocks.Option
		rescue  string
		req     *providers.ChatRequest
		opts    []client.Option
		// continues: the fallback takes a prefill and would give the primary's answer, which
		// it continues (StreamRescue "continue", the default).
		continues bool
		idle      float64 // StreamIdleTimeoutSeconds, when not the default
	}{
		{name: "silent", primary: []mocks.Option{mocks.WithScript(mocks.Stall().Always())}},
		{name: "first-token-after-20s", primary: []mocks.Option{mocks.WithScript(mocks.SlowFirstToken(20 * time.Second).Always())}},
		{name: "cut-after-40-of-60", primary: []mocks.Option{mocks.WithScript(cut.Always())}, rescue: resilience.RescueRestart},
		{name: "stall-30s-after-content", primary: []mocks.Option{mocks.WithScript(stall.Always())}, rescue: resilience.RescueRestart},
		{name: "stall-at-15ms-per-token-idle-30s", primary: []mocks.Option{mocks.WithScript(rhythm.Always())},
			rescue: resilience.RescueRestart, idle: 30},
		{name: "malformed-10th-event", primary: []mocks.Option{mocks.WithScript(malformed.Always())}, rescue: resilience.RescueRestart},
		{name: "cut-after-40-of-60/continue", primary: []mocks.Option{mocks.WithScript(cut.Always())}, continues: true},
		{name: "stall-30s-after-content/continue", primary: []mocks.Option{mocks.WithScript(stall.Always())}, continues: true},
		{name: "malformed-10th-event/continue", primary: []mocks.Option{mocks.WithScript(malformed.Always())}, continues: true},
		{name: "no-done", primary: []mocks.Option{mocks.WithReply(answer), mocks.WithScript(mocks.OmitTerminal().Always())}},
		{name: "context-too-long", primary: []mocks.Option{mocks.WithContextWindows(map[string]int{"gpt-4o-mini": 100})},
			req: long, opts: []client.Option{client.WithContextWindow("secondary", 200_000, nil)}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				primary := mocks.NewServer(tc.primary...)
				secondary := mocks.NewServer(mocks.WithReply(answer), mocks.WithRejectPrefill())
				if tc.continues {
					secondary.Close()
					secondary = mocks.NewServer(mocks.WithReply(words("p", 60)))
				}
				o := resilience.DefaultOptions()
				if tc.idle > 0 {
					o.StreamIdleTimeoutSeconds = tc.idle
				}
				c, err := client.New(append([]client.Option{openAIProvider("primary", primary, o),
					anthropicProvider("secondary", secondary, o), client.WithFallback("primary", "secondary")}, tc.opts...)...)
				if err != nil {
					b.Fatal(err)
				}
				req := tc.req
				if req == nil {
					req = hello()
				}
				var opts []client.CallOption
				if tc.rescue != "" {
					opts = append(opts, client.WithRescue(tc.rescue))
				}
				start := time.Now()
				st, err := c.ChatStream(context.Background(), req, opts...)
				if err != nil {
					b.Fatal(err)
				}
				r := readAll(st)
				took := time.Since(start)
				_ = st.Close()
				if r.err != nil || !r.last.Done || tc.continues && (r.all != words("p", 60) || r.continues != 1) {
					b.Fatalf("%v (last %+v, text %q)", r.err, r.last, r.all)
				}
				b.ReportMetric(took.Seconds(), "s")
				b.ReportMetric(float64(primary.Journal().Len()), "primary-attempts")
				b.ReportMetric(float64(r.restarts), "restarts")
				b.ReportMetric(float64(r.continues), "continued")
				c.CloseIdleConnections()
				primary.Close()
				secondary.Close()
			}
		})
	}
}

// BenchmarkHedgeStragglers measures hedging against stragglers (issue 24's and issue 36's
// goals), on the real clock with time scaled down 50 times: two routes whose usual first token
// comes after a time drawn per request and, for a random 5 % of the requests of each (drawn
// from a seeded source, as real stragglers fall), after 200 ms (10 s scaled back), 20 times
// the median; 4 callers in a closed loop, 1,000 streamed calls, each read to its end. Without
// hedging, then with the default retry budget and a learnt delay (HedgeQuantile 0.95, at most
// 100 ms), each in 5 runs of its own seeds. It reports the worst run's time-to-first-token
// quantiles and p99/p95, the most hedges and extra output of the runs, and logs every run.
//
// The usual times come in two shapes. "skewed" is the goal's: log-normal around a median of
// 10 ms (mocks.LatencyProfile.Spread 0.25: p95 1.5 times the median, p99 1.8 times — a
// narrower tail than real providers show); there, with hedging, it fails unless every run
// meets the goal: p99 ≤ 2×p95, hedges ≤ 6 % of the calls, output streamed to tries that lost
// ≤ 1 % of the answers'. "uniform" draws them from 9–11 ms, a spread no provider has, where
// p99/p95 cannot stay below 2 run after run whatever the delay (docs/capacity.md): it logs
// and reports, and fails only past 2.5 or past 7 % hedges.
// go test ./client -run '^$' -bench HedgeStragglers -benchtime 1x -v
func BenchmarkHedgeStragglers(b *testing.B) {
	const calls, callers, answerWords, runs = 1000, 4, 20, 5
	for _, usual := range []struct {
		name          string
		profile       mocks.LatencyProfile
		ratio, hedges float64 // the bounds every run must meet
	}{
		{"skewed", mocks.LatencyProfile{FirstToken: 10 * time.Millisecond, Spread: 0.25}, 2, 6},
		{"uniform", mocks.LatencyProfile{FirstToken: 9 * time.Millisecond, Jitter: 2 * time.Millisecond}, 2.5, 7},
	} {
		for _, hedge := range []bool{false, true} {
			name := usual.name + "/off"
			if hedge {
				name = usual.name + "/learnt-p95"
			}
			b.Run(name, func(b *testing.B) {
				for range b.N {
					var worst hedgeRun
					for run := range runs {
						r := hedgeStragglers(b, usual.profile, hedge, uint64(2*run), calls, callers, answerWords)
						b.Logf("run %d: p50 %v p95 %v p99 %v p99/p95 %.2f hedges %.1f%% (won %d, cancelled unsent %d) extra requests %.1f%% extra output %.2f%%; route a: %.1f%% stragglers, delay at its ceiling %.1f%%, mean delay %v; calls a hedge won: median %v",
							run, r.p50, r.p95, r.p99, r.ratio(), r.hedgePct, r.won, r.unsent, r.extraReqPct, r.extraOutPct, r.stragglerPct, r.ceilingPct,
							r.meanDelay.Round(10*time.Microsecond), r.wonP50.Round(10*time.Microsecond))
						if hedge && (r.ratio() > usual.ratio || r.hedgePct > usual.hedges || r.extraOutPct > 1) {
							b.Errorf("run %d misses the goal (p99 ≤ %.1f×p95, hedges ≤ %.0f %%, extra output ≤ 1 %%)", run, usual.ratio, usual.hedges)
						}
						if r.ratio() > worst.ratio() {
							worst.p50, worst.p95, worst.p99 = r.p50, r.p95, r.p99
						}
						worst.hedgePct, worst.extraReqPct = max(worst.hedgePct, r.hedgePct), max(worst.extraReqPct, r.extraReqPct)
						worst.extraOutPct = max(worst.extraOutPct, r.extraOutPct)
					}
					b.ReportMetric(float64(worst.p50.Microseconds())/1000, "p50-ms")
					b.ReportMetric(float64(worst.p95.Microseconds())/1000, "p95-ms")
					b.ReportMetric(float64(worst.p99.Microseconds())/1000, "p99-ms")
					b.ReportMetric(worst.ratio(), "p99/p95")
					b.ReportMetric(worst.hedgePct, "hedges-%")
					b.ReportMetric(worst.extraReqPct, "extra-requests-%")
					b.ReportMetric(worst.extraOutPct, "extra-output-%")
				}
			})
		}
	}
}

// hedgeRun is what one run of BenchmarkHedgeStragglers measured.
type hedgeRun struct {
	p50, p95, p99                      time.Duration
	hedgePct, extraReqPct, extraOutPct float64
	won, unsent                        int64
	// stragglerPct is the share of route a's requests that straggled; ceilingPct the share of
	// the samples of its learnt delay that found it at its ceiling.
	stragglerPct, ceilingPct float64
	// meanDelay is the mean of those samples; wonP50 the median time to first token of the
	// calls a hedge won, about the delay plus a hedge's own time to first token: the p99.
	meanDelay, wonP50 time.Duration
}

func (r hedgeRun) ratio() float64 {
	if r.p95 == 0 {
		return 0
	}
	return float64(r.p99) / float64(r.p95)
}

// hedgeStragglers is one run of BenchmarkHedgeStragglers, the usual times of its servers those
// of profile, stragglers added, drawn from seed and seed+1.
func hedgeStragglers(b *testing.B, profile mocks.LatencyProfile, hedge bool, seed uint64, calls, callers, answerWords int) hedgeRun {
	profile.StragglerRate, profile.Straggler, profile.HeadersFirst, profile.Seed = 0.05, 200*time.Millisecond, true, seed
	a := mocks.NewServer(mocks.WithReply(words("a", answerWords)), mocks.WithLatency(profile))
	profile.Seed++
	bs := mocks.NewServer(mocks.WithReply(words("b", answerWords)), mocks.WithLatency(profile))
	defer a.Close()
	defer bs.Close()
	o := resilience.DefaultOptions()
	if hedge {
		o.HedgeAfterSeconds, o.HedgeQuantile, o.HedgeMinDelaySeconds = 0.1, 0.95, 0.002
	}
	c, err := client.New(openAIProvider("a", a, o), openAIProvider("b", bs, resilience.DefaultOptions()),
		client.WithFallback("a", "b"))
	if err != nil {
		b.Fatal(err)
	}
	defer c.CloseIdleConnections()
	// A sampler reads the learnt delay of route a every 2 ms while the calls run.
	var atCeiling, samples int
	var delays time.Duration
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		h, route := c.Pipeline("a").Policy().Hedge(), c.Pipeline("a").Route("gpt-4o-mini")
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			if hedge {
				if _, ok := route.HedgeQuantile(h.Quantile); ok {
					samples++
					d := h.Delay(route)
					delays += d
					if d == h.After {
						atCeiling++
					}
				}
			}
		}
	}()
	ttft, wonAt := make([]time.Duration, calls), make([]bool, calls)
	var next, hedges, won, unsent atomic.Int64
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(calls) {
					return
				}
				start := time.Now()
				st, err := c.ChatStream(context.Background(), hello())
				if err != nil {
					b.Error(err)
					return
				}
				ttft[i] = time.Since(start)
				r := readAll(st)
				_ = st.Close()
				if r.err != nil || !r.last.Done {
					b.Errorf("%v", r.err)
					return
				}
				acct := st.Accounting()
				hedges.Add(int64(acct.Hedges))
				unsent.Add(int64(acct.HedgesUnsent))
				if acct.HedgeWon {
					won.Add(1)
					wonAt[i] = true
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-sampled
	var wonT []time.Duration
	for i, w := range wonAt {
		if w {
			wonT = append(wonT, ttft[i])
		}
	}
	slices.Sort(wonT)
	slices.Sort(ttft)
	q := func(p float64) time.Duration { return ttft[int(p*float64(calls))-1] }
	sent := a.Journal().Len() + bs.Journal().Len()
	content := a.Journal().Stats().ContentEvents + bs.Journal().Stats().ContentEvents
	r := hedgeRun{p50: q(0.5), p95: q(0.95), p99: q(0.99), hedgePct: 100 * float64(hedges.Load()) / float64(calls),
		extraReqPct: 100 * float64(sent-calls) / float64(calls),
		extraOutPct: 100 * float64(content-int64(calls*answerWords)) / float64(calls*answerWords),
		won:         won.Load(), unsent: unsent.Load(),
		stragglerPct: 100 * float64(a.Journal().Stats().Stragglers) / float64(max(a.Journal().Len(), 1)),
		ceilingPct:   100 * float64(atCeiling) / float64(max(samples, 1)),
		meanDelay:    delays / time.Duration(max(samples, 1))}
	if len(wonT) > 0 {
		r.wonP50 = wonT[len(wonT)/2]
	}
	return r
}
