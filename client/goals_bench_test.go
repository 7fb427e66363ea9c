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
		idle    float64 // StreamIdleTimeoutSeconds, when not the default
	}{
		{name: "silent", primary: []mocks.Option{mocks.WithScript(mocks.Stall().Always())}},
		{name: "first-token-after-20s", primary: []mocks.Option{mocks.WithScript(mocks.SlowFirstToken(20 * time.Second).Always())}},
		{name: "cut-after-40-of-60", primary: []mocks.Option{mocks.WithScript(cut.Always())}, rescue: resilience.RescueRestart},
		{name: "stall-30s-after-content", primary: []mocks.Option{mocks.WithScript(stall.Always())}, rescue: resilience.RescueRestart},
		{name: "stall-at-15ms-per-token-idle-30s", primary: []mocks.Option{mocks.WithScript(rhythm.Always())},
			rescue: resilience.RescueRestart, idle: 30},
		{name: "malformed-10th-event", primary: []mocks.Option{mocks.WithScript(malformed.Always())}, rescue: resilience.RescueRestart},
		{name: "no-done", primary: []mocks.Option{mocks.WithReply(answer), mocks.WithScript(mocks.OmitTerminal().Always())}},
		{name: "context-too-long", primary: []mocks.Option{mocks.WithContextWindows(map[string]int{"gpt-4o-mini": 100})},
			req: long, opts: []client.Option{client.WithContextWindow("secondary", 200_000, nil)}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				primary := mocks.NewServer(tc.primary...)
				secondary := mocks.NewServer(mocks.WithReply(answer), mocks.WithRejectPrefill())
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
				if r.err != nil || !r.last.Done {
					b.Fatalf("%v (last %+v)", r.err, r.last)
				}
				b.ReportMetric(took.Seconds(), "s")
				b.ReportMetric(float64(primary.Journal().Len()), "primary-attempts")
				b.ReportMetric(float64(r.restarts), "restarts")
				c.CloseIdleConnections()
				primary.Close()
				secondary.Close()
			}
		})
	}
}

// BenchmarkHedgeStragglers measures hedging against stragglers (issue 24's goal), on the real
// clock with time scaled down 50 times: two routes whose first token comes after 9–11 ms
// (0.5 s scaled back), every 20th request of each after 200 ms (10 s); 4 callers in a closed
// loop, 1,000 streamed calls, each read to its end. Without hedging, then with the default
// retry budget and a learnt delay (HedgeQuantile 0.95, at most 100 ms). It reports the
// time-to-first-token quantiles, the extra requests the hedges cost (% of calls) and the extra
// output the servers streamed to tries that lost (% of the answers' output).
// go test ./client -run '^$' -bench HedgeStragglers -benchtime 1x
func BenchmarkHedgeStragglers(b *testing.B) {
	const calls, callers, answerWords = 1000, 4, 20
	profile := mocks.LatencyProfile{FirstToken: 9 * time.Millisecond, Jitter: 2 * time.Millisecond,
		StragglerEvery: 20, Straggler: 200 * time.Millisecond, HeadersFirst: true}
	for _, hedge := range []bool{false, true} {
		name := "off"
		if hedge {
			name = "learnt-p95"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				a := mocks.NewServer(mocks.WithReply(words("a", answerWords)), mocks.WithLatency(profile))
				bs := mocks.NewServer(mocks.WithReply(words("b", answerWords)), mocks.WithLatency(profile))
				o := resilience.DefaultOptions()
				if hedge {
					o.HedgeAfterSeconds, o.HedgeQuantile, o.HedgeMinDelaySeconds = 0.1, 0.95, 0.002
				}
				c, err := client.New(openAIProvider("a", a, o), openAIProvider("b", bs, resilience.DefaultOptions()),
					client.WithFallback("a", "b"))
				if err != nil {
					b.Fatal(err)
				}
				ttft := make([]time.Duration, calls)
				var next atomic.Int64
				var hedges, won atomic.Int64
				var wg sync.WaitGroup
				for range callers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							i := next.Add(1) - 1
							if i >= calls {
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
							if acct.HedgeWon {
								won.Add(1)
							}
						}
					}()
				}
				wg.Wait()
				slices.Sort(ttft)
				q := func(p float64) time.Duration { return ttft[int(p*float64(calls))-1] }
				sent := a.Journal().Len() + bs.Journal().Len()
				content := a.Journal().Stats().ContentEvents + bs.Journal().Stats().ContentEvents
				b.ReportMetric(float64(q(0.5).Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(q(0.95).Microseconds())/1000, "p95-ms")
				b.ReportMetric(float64(q(0.99).Microseconds())/1000, "p99-ms")
				b.ReportMetric(float64(q(0.99))/float64(q(0.95)), "p99/p95")
				b.ReportMetric(100*float64(sent-calls)/calls, "extra-requests-%")
				b.ReportMetric(100*float64(content-calls*answerWords)/float64(calls*answerWords), "extra-output-%")
				b.ReportMetric(float64(won.Load()), "hedges-won")
				b.ReportMetric(float64(hedges.Load()), "hedges")
				c.CloseIdleConnections()
				a.Close()
				bs.Close()
			}
		})
	}
}
