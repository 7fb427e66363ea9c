package steadyredis_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	steadyredis "github.com/steadyllm/steady/state/redis"
)

// runs numbers the runs of the tests in this process: keys under a run's own prefix are its
// own, however many times the tests run against one redis-server (-count).
var runs atomic.Int64

// freshPrefix is a prefix no key in Redis has yet.
func freshPrefix(t *testing.T) string {
	return t.Name() + ":" + strconv.FormatInt(runs.Add(1), 10) + ":"
}

// fakeClock is the ledgers' clock, moved by the test.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// patient bounds Redis's commands in the tests that count what the fleet spent: a command that
// timed out on a loaded machine would count as the store failing (and its spend told twice).
const patient = 10 * time.Second

// fleetLedger is one instance's ledger keeping b in the fleet's Redis, through a client and a
// store of its own.
func fleetLedger(t *testing.T, prefix string, clock *fakeClock, b cost.Budget) *cost.Ledger {
	t.Helper()
	rdb := goredis.NewClient(&goredis.Options{Addr: addr(), MaxRetries: -1, ReadTimeout: patient, WriteTimeout: patient})
	store := steadyredis.New(steadyredis.Options{Client: rdb, Prefix: prefix, Timeout: patient})
	l, err := cost.NewLedger(cost.LedgerOptions{Store: store, Now: clock.now}, b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = l.Close()
		_ = store.Close()
		_ = rdb.Close()
	})
	return l
}

// One bad write to a tenant's spend key in Redis, of each kind, while three instances spend
// its budget: the window is rebuilt from what the instances heard, so the tenant is served
// again at once — a call bigger than any instance's lease, which the store must grant, passes
// within 30 s of the damage (at once, in fact) — and the fleet goes on to spend the rest of
// the limit and no more than the documented bound: the limit and what was granted since the
// instance that rebuilt the window last heard (here, two slices: each instance asked just
// before the damage, one after the other). The spend the store counts, which the tiers read,
// is rebuilt too.
func TestRedis_ADamagedSpendKeyHealsWithinTheBound(t *testing.T) {
	for _, damage := range []struct {
		name  string
		write func(ctx context.Context, rdb *goredis.Client, key string)
	}{
		{"nan", func(ctx context.Context, rdb *goredis.Client, key string) { rdb.HSet(ctx, key, "granted", "nan") }},
		{"text", func(ctx context.Context, rdb *goredis.Client, key string) {
			rdb.HSet(ctx, key, "granted", "lots", "spent", "lots")
		}},
		{"negative", func(ctx context.Context, rdb *goredis.Client, key string) {
			rdb.HSet(ctx, key, "granted", "-5", "spent", "-1e18")
		}},
		{"huge", func(ctx context.Context, rdb *goredis.Client, key string) {
			rdb.HSet(ctx, key, "granted", "1e300", "spent", "1e300")
		}},
		{"above the ceiling", func(ctx context.Context, rdb *goredis.Client, key string) {
			rdb.HSet(ctx, key, "granted", "9000000000000000")
		}},
		{"another type", func(ctx context.Context, rdb *goredis.Client, key string) {
			rdb.Del(ctx, key)
			rdb.RPush(ctx, key, "x")
		}},
		{"evicted", func(ctx context.Context, rdb *goredis.Client, key string) { rdb.Del(ctx, key) }},
	} {
		t.Run(damage.name, func(t *testing.T) {
			ctx := context.Background()
			prefix := freshPrefix(t)
			day := time.Date(2025, 3, 14, 0, 0, 0, 0, time.UTC)
			clock := &fakeClock{t: day.Add(12 * time.Hour)}
			limit := money(t, "1")
			slice := limit / 16 // the largest slice
			b := cost.Budget{Name: "tenant-daily", Per: "tenant", Window: cost.Day, Limit: limit}
			var fleet []*cost.Ledger
			for range 3 {
				fleet = append(fleet, fleetLedger(t, prefix, clock, b))
			}
			var spent atomic.Int64
			spend := func(l *cost.Ledger, est providers.Money) error {
				tk, err := l.Admit(ctx, cost.Call{Keys: []cost.Key{{Dimension: "tenant", Key: "acme"}},
					Estimate: func(*cost.Downgrade) providers.Money { return est }})
				var pe *providers.Error
				switch {
				case err == nil:
					tk.Settle(est, est)
					spent.Add(int64(est))
				case !errors.As(err, &pe) || pe.Kind != providers.KindBudgetExhausted || pe.Code != "":
					t.Errorf("not the limit's refusal: %v", err)
				}
				return err
			}
			// Each instance spends until refused, or until the fleet spent until (> 0).
			run := func(until providers.Money) {
				var wg sync.WaitGroup
				for i, l := range fleet {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for n := 0; until == 0 || providers.Money(spent.Load()) < until; n++ {
							if spend(l, money(t, "0.001")*providers.Money(1+(i+n)%5)) != nil {
								return
							}
						}
					}()
				}
				wg.Wait()
				for _, l := range fleet {
					_ = l.Close() // the refills under way end
				}
			}
			// Every instance asks the store in turn, telling it what it spent and hearing the
			// totals: the first to ask knows the least.
			askInTurn := func() {
				clock.add(cost.FleetRefresh)
				for _, l := range fleet {
					if err := spend(l, 0); err != nil {
						t.Fatal(err)
					}
					_ = l.Close()
				}
			}
			run(limit / 2)
			askInTurn()
			key := prefix + "spend:" + b.Name + ":" + strconv.FormatInt(day.UnixMilli(), 10) + ":acme"
			rdb := direct(t)
			if n, err := rdb.Exists(ctx, key).Result(); err != nil || n != 1 {
				t.Fatalf("the window's key %s: %d %v", key, n, err)
			}
			damage.write(ctx, rdb, key)

			// A call bigger than any lease holds must be granted by the store. The instance
			// that knows least asks first: it rebuilds the window.
			damaged := clock.now()
			for spend(fleet[0], money(t, "0.07")) != nil {
				if clock.now().Sub(damaged) >= 30*time.Second {
					t.Fatal("the tenant is still refused 30 s after the damage")
				}
				clock.add(time.Second)
			}
			healed := clock.now().Sub(damaged)
			if healed != 0 {
				t.Errorf("the tenant was served again %v after the damage, want at once", healed)
			}
			run(0)
			total := providers.Money(spent.Load())
			if bound := limit + 2*slice; total > bound {
				t.Fatalf("the fleet spent %s, beyond the bound %s", total, bound)
			}
			if floor := limit - 3*money(t, "0.005"); total < floor {
				t.Fatalf("the fleet spent %s of %s: the tenant was cut off", total, limit)
			}
			askInTurn()
			stored, err := strconv.ParseInt(rdb.HGet(ctx, key, "spent").Val(), 10, 64)
			if err != nil || cost.FromMicro(stored) < total-3*slice || cost.FromMicro(stored) > total {
				t.Fatalf("the store counts %d micro-units spent (%v), the fleet spent %s", stored, err, total)
			}
			t.Logf("served again %v after the damage; the fleet spent %s of %s (bound %s); the store counts %s",
				healed, total, limit, limit+2*slice, cost.FromMicro(stored))
		})
	}
}

