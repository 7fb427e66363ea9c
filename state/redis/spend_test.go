package steadyredis_test

import (
	"context"
	"errors"
	"net/http"
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

// scripts counts the scripts a client runs on Redis.
type scripts struct{ n atomic.Int64 }

func (c *scripts) DialHook(next goredis.DialHook) goredis.DialHook { return next }
func (c *scripts) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if n := cmd.Name(); n == "evalsha" || n == "eval" {
			c.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (c *scripts) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return next
}

func money(t testing.TB, s string) providers.Money {
	t.Helper()
	m, err := providers.ParseMoney(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// budgetedClient is one instance of an application: a client over its own store, with prices
// and budgets.
func budgetedClient(t *testing.T, s *mocks.Server, prefix string, rs *scripts, o cost.LedgerOptions, budgets ...cost.Budget) *client.Client {
	t.Helper()
	rdb := goredis.NewClient(&goredis.Options{Addr: addr(), MaxRetries: -1})
	if rs != nil {
		rdb.AddHook(rs)
	}
	prices, err := cost.NewPrices("USD", []cost.Entry{{Provider: "openai", Model: "gpt-4o", Price: cost.PerMillion(2.5, 10)}})
	if err != nil {
		t.Fatal(err)
	}
	openAI := func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{Name: "openai", Dialect: openai.Compatible, BaseURL: s.OpenAIBaseURL(), APIKey: "sk-test", Model: "gpt-4o", HTTPClient: hc})
	}
	// docs:begin fleet
	store := steadyredis.New(steadyredis.Options{Client: rdb, Prefix: prefix, Timeout: 200 * time.Millisecond})
	c, err := client.New(
		client.WithProvider("openai", options(), openAI),
		client.WithSharedState(store), // the Store keeps spend (cost.SpendStore): the budgets are the fleet's
		client.WithPrices(prices),
		client.WithBudgets(o, budgets...), // o.FailClosed: refuse what the store cannot count
	)
	// docs:end fleet
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Close()
		_ = store.Close()
		_ = rdb.Close()
	})
	return c
}

// Four instances — four clients, each with its own pipelines and its own store — on one Redis
// keep one budget of $1: together they spend at most the budget and the cost of one call
// in flight per instance, though each call costs more than its pre-flight estimate (its answer
// runs past DefaultAnswerTokens); they spend most of it; and they meet Redis far less often
// than once a call.
func TestRedis_FourInstancesKeepOneBudget(t *testing.T) {
	// A prompt of 2 000 bytes: 500 tokens in, and the fake echoes it: 500 tokens out. The
	// estimate holds 500 in and 256 out: 0.0038850; the call costs 0.00625.
	prompt := strings.Repeat("spend ", 333) + "ab"
	s := mocks.NewServer()
	defer s.Close()
	limit := money(t, "1")
	budget := cost.Budget{Name: "all", Window: cost.Day, Limit: limit}
	rs := &scripts{}
	var mu sync.Mutex
	var spent, dearest providers.Money
	var calls int
	var wg sync.WaitGroup
	for range 4 {
		c := budgetedClient(t, s, t.Name()+":", rs, cost.LedgerOptions{}, budget)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				resp, err := c.Chat(context.Background(), &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: prompt}}})
				var pe *providers.Error
				if errors.As(err, &pe) && pe.Kind == providers.KindBudgetExhausted {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				spent, calls, dearest = spent+resp.Cost.Total(), calls+1, max(dearest, resp.Cost.Total())
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if bound := limit + 4*dearest; spent > bound {
		t.Fatalf("the fleet spent %s, above the budget and one call per instance (%s)", spent, bound)
	}
	if spent < limit*3/4 {
		t.Fatalf("the fleet spent %s of %s", spent, limit)
	}
	if n := rs.n.Load(); n*2 > int64(calls) {
		t.Fatalf("%d scripts for %d calls", n, calls)
	}
	t.Logf("%d calls spent %s of %s (a call: %s); %d scripts on Redis", calls, spent, limit, dearest, rs.n.Load())
}

