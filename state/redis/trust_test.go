package steadyredis_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	steady "github.com/steadyllm/steady"
	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/resilience"
	steadyredis "github.com/steadyllm/steady/state/redis"
)

// direct is a client of the test's Redis for the tests to write what they like.
func direct(t *testing.T) *goredis.Client {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: addr()})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func msAt(t time.Time) string { return fmt.Sprint(t.UnixMilli()) }

// An opening and a pause written into Redis by hand, an hour long, hold on an instance for at
// most its own break and its longest pause; after them calls go through. Garbage in the fields
// (a year-2200 time, -1e18, nan, inf, text) is no advice.
func TestRedis_PoisonedAdviceHoldsAtMostTheBreakAndTheLongestPause(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	url := s.OpenAIBaseURL() + "/chat/completions"
	rdb := direct(t)
	ctx := context.Background()
	prefix := t.Name() + ":"
	now := time.Now()
	rdb.HSet(ctx, prefix+"advice:openai", "opened", msAt(now), "open_until", msAt(now.Add(time.Hour)), "closed", "0", "cool_until", "0")
	rdb.HSet(ctx, prefix+"advice:claude", "opened", "0", "open_until", "0", "closed", "0", "cool_until", msAt(now.Add(time.Hour)))
	rdb.HSet(ctx, prefix+"advice:gemini", "opened", "-1e18", "open_until", msAt(time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)),
		"closed", "nan", "cool_until", "inf")
	rdb.HSet(ctx, prefix+"advice:mistral", "opened", "abc", "open_until", "1e300", "closed", "-inf", "cool_until", "x")
	o := options()
	o.CircuitBreakerDurationSeconds = 1
	o.RateLimitMaxPauseSeconds = 1

	a := newInstance(t, "openai", prefix, o)
	eventually(t, "a to read the opening", func() bool { return !a.store.Advice("openai").OpenUntil.IsZero() })
	if err := a.call(ctx, url); !errors.Is(err, resilience.ErrCircuitOpen) {
		t.Fatalf("the stored opening does not hold: %v", err)
	}
	if info := a.p.CircuitInfo(); info.State != resilience.CircuitOpen || info.NextProbeIn > time.Second {
		t.Fatalf("stored opening of an hour: %+v, want open for at most the break (1s)", info)
	}
	b := newInstance(t, "claude", prefix, o)
	eventually(t, "b to read the pause", func() bool { return !b.store.Advice("claude").CoolUntil.IsZero() })
	call := &resilience.Call{}
	call.Init(ctx, false)
	call.MaxWait = -1
	var ce *resilience.CooldownError
	if err := b.call(call, url); !errors.As(err, &ce) || ce.RetryAfter > time.Second {
		t.Fatalf("stored pause of an hour: %v, want one of at most the longest pause (1s)", err)
	}
	for _, name := range []string{"gemini", "mistral"} {
		in := newInstance(t, name, prefix, o)
		if info := in.p.CircuitInfo(); info.State != resilience.CircuitClosed || info.CoolingFor != 0 {
			t.Fatalf("%s: garbage was adopted: %+v", name, info)
		}
		if err := in.call(ctx, url); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	time.Sleep(1100 * time.Millisecond) // the break and the pause are about real time
	for _, in := range []*instance{a, b, a, b} {
		if err := in.call(ctx, url); err != nil {
			t.Fatalf("after the break and the pause: %v", err)
		}
	}
	if st := a.p.CircuitState(); st != resilience.CircuitClosed {
		t.Fatalf("a: %v", st)
	}
}

// commands counts the scripts a client runs.
type commands struct{ evals atomic.Int64 }

func (c *commands) DialHook(next goredis.DialHook) goredis.DialHook { return next }
func (c *commands) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if n := cmd.Name(); n == "evalsha" || n == "eval" {
			c.evals.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (c *commands) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return next
}

// A fleet budget whose bucket someone damaged (a huge negative or non-finite number of tokens,
// text, a last refill in the year 2200) is taken as empty and refilling: a call waits about
// the time a unit takes to come back, and asks Redis a few times, not thousands.
func TestRedis_APoisonedBudgetGrantsAfterABoundedWaitAndFewCommands(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	url := s.OpenAIBaseURL() + "/chat/completions"
	rdb := direct(t)
	ctx := context.Background()
	y2200 := msAt(time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC))
	for i, poison := range [][2]string{{"-1e18", msAt(time.Now())}, {"nan", "0"}, {"inf", "x"}, {"abc", y2200}, {"5", y2200}, {"1e300", "-1e300"}} {
		prefix := fmt.Sprintf("%s:%d:", t.Name(), i)
		rdb.HSet(ctx, prefix+"budget:openai:requests", "tokens", poison[0], "at", poison[1])
		counted := goredis.NewClient(&goredis.Options{Addr: addr(), MaxRetries: -1})
		n := &commands{}
		counted.AddHook(n)
		store := steadyredis.New(steadyredis.Options{Client: counted, Prefix: prefix, PollInterval: 50 * time.Millisecond})
		o := options()
		o.PaceRequestsPerMinute = 600 // ten a second: a unit comes back in 100 ms
		in := newInstance(t, "openai", "", o, resilience.WithSharedState(store))
		for range 2 {
			if err := in.call(ctx, url); err != nil {
				t.Fatalf("bucket %q at %q: %v", poison[0], poison[1], err)
			}
		}
		if e := n.evals.Load(); e > 10 {
			t.Fatalf("bucket %q at %q: %d scripts run for two calls", poison[0], poison[1], e)
		}
		if err := store.Err(); err != nil {
			t.Fatal(err)
		}
		_ = store.Close()
		_ = counted.Close()
	}
}

