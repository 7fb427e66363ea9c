package steadyredis_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
	steadyredis "github.com/steadyllm/steady/state/redis"
)

// A fresh instance knows an opening the fleet knows before its first call: its circuit shows
// it (as a health check reads it) and its first call is not sent.
func TestRedis_AFreshInstanceKnowsTheFleetsOpeningBeforeItsFirstCall(t *testing.T) {
	s := mocks.NewServer(mocks.WithScript(mocks.Status(503).Always()))
	defer s.Close()
	url := s.OpenAIBaseURL() + "/chat/completions"
	a := newInstance(t, "openai", t.Name(), options())
	for range 3 {
		_ = a.call(context.Background(), url)
	}
	rdb := direct(t)
	eventually(t, "the opening to be written", func() bool {
		return rdb.HGet(context.Background(), t.Name()+"advice:openai", "open_until").Val() > "0"
	})
	b := newInstance(t, "openai", t.Name(), options())
	if st := b.p.CircuitState(); st != resilience.CircuitOpen {
		t.Fatalf("the fresh instance's circuit reads %v before any call", st)
	}
	if err := b.call(context.Background(), url); !errors.Is(err, resilience.ErrCircuitOpen) || s.Journal().Len() != 3 {
		t.Fatalf("the fresh instance's first call: %v (%d requests)", err, s.Journal().Len())
	}
}

// polls counts the advice a client reads in its polls.
type polls struct{ reads atomic.Int64 }

func (p *polls) DialHook(next goredis.DialHook) goredis.DialHook          { return next }
func (p *polls) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook { return next }
func (p *polls) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		for _, c := range cmds {
			if c.Name() == "hmget" {
				p.reads.Add(1)
			}
		}
		return next(ctx, cmds)
	}
}

// A closed client's pipelines leave the store's polls, and closing it twice is harmless.
func TestRedis_AClosedClientLeavesTheStoresPolls(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	rdb := goredis.NewClient(&goredis.Options{Addr: addr()})
	defer rdb.Close()
	p := &polls{}
	rdb.AddHook(p)
	store := steadyredis.New(steadyredis.Options{Client: rdb, Prefix: t.Name(), PollInterval: 10 * time.Millisecond})
	defer store.Close()
	c, err := client.New(client.WithProvider("openai", options(), func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{Name: "openai", Dialect: openai.Compatible, BaseURL: s.OpenAIBaseURL(), APIKey: "sk-test", Model: "gpt-4o-mini", HTTPClient: hc})
	}), client.WithSharedState(store))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Chat(context.Background(), hello); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a poll", func() bool { return p.reads.Load() > 0 })
	_ = c.Close()
	_ = c.Close()
	time.Sleep(20 * time.Millisecond) // a poll under way ends
	before := p.reads.Load()
	time.Sleep(100 * time.Millisecond) // ten poll intervals
	if n := p.reads.Load() - before; n != 0 {
		t.Fatalf("the store read %d advice keys after the client closed", n)
	}
}

// Two instances whose clocks differ by less than resilience.SharedClockSkew take from one
// budget for a simulated ten minutes: together they never get more than the limit, what the
// minutes refill, and the difference's worth (skew × rate). A last refill stored in the year
// 2200 does not starve the budget.
func TestRedis_ClockSkewWithinTheBoundOverspendsABudgetByAtMostTheBound(t *testing.T) {
	store := steadyredis.New(steadyredis.Options{Addr: addr(), Prefix: t.Name()})
	defer store.Close()
	const perMinute, want = 600, 10
	skew := 3 * time.Second
	start := time.Now()
	ctx := context.Background()
	var got int64
	for step := time.Duration(0); step <= 10*time.Minute; step += 100 * time.Millisecond {
		for _, ahead := range []time.Duration{0, skew} {
			n, _, err := store.TakeBudget(ctx, "p:requests", perMinute, want, start.Add(step+ahead))
			if err != nil {
				t.Fatal(err)
			}
			got += n
		}
	}
	limit := perMinute + 10*perMinute + int64(skew.Seconds()*perMinute/60)
	if got > limit || got < limit-2*perMinute {
		t.Fatalf("granted %d, want at most %d (limit + ten minutes + skew × rate) and not far below", got, limit)
	}

	rdb := direct(t)
	rdb.HSet(ctx, t.Name()+"budget:p:requests", "tokens", "0", "at", msAt(time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)))
	later := start.Add(11 * time.Minute)
	_, _, _ = store.TakeBudget(ctx, "p:requests", perMinute, want, later)
	if n, _, _ := store.TakeBudget(ctx, "p:requests", perMinute, want, later.Add(2*time.Second)); n != want {
		t.Fatalf("after a last refill stored in 2200, two seconds refill %d units, want %d", n, want)
	}
}

// records is a slog handler that keeps every record.
type records struct {
	mu   sync.Mutex
	msgs []string
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	r.mu.Lock()
	r.msgs = append(r.msgs, b.String())
	r.mu.Unlock()
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

func (r *records) count(sub string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.msgs {
		if strings.Contains(m, sub) {
			n++
		}
	}
	return n
}

// While Redis is stopped and restarted, go-redis's own lines arrive as records of the store's
// logger, and the pipelines sharing the store report one failure and one recovery between them.
func TestRedis_StoreTroubleIsLoggedOncePerStoreThroughSlog(t *testing.T) {
	logs := &records{}
	store := steadyredis.New(steadyredis.Options{Addr: addr(), Prefix: t.Name(), PollInterval: 20 * time.Millisecond,
		Logger: slog.New(logs)})
	defer store.Close()
	var failed, recovered atomic.Int32
	observe := func(e resilience.Event) {
		switch e.Type {
		case resilience.EventSharedStateFailed:
			failed.Add(1)
		case resilience.EventSharedStateRecovered:
			recovered.Add(1)
		}
	}
	for _, name := range []string{"a", "b", "c"} {
		p, err := resilience.New(options(), resilience.WithName(name), resilience.WithSharedState(store), resilience.OnEvent(observe))
		if err != nil {
			t.Fatal(err)
		}
		_ = p.CircuitState() // the pipeline joins the store
		defer p.StopSharing()
	}
	redis.Stop()
	eventually(t, "the store to report the outage", func() bool { return store.Err() != nil })
	eventually(t, "go-redis's lines to arrive through slog", func() bool { return logs.count("component=go-redis") > 0 })
	redis.Start()
	eventually(t, "the store to recover", func() bool { return store.Err() == nil })
	if failed.Load() != 1 || recovered.Load() != 1 {
		t.Fatalf("%d failures and %d recoveries reported for one outage of one store", failed.Load(), recovered.Load())
	}
}