// allCommands counts every command a client sends.
type allCommands struct{ n atomic.Int64 }

func (c *allCommands) DialHook(next goredis.DialHook) goredis.DialHook { return next }
func (c *allCommands) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}
func (c *allCommands) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// serverCommands is the number of commands Redis ran, from INFO commandstats — the commands a
// script runs included, INFO itself not.
func serverCommands(t *testing.T, rdb *goredis.Client) int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, line := range strings.Split(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") || name == "cmdstat_info" {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(stats, "calls="), ",")
		v, err := strconv.ParseInt(calls, 10, 64)
		if err != nil {
			t.Fatalf("commandstats line %q", line)
		}
		n += v
	}
	return n
}

// A tenant over its budget calling in a loop costs Redis almost nothing: once the store said
// it had no room left, an instance refuses the tenant's calls without asking it again until
// cost.FleetRecheck has passed. Counted for real over 1 000 refused calls through a client —
// the commands its store sent, and the commands Redis ran — at most 0.1 per refusal each. The
// refusals stay the limit's own, and another tenant is served.
func TestRedis_ARefusedTenantCostsRedisAlmostNothing(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("ok"))
	defer s.Close()
	sent := &allCommands{}
	rdb := goredis.NewClient(&goredis.Options{Addr: addr(), MaxRetries: -1, ReadTimeout: patient, WriteTimeout: patient})
	rdb.AddHook(sent)
	defer rdb.Close()
	store := steadyredis.New(steadyredis.Options{Client: rdb, Prefix: freshPrefix(t), PollInterval: time.Hour, Timeout: patient})
	defer store.Close()
	prices, err := cost.NewPrices("USD", []cost.Entry{{Provider: "openai", Model: "gpt-4o", Price: cost.PerMillion(2.5, 10)}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(
		client.WithProvider("openai", options(), func(hc *http.Client) (providers.Provider, error) {
			return openai.New(openai.Config{Name: "openai", Dialect: openai.Compatible, BaseURL: s.OpenAIBaseURL(), APIKey: "sk-test", Model: "gpt-4o", HTTPClient: hc})
		}),
		client.WithSharedState(store),
		client.WithPrices(prices),
		client.WithBudgets(cost.LedgerOptions{}, cost.Budget{Name: "tenant-daily", Per: "tenant", Window: cost.Day, Limit: money(t, "0.0001")}),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ask := func(tenant string) error {
		_, err := c.Chat(context.Background(), &providers.ChatRequest{MaxTokens: 1,
			Messages: []providers.Message{{Role: providers.RoleUser, Content: "hello there"}}}, client.WithTenant(tenant))
		return err
	}
	isRefusal := func(err error) bool {
		var pe *providers.Error
		return errors.As(err, &pe) && pe.Kind == providers.KindBudgetExhausted && pe.Code == "" && pe.RetryAfter > 0
	}
	for n := 0; ; n++ {
		err := ask("acme")
		if isRefusal(err) {
			break
		}
		if err != nil || n > 100 {
			t.Fatalf("call %d before the budget ran out: %v", n, err)
		}
	}
	rs := direct(t)
	sentBefore, ranBefore := sent.n.Load(), serverCommands(t, rs)
	const refusals = 1000
	for range refusals {
		if err := ask("acme"); !isRefusal(err) {
			t.Fatalf("a call of a tenant over its budget: %v", err)
		}
	}
	sentBy, ranBy := sent.n.Load()-sentBefore, serverCommands(t, rs)-ranBefore
	t.Logf("%d refused calls: the store sent %d commands (%.3f a call), Redis ran %d (%.3f a call)",
		refusals, sentBy, float64(sentBy)/refusals, ranBy, float64(ranBy)/refusals)
	if sentBy*10 > refusals || ranBy*10 > refusals {
		t.Fatalf("%d refused calls cost %d commands sent and %d run, want at most %d", refusals, sentBy, ranBy, refusals/10)
	}
	if err := ask("beta"); err != nil {
		t.Fatalf("another tenant: %v", err)
	}
}
