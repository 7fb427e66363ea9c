package client_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/internal/testkit/backend"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

// loadResult is what a closed loop of callers achieved against the limited fake.
type loadResult struct {
	served, limit   int // answers the callers got, and the most the keys' limits allowed
	sent, rejected  int // requests the server received, and those it answered 429
	fakeMinutes     float64
	callersFailures int
}

func (r loadResult) String() string {
	return fmt.Sprintf("%d answers of %d allowed (%.1f %%), server answered 429 to %d of %d requests (%.2f %%); %d calls failed; %.2f minutes",
		r.served, r.limit, 100*float64(r.served)/float64(r.limit), r.rejected, r.sent, 100*float64(r.rejected)/float64(max(r.sent, 1)),
		r.callersFailures, r.fakeMinutes)
}

const (
	keys          = 3
	callers       = 12
	fakeMinutes   = 3
	scaledSpeedup = 60
)

// load is what each key of the fake allows per minute and what each call asks for.
type load struct {
	rpm, tpm  int
	maxTokens int
}

var (
	// requestsBind: each call costs 45 tokens (a 25-token prompt and max_tokens 20), so the
	// 120 requests a minute run out before the 6,000 tokens.
	requestsBind = load{rpm: 120, tpm: 6000, maxTokens: 20}
	// tokensBind: each call may answer 200 tokens and the server debits all of them (as
	// OpenAI does), though the answer is one word: 60,000 tokens a minute bind at 266 calls,
	// long before the 1,000 requests.
	tokensBind = load{rpm: 1000, tpm: 60_000, maxTokens: 200}
)

// runLoad sends a closed loop of callers' chats for fakeMinutes to a fake that limits each of
// three keys as l says, through a client with one deployment per key, paced or not.
func runLoad(t testing.TB, l load, paced bool) loadResult {
	rpm, tpm := l.rpm, l.tpm
	clock := backend.NewScaledClock(scaledSpeedup)
	var opts []mocks.Option
	for k := range keys {
		opts = append(opts, mocks.WithKeyRateLimits(fmt.Sprint("sk-key-", k), mocks.RateLimits{RequestsPerMinute: rpm, TokensPerMinute: tpm}))
	}
	s := mocks.NewServer(append(opts, mocks.WithClock(clock.Now), mocks.WithReply("ok"))...)
	defer s.Close()
	o := resilience.DefaultOptions()
	o.RetryBudgetPercent = 0
	o.BulkheadMaxConcurrency = 100
	o.RetryMaxDelaySeconds = 120
	o.TimeoutSeconds = 600
	o.StreamIdleTimeoutSeconds = 600
	if !paced {
		o.PaceFromHeaders, o.RateLimitCooldown = false, false
	}
	deps := make([]client.Deployment, keys)
	for k := range deps {
		key := fmt.Sprint("sk-key-", k)
		deps[k] = client.Deployment{Name: fmt.Sprint("key-", k), Factory: func(hc *http.Client) (providers.Provider, error) {
			return openai.New(openai.Config{Name: "openai", BaseURL: s.OpenAIBaseURL(), APIKey: key, HTTPClient: hc, Model: "gpt-4o-mini"})
		}}
		if paced {
			deps[k].RequestsPerMinute, deps[k].TokensPerMinute = rpm, tpm
		}
	}
	c, err := client.New(client.WithDeployments("openai", o, client.StrategyMostHeadroom, deps...), client.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	req := &providers.ChatRequest{MaxTokens: l.maxTokens, Messages: []providers.Message{{Role: providers.RoleUser, Content: strings.Repeat("word ", 20)}}}
	// The run ends on a flag, not a context deadline: a deadline is wall-clock time, which the
	// pipelines (on the scaled clock) would compare with their own.
	var stop atomic.Bool
	time.AfterFunc(time.Duration(fakeMinutes)*time.Minute/scaledSpeedup, func() { stop.Store(true) })
	ctx := context.Background()
	var served, failed atomic.Int64
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if _, err := c.Chat(ctx, req); err == nil {
					served.Add(1)
				} else {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	minutes := float64(clock.Now().Sub(clock.Start)) / float64(time.Minute)
	r := loadResult{served: int(served.Load()), callersFailures: int(failed.Load()), fakeMinutes: minutes}
	// Each key starts with a full minute's budget and refills it every minute.
	cost := (len(req.Messages[0].Content)+3)/4 + req.MaxTokens
	perKey := min(float64(rpm)*(1+minutes), float64(tpm)*(1+minutes)/float64(cost))
	r.limit = int(perKey) * keys
	for _, q := range s.Journal().Requests() {
		r.sent++
		if strings.HasPrefix(q.Step, "429") {
			r.rejected++
		}
	}
	return r
}

// Pacing keeps a closed loop of callers under three keys' limits: it reaches nearly the whole
// aggregate limit while the server almost never has to answer 429; the same load unpaced
// collects 429s.
func TestPacing_ReachesTheLimitWithoutRateLimitErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for three seconds")
	}
	paced := runLoad(t, requestsBind, true)
	unpaced := runLoad(t, requestsBind, false)
	t.Logf("paced:   %v", paced)
	t.Logf("unpaced: %v", unpaced)
	if float64(paced.rejected) >= 0.01*float64(paced.sent) {
		t.Errorf("paced: %v, want fewer than 1 %% of requests answered 429", paced)
	}
	// How close to the limit a closed loop gets depends on the CPU it is given (the fake's
	// minute is a second of wall time, whoever else runs): the test asks for progress without
	// failures, BenchmarkPacing measures how close (98 %).
	if paced.callersFailures > 0 || float64(paced.served) < 0.1*float64(paced.limit) {
		t.Errorf("paced: %v, want no failed call and steady progress", paced)
	}
	if float64(unpaced.rejected) < 0.1*float64(unpaced.sent) {
		t.Errorf("unpaced: %v, want many 429s", unpaced)
	}
}

