package cost_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/providers"
)

// memStore is a SpendStore in memory, which keeps the requests' floors as a store must, and
// can be made to fail, to answer nonsense, or to lose its windows.
type memStore struct {
	mu      sync.Mutex
	windows map[string]*[2]providers.Money // granted, spent
	calls   atomic.Int64
	fail    atomic.Bool
	lie     atomic.Bool
	extra   atomic.Int64  // room the store has beyond each ceiling, as one whose room grew
	gate    chan struct{} // when set, each call waits for a value
}

func newMemStore() *memStore { return &memStore{windows: map[string]*[2]providers.Money{}} }

func (s *memStore) LeaseSpend(_ context.Context, r cost.SpendRequest) (cost.SpendLease, error) {
	s.calls.Add(1)
	if s.gate != nil {
		<-s.gate
	}
	if s.fail.Load() {
		return cost.SpendLease{}, errors.New("store down")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := r.Budget + "|" + r.Key + "|" + r.Start.String()
	w := s.windows[k]
	if w == nil {
		w = &[2]providers.Money{}
		s.windows[k] = w
	}
	w[0], w[1] = max(w[0], min(r.FloorGranted, r.Ceiling)), max(w[1], r.FloorSpent)
	got := min(r.Want, max(r.Ceiling+providers.Money(s.extra.Load())-w[0], 0))
	w[0] += got
	w[1] += r.Spent
	if s.lie.Load() {
		return cost.SpendLease{Granted: r.Want + 1, FleetGranted: -1}, nil
	}
	return cost.SpendLease{Granted: got, FleetGranted: w[0], FleetSpent: w[1]}, nil
}

// lose forgets every window, as a store whose keys were evicted.
func (s *memStore) lose() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.windows)
}

func (s *memStore) totals(budget, key string, start time.Time) (granted, spent providers.Money) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.windows[budget+"|"+key+"|"+start.String()]; w != nil {
		return w[0], w[1]
	}
	return 0, 0
}

// Four instances on one store, calls of varying cost in parallel: together they never spend
// more than the limit, plus what calls in flight cost beyond their estimates (none here), and
// the store is asked far less often than once a call.
func TestFleet_InstancesShareOneBudgetWithoutARoundTripPerCall(t *testing.T) {
	store := newMemStore()
	c := &clock{t: noon}
	b := cost.Budget{Name: "all", Window: cost.Day, Limit: units("1")}
	var spent atomic.Int64
	var calls atomic.Int64
	var wg sync.WaitGroup
	for i := range 4 {
		l := newLedger(t, c, &recorder{}, cost.LedgerOptions{Store: store}, b)
		for g := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 0; ; n++ {
					est := units("0.001") * providers.Money(1+(i+g+n)%5)
					tk, err := l.Admit(context.Background(), cost.Call{Estimate: func(*cost.Downgrade) providers.Money { return est }})
					if err != nil {
						return
					}
					calls.Add(1)
					actual := est * 9 / 10
					spent.Add(int64(actual))
					tk.Settle(actual, actual)
				}
			}()
		}
		defer l.Close()
	}
	wg.Wait()
	total := providers.Money(spent.Load())
	if total > units("1") || total < units("0.85") {
		t.Fatalf("the fleet spent %s of 1", total)
	}
	if n, rt := calls.Load(), store.calls.Load(); rt*4 > n {
		t.Fatalf("%d round trips for %d calls", rt, n)
	}
	t.Logf("%d calls, %d round trips, %s spent of 1", calls.Load(), store.calls.Load(), total)
}

