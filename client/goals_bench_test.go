package client_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// BenchmarkStreamFailures measures, on the real clock and with the default policy, what the
// caller of a stream sees when the failures that hurt streaming users most strike the primary:
// the seconds until the complete answer, and the attempts the primary got. The README's table
// comes from one run: go test ./client -run '^$' -bench StreamFailures -benchtime 1x. The tests
// (failover_stream_test.go, routes_test.go) prove the same behaviour on a manual clock.
func BenchmarkStreamFailures(b *testing.B) {
	answer := words("s", 60)
	cut := mocks.Reply(words("p", 60))
	cut.Cut, cut.CutAfter, cut.CountContent = mocks.CutAbort, 40, true
	stall := mocks.Reply(words("p", 60))
	stall.StallAfter, stall.StallFor = 40, 30*time.Second
	malformed := mocks.Reply(words("p", 60))
	malformed.MalformedAt = 10
	long := &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: strings.Repeat("word ", 400)}}}
	cases := []struct {
		name    string
		primary []mocks.Option
		rescue  string
		req     *providers.ChatRequest
		opts    []client.Option
	}{
		{name: "silent", primary: []mocks.Option{mocks.WithScript(mocks.Stall().Always())}},
		{name: "first-token-after-20s", primary: []mocks.Option{mocks.WithScript(mocks.SlowFirstToken(20 * time.Second).Always())}},
		{name: "cut-after-40-of-60", primary: []mocks.Option{mocks.WithScript(cut.Always())}, rescue: resilience.RescueRestart},
		{name: "stall-30s-after-content", primary: []mocks.Option{mocks.WithScript(stall.Always())}, rescue: resilience.RescueRestart},
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