// The local copy follows Redis: a pause deleted or shortened there is gone or shorter here;
// a key of the wrong type or with garbage fields is repaired by the next write; advice given
// while Redis is down stays in the local copy, the store says it is in trouble, and the advice
// is written once Redis is back.
func TestRedis_TheLocalCopyFollowsRedisAndWritesRepairIt(t *testing.T) {
	rdb := direct(t)
	ctx := context.Background()
	prefix := t.Name() + ":"
	store := steadyredis.New(steadyredis.Options{Addr: addr(), Prefix: prefix, PollInterval: 20 * time.Millisecond})
	defer store.Close()
	key := prefix + "advice:p"
	end := time.Now().Add(time.Minute).Truncate(time.Millisecond)
	store.Advise("p", resilience.Advice{CoolUntil: end})
	eventually(t, "the pause to be written", func() bool { return rdb.HGet(ctx, key, "cool_until").Val() == msAt(end) })
	shorter := end.Add(-30 * time.Second)
	rdb.HSet(ctx, key, "cool_until", msAt(shorter))
	eventually(t, "the shorter pause to reach the local copy", func() bool { return store.Advice("p").CoolUntil.Equal(shorter) })
	rdb.Del(ctx, key)
	eventually(t, "the deleted pause to leave the local copy", func() bool { return store.Advice("p").CoolUntil.IsZero() })

	rdb.Set(ctx, key, "not a hash", 0)
	store.Advise("p", resilience.Advice{CoolUntil: end})
	eventually(t, "the write to repair a key of the wrong type", func() bool { return rdb.HGet(ctx, key, "cool_until").Val() == msAt(end) })
	rdb.HSet(ctx, key, "closed", "garbage", "opened", "nan")
	store.Advise("p", resilience.Advice{CoolUntil: end.Add(time.Second)})
	eventually(t, "the write to repair garbage fields", func() bool {
		h := rdb.HGetAll(ctx, key).Val()
		return h["closed"] == "0" && h["opened"] == "0" && h["cool_until"] == msAt(end.Add(time.Second))
	})
	if err := store.Err(); err != nil {
		t.Fatalf("the store reports trouble after repairing: %v", err)
	}

	redis.Stop()
	later := end.Add(2 * time.Second)
	store.Advise("p", resilience.Advice{CoolUntil: later})
	eventually(t, "the store to report the failed write", func() bool { return store.Err() != nil })
	time.Sleep(100 * time.Millisecond) // polls fail meanwhile
	if !store.Advice("p").CoolUntil.Equal(later) {
		t.Fatalf("the unwritten pause left the local copy: %+v", store.Advice("p"))
	}
	redis.Start()
	eventually(t, "the pending pause to be written after the restart", func() bool { return rdb.HGet(ctx, key, "cool_until").Val() == msAt(later) })
	eventually(t, "the store to recover", func() bool { return store.Err() == nil })
}

// Two applications on one Redis with the default prefix, each with a provider named "openai"
// that calls its own server, share nothing; two instances of one application share.
func TestRedis_UnrelatedApplicationsDoNotShareInstancesOfOneDo(t *testing.T) {
	failing := mocks.NewServer(mocks.WithScript(mocks.Status(503).Always()))
	defer failing.Close()
	other := mocks.NewServer()
	defer other.Close()
	open := func(url string) *client.Client {
		cfg, err := appConfig(url, false, addr(), "") // no key: the failing server refuses it (401), which opens the deployment's circuit
		if err != nil {
			t.Fatal(err)
		}
		c, err := steady.FromConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	app1, app1b, app2 := open(failing.OpenAIBaseURL()), open(failing.OpenAIBaseURL()), open(other.OpenAIBaseURL())
	// The server of app2 wants a key: its answers do not matter, only whether calls are sent.
	_, _ = app2.Chat(context.Background(), hello)
	for range 3 {
		_, _ = app1.Chat(context.Background(), hello)
	}
	if app1.Circuits()["openai"].CircuitState() != resilience.CircuitOpen {
		t.Fatal("app1's circuit did not open")
	}
	time.Sleep(200 * time.Millisecond) // four polls: what would be shared is shared by now
	_, _ = app2.Chat(context.Background(), hello)
	if n := other.Journal().Len(); n != 2 || app2.Circuits()["openai"].CircuitState() == resilience.CircuitOpen {
		t.Fatalf("another application adopted app1's opening: its server saw %d requests, want 2", n)
	}
	eventually(t, "the other instance of app1 to adopt the opening", func() bool {
		return app1b.Circuits()["openai"].CircuitState() == resilience.CircuitOpen
	})
	if n := failing.Journal().Len(); n != 3 {
		t.Fatalf("app1's server saw %d requests, want 3", n)
	}
}

// Close writes what is still queued: advice given just before an instance stops still
// reaches the fleet.
func TestRedis_CloseWritesWhatIsStillQueued(t *testing.T) {
	rdb := direct(t)
	ctx := context.Background()
	prefix := t.Name() + ":"
	store := steadyredis.New(steadyredis.Options{Addr: addr(), Prefix: prefix, PollInterval: time.Hour})
	end := time.Now().Add(time.Minute).Truncate(time.Millisecond)
	const n = 50
	for i := range n {
		store.Advise(fmt.Sprint("p", i), resilience.Advice{CoolUntil: end})
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if got := rdb.HGet(ctx, prefix+fmt.Sprint("advice:p", i), "cool_until").Val(); got != msAt(end) {
			t.Fatalf("advice %d of %d given before Close: Redis holds %q", i, n, got)
		}
	}
}