// An instance's tiers follow the fleet's spend: once another instance spent past the downgrade
// tier and told the store, this one's calls are downgraded within FleetRefresh.
func TestFleet_TiersFollowTheFleetsSpend(t *testing.T) {
	store := newMemStore()
	c := &clock{t: noon}
	b := tenantDaily()
	a := newLedger(t, c, &recorder{}, cost.LedgerOptions{Store: store}, b)
	other := newLedger(t, c, &recorder{}, cost.LedgerOptions{Store: store}, b)
	defer a.Close()
	defer other.Close()
	if tk, err := call(t, a, "acme", units("0.01"), units("0.01")); err != nil || tk.Action != cost.ActionAllow {
		t.Fatal(tk, err)
	}
	for range 9 {
		if _, err := call(t, other, "acme", units("0.1"), units("0.1")); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.add(cost.FleetRefresh)
		tk, err := call(t, a, "acme", 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if tk.Action == cost.ActionDowngrade {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still %v after the other instance spent past the tier", tk.Action)
		}
		time.Sleep(time.Millisecond) // the refill the call started runs in the background
	}
	if s, _ := a.Spend(b.Name, "acme"); s.Spent < units("0.8") {
		t.Fatalf("spend as a sees it %+v", s)
	}
}

// While the store is down, calls go on counted here (failing open) or are refused (failing
// closed); once it answers again, the spend let through is told to it. Each change is reported
// once.
func TestFleet_StoreDownFailsOpenOrClosed(t *testing.T) {
	for _, closed := range []bool{false, true} {
		store := newMemStore()
		c, r := &clock{t: noon}, &recorder{}
		b := cost.Budget{Name: "all", Window: cost.Day, Limit: units("1")}
		l := newLedger(t, c, r, cost.LedgerOptions{Store: store, FailClosed: closed}, b)
		store.fail.Store(true)
		for range 3 {
			_, err := call(t, l, "", units("0.1"), units("0.1"))
			var pe *providers.Error
			switch {
			case closed && (!errors.As(err, &pe) || pe.Kind != providers.KindBudgetExhausted || pe.Code != cost.CodeStoreUnavailable || pe.RetryAfter != time.Second):
				t.Fatalf("closed: %v", err)
			case !closed && err != nil:
				t.Fatalf("open: %v", err)
			}
		}
		if n := len(r.of(cost.EventStoreFailed)); n != 1 {
			t.Fatalf("%d store-failed events", n)
		}
		store.fail.Store(false)
		c.add(time.Second)
		if _, err := call(t, l, "", units("0.1"), units("0.1")); err != nil {
			t.Fatalf("after the store came back: %v", err)
		}
		l.Close()
		// The next refill tells the store what was spent.
		c.add(cost.FleetRefresh)
		if _, err := call(t, l, "", 0, 0); err != nil {
			t.Fatal(err)
		}
		l.Close()
		_, spent := store.totals("all", "", noon.Add(-12*time.Hour))
		want := units("0.4")
		if closed {
			want = units("0.1")
		}
		if spent != want || len(r.of(cost.EventStoreRecovered)) != 1 {
			t.Fatalf("closed %v: the store heard of %s, want %s; events %+v", closed, spent, want, r.all)
		}
	}
}

// A store's answer that no store could give is not believed: nothing is granted by it.
func TestFleet_NonsenseFromTheStoreIsNotBelieved(t *testing.T) {
	store := newMemStore()
	store.lie.Store(true)
	c, r := &clock{t: noon}, &recorder{}
	l := newLedger(t, c, r, cost.LedgerOptions{Store: store, FailClosed: true}, cost.Budget{Name: "all", Window: cost.Day, Limit: units("1")})
	defer l.Close()
	_, err := call(t, l, "", units("0.1"), 0)
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Code != cost.CodeStoreUnavailable {
		t.Fatalf("got %v", err)
	}
	if e := r.of(cost.EventStoreFailed); len(e) != 1 || e[0].Err == nil {
		t.Fatalf("events %+v", r.all)
	}
}

func TestMicro_RoundsUpAndBoundsWhatComesBack(t *testing.T) {
	if cost.Micro(1) != 1 || cost.Micro(1000) != 1 || cost.Micro(1001) != 2 || cost.Micro(-5) != 0 {
		t.Fatal("Micro")
	}
	if cost.FromMicro(-1) != 0 || cost.FromMicro(7) != 7000 || cost.FromMicro(1<<62) != cost.MaxStoredMoney {
		t.Fatal("FromMicro")
	}
}

// Failing open while the store is down, an instance still refuses past the limit with what it
// knows the window spent: the fleet's spend as it last heard and its own calls since. It lets
// through what fits, never without bound.
func TestFleet_FailingOpenStillRefusesPastWhatTheInstanceSeesSpent(t *testing.T) {
	store := newMemStore()
	c, r := &clock{t: noon}, &recorder{}
	b := cost.Budget{Name: "all", Window: cost.Day, Limit: units("1")}
	l := newLedger(t, c, r, cost.LedgerOptions{Store: store}, b)
	defer l.Close()
	// Another instance spent $0.40 of the window; this one hears of it with its first lease.
	if _, err := store.LeaseSpend(context.Background(), cost.SpendRequest{Budget: "all", Start: noon.Add(-12 * time.Hour),
		End: noon.Add(12 * time.Hour), Ceiling: units("1"), Spent: units("0.4")}); err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, l, "", units("0.05"), units("0.05")); err != nil {
		t.Fatal(err)
	}
	l.Close()
	store.fail.Store(true)
	c.add(cost.FleetRefresh) // the totals are old: the next call asks the store, which fails
	var passed int
	var refused *providers.Error
	for range 50 {
		tk, err := l.Admit(context.Background(), cost.Call{Estimate: func(*cost.Downgrade) providers.Money { return units("0.5") }})
		if err != nil {
			if !errors.As(err, &refused) {
				t.Fatal(err)
			}
			continue
		}
		passed++
		tk.Settle(units("0.5"), units("0.5"))
		l.Close()
	}
	if len(r.of(cost.EventStoreFailed)) != 1 {
		t.Fatalf("events %+v", r.all)
	}
	// Spent as the instance knows it: $0.45 and whatever its lease still held, granted by the
	// store before it went down. $0.50 calls fit once at most past the grant.
	s, _ := l.Spend("all", "")
	if refused == nil || refused.Kind != providers.KindBudgetExhausted || refused.Code != "" || s.Spent > units("1") || passed > 1 {
		t.Fatalf("%d of 50 calls of $0.50 passed; spent %s; refusal %v", passed, s.Spent, refused)
	}
}

// A call that outlives its window and is the first of its key to end in the next one opens
// that window and is charged to it — and told to the store in that window.
func TestFleet_ACallThatOutlivesItsWindowIsToldToTheStoreInTheNext(t *testing.T) {
	store := newMemStore()
	c, r := &clock{t: time.Date(2025, 3, 14, 12, 0, 59, 0, time.UTC)}, &recorder{}
	l := newLedger(t, c, r, cost.LedgerOptions{Store: store}, cost.Budget{Name: "minute", Window: cost.Minute, Limit: units("1")})
	tk, err := l.Admit(context.Background(), cost.Call{Estimate: func(*cost.Downgrade) providers.Money { return units("0.1") }})
	if err != nil {
		t.Fatal(err)
	}
	c.add(2 * time.Second)
	tk.Settle(units("0.3"), units("0.3"))
	l.Close()
	next := time.Date(2025, 3, 14, 12, 1, 0, 0, time.UTC)
	if s, _ := l.Spend("minute", ""); s.Spent != units("0.3") || s.Reserved != 0 || !s.Start.Equal(next) {
		t.Fatalf("spend %+v", s)
	}
	if _, spent := store.totals("minute", "", next); spent != units("0.3") {
		t.Fatalf("the store heard of %s in the next minute", spent)
	}
}