// When tokens bind and the answers are much shorter than max_tokens, pacing follows the
// budget the server states rather than crediting back the unused estimate, which the server
// (as OpenAI) never refunds: under 1 % of requests are answered 429. Before, the credit made
// pacing send what the server then refused (28 % of requests here).
func TestPacing_TokensBindWithoutRateLimitErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for three seconds")
	}
	paced := runLoad(t, tokensBind, true)
	t.Logf("paced: %v", paced)
	if float64(paced.rejected) >= 0.01*float64(paced.sent) {
		t.Errorf("paced: %v, want fewer than 1 %% of requests answered 429", paced)
	}
	if paced.callersFailures > 0 || float64(paced.served) < 0.1*float64(paced.limit) {
		t.Errorf("paced: %v, want no failed call and steady progress (99 %% of the limit measured: see BenchmarkPacing)", paced)
	}
}

// BenchmarkPacing states, for docs/capacity.md, what pacing achieves under the loads of
// TestPacing_ReachesTheLimitWithoutRateLimitErrors (requests bind) and
// TestPacing_TokensBindWithoutRateLimitErrors (tokens bind), paced and unpaced (one run each).
func BenchmarkPacing(b *testing.B) {
	for _, l := range []struct {
		name string
		load load
	}{{"requests", requestsBind}, {"tokens", tokensBind}} {
		for _, paced := range []bool{true, false} {
			name := l.name + "/unpaced"
			if paced {
				name = l.name + "/paced"
			}
			b.Run(name, func(b *testing.B) {
				var r loadResult
				for range b.N {
					r = runLoad(b, l.load, paced)
				}
				b.ReportMetric(100*float64(r.served)/float64(r.limit), "%limit")
				b.ReportMetric(100*float64(r.rejected)/float64(max(r.sent, 1)), "%429")
				b.Logf("%s: %v", name, r)
			})
		}
	}
}