// A window's spend written into Redis by hand — garbage, negative, past 2^53, granted above
// the ceiling, a key of another type, a key gone — is rebuilt from the floors the request
// brings (what its instance heard), never from the ceiling, and repaired by the write; a sane
// one is taken as it is, and floors below it change nothing. Floors beyond the bounds are cut
// to them: nothing is granted past the ceiling, nothing stored past 2^53.
func TestRedis_StoredSpendIsBoundedAndRebuiltFromTheFloors(t *testing.T) {
	prefix := freshPrefix(t)
	store := steadyredis.New(steadyredis.Options{Addr: addr(), Prefix: prefix})
	defer store.Close()
	rdb := direct(t)
	ctx := context.Background()
	start := time.Date(2025, 3, 14, 0, 0, 0, 0, time.UTC)
	end := start.Add(24 * time.Hour)
	key := func(k string) string { return prefix + "spend:b:" + msAt(start) + ":" + k }
	ceiling, want := money(t, "1"), money(t, "0.1")
	req := func(k string, spent, floorGranted, floorSpent providers.Money) cost.SpendRequest {
		return cost.SpendRequest{Budget: "b", Key: k, Start: start, End: end, Ceiling: ceiling, Want: want, Spent: spent,
			FloorGranted: floorGranted, FloorSpent: floorSpent}
	}

	rdb.HSet(ctx, key("sane"), "granted", "300000", "spent", "250000") // 0.3 and 0.25
	got, err := store.LeaseSpend(ctx, req("sane", money(t, "0.01"), money(t, "0.2"), money(t, "0.1")))
	if err != nil || got.Granted != want || got.FleetGranted != money(t, "0.4") || got.FleetSpent != money(t, "0.26") {
		t.Fatalf("sane, floors below: %+v %v", got, err)
	}
	// The instance heard more than the key holds (a key restored from an old copy): the
	// floors win.
	rdb.HSet(ctx, key("behind"), "granted", "100000", "spent", "100000")
	got, err = store.LeaseSpend(ctx, req("behind", money(t, "0.01"), money(t, "0.5"), money(t, "0.45")))
	if err != nil || got.FleetGranted != money(t, "0.6") || got.FleetSpent != money(t, "0.46") {
		t.Fatalf("a key behind the floors: %+v %v", got, err)
	}
	// The floors: 0.3 granted and 0.25 spent. A damaged total is rebuilt from them; a sane
	// one beside it is kept.
	for name, c := range map[string]struct {
		fields []string
		spent  string // the spend after the rebuild, with 0.01 told
	}{
		"text":          {[]string{"granted", "lots", "spent", "0"}, "0.26"},
		"nan":           {[]string{"granted", "nan", "spent", "inf"}, "0.26"},
		"negative":      {[]string{"granted", "-5", "spent", "-1e18"}, "0.26"},
		"huge":          {[]string{"granted", "1e300", "spent", "1e16"}, "0.26"},
		"above ceiling": {[]string{"granted", "9000000000000000", "spent", "700000"}, "0.71"},
		"half":          {[]string{"granted", "0.5", "spent", "1"}, "0.26"},
		"missing":       {[]string{"other", "1"}, "0.26"},
	} {
		rdb.HSet(ctx, key(name), c.fields)
		got, err := store.LeaseSpend(ctx, req(name, money(t, "0.01"), money(t, "0.3"), money(t, "0.25")))
		if err != nil || got.Granted != want || got.FleetGranted != money(t, "0.4") || got.FleetSpent != money(t, c.spent) {
			t.Errorf("%s: %+v %v, want 0.1 granted of the room left after the floors' 0.3, and %s spent", name, got, err, c.spent)
		}
		if h := rdb.HGetAll(ctx, key(name)).Val(); h["granted"] != "400000" {
			t.Errorf("%s: not repaired: %v", name, h)
		}
	}
	rdb.Set(ctx, key("string"), "x", 0)
	if got, err := store.LeaseSpend(ctx, req("string", 0, money(t, "0.3"), money(t, "0.25"))); err != nil ||
		got.Granted != want || got.FleetGranted != money(t, "0.4") || got.FleetSpent != money(t, "0.25") {
		t.Fatalf("a key of another type: %+v %v", got, err)
	}
	if typ := rdb.Type(ctx, key("string")).Val(); typ != "hash" {
		t.Fatalf("a key of another type is a %s after the write", typ)
	}
	// A window whose key is gone, and an instance that heard nothing of it: it starts from 0.
	if got, err := store.LeaseSpend(ctx, req("gone", 0, 0, 0)); err != nil || got.Granted != want || got.FleetGranted != want || got.FleetSpent != 0 {
		t.Fatalf("a new window: %+v %v", got, err)
	}
	// Floors beyond every bound: granted is cut to the ceiling (no room, nothing beyond), spent
	// to 2^53 micro-units, and what is stored stays whole.
	got, err = store.LeaseSpend(ctx, req("hostile", providers.MaxMoney, providers.MaxMoney, providers.MaxMoney))
	if err != nil || got.Granted != 0 || got.FleetGranted != ceiling || got.FleetSpent != cost.MaxStoredMoney {
		t.Fatalf("hostile floors: %+v %v", got, err)
	}
	if h := rdb.HGetAll(ctx, key("hostile")).Val(); h["granted"] != "1000000" || h["spent"] != "9007199254740992" {
		t.Fatalf("hostile floors stored %v", h)
	}
	// A window's key lives until an hour after it ends, and never past the horizon.
	rdb.PExpire(ctx, key("sane"), 400*24*time.Hour)
	if _, err := store.LeaseSpend(ctx, cost.SpendRequest{Budget: "b", Key: "sane", Start: start, End: end, Ceiling: ceiling}); err != nil {
		t.Fatal(err)
	}
	if ttl := rdb.PTTL(ctx, key("sane")).Val(); ttl > 34*24*time.Hour || ttl <= 0 {
		t.Fatalf("ttl %v", ttl)
	}
	for _, bad := range []struct {
		budget     string
		start, end time.Time
	}{{"", start, end}, {"b", end, start}, {"b", start, start.Add(40 * 24 * time.Hour)}} {
		if _, err := store.LeaseSpend(ctx, cost.SpendRequest{Budget: bad.budget, Key: "k", Start: bad.start, End: bad.end,
			Ceiling: ceiling, Want: want}); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// While Redis is down, budgeted calls go on counted by each instance (failing open) or are
// refused (failing closed); once Redis is back, what was let through is told to it.
func TestRedis_BudgetsFailOpenOrClosedWhileRedisIsDown(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("ok"))
	defer s.Close()
	budget := cost.Budget{Name: "all", Window: cost.Day, Limit: money(t, "1")}
	open := budgetedClient(t, s, t.Name()+":open:", nil, cost.LedgerOptions{}, budget)
	closed := budgetedClient(t, s, t.Name()+":closed:", nil, cost.LedgerOptions{FailClosed: true}, budget)
	ask := func(c *client.Client) error {
		_, err := c.Chat(context.Background(), &providers.ChatRequest{MaxTokens: 1,
			Messages: []providers.Message{{Role: providers.RoleUser, Content: "hello there"}}})
		return err
	}
	redis.Stop()
	for range 3 {
		if err := ask(open); err != nil {
			t.Fatalf("failing open: %v", err)
		}
		var pe *providers.Error
		if err := ask(closed); !errors.As(err, &pe) || pe.Kind != providers.KindBudgetExhausted || pe.Code != cost.CodeStoreUnavailable {
			t.Fatalf("failing closed: %v", err)
		}
	}
	redis.Start()
	eventually(t, "the spend let through to reach Redis", func() bool {
		_ = ask(open)
		sp, _ := open.Ledger().Spend("all", "")
		h := direct(t).Keys(context.Background(), t.Name()+":open:spend:*").Val()
		return len(h) == 1 && sp.Spent >= 4*17500
	})
	// Failing closed, a call is refused for a second after the store's last failure (its
	// RetryAfter), then goes through.
	eventually(t, "calls failing closed to go through again", func() bool { return ask(closed) == nil })
}

// Failing open while Redis is down, an instance still refuses a call that would take what it
// has seen spent in the window past the limit: its own calls bound it, as each instance's own
// limit bounds the per-minute fleet budgets; it does not let calls through without bound.
func TestRedis_FailingOpenIsBoundedByWhatTheInstanceSpent(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("ok"))
	defer s.Close()
	limit := money(t, "0.0001") // a few calls' cost
	budget := cost.Budget{Name: "all", Window: cost.Day, Limit: limit}
	open := budgetedClient(t, s, t.Name()+":", nil, cost.LedgerOptions{}, budget)
	redis.Stop()
	defer redis.Start()
	var passed, refused int
	for range 30 {
		_, err := open.Chat(context.Background(), &providers.ChatRequest{MaxTokens: 1,
			Messages: []providers.Message{{Role: providers.RoleUser, Content: "hello there"}}})
		var pe *providers.Error
		switch {
		case err == nil:
			passed++
		case errors.As(err, &pe) && pe.Kind == providers.KindBudgetExhausted && pe.Code == "":
			refused++
		default:
			t.Fatal(err)
		}
	}
	sp, _ := open.Ledger().Spend("all", "")
	if passed == 0 || refused == 0 || sp.Spent > limit {
		t.Fatalf("Redis down: %d calls passed, %d refused, %s spent of a limit of %s", passed, refused, sp.Spent, limit)
	}
}
