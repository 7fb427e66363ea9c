package cost_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/providers"
)

// keysOf returns the keys of a budget's snapshot, in order, with their spend and tier.
func keysOf(b cost.BudgetSnapshot) string {
	s := ""
	for i, k := range b.Keys {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%s=%s/%s:%s", k.Key, k.Spent, k.Limit, k.Tier)
		if k.Refused {
			s += "!"
		}
	}
	return s
}

// A snapshot says, per budget, what each key spent against its limit, the tier its next call
// meets — refuse once a call of any cost would be refused, with the keys that had a call
// refused marked — most-spent first, and when the window ends.
func TestSnapshot_ShowsSpendTiersAndTheWindowsEnd(t *testing.T) {
	c, r := &clock{t: noon}, &recorder{}
	b := tenantDaily() // warn at 0.5, downgrade at 0.8, refuse at 1, of $1
	b.Limits = map[string]providers.Money{"big": units("10")}
	l := newLedger(t, c, r, cost.LedgerOptions{}, b)
	spend := func(key string, amounts ...string) {
		t.Helper()
		for _, a := range amounts {
			if _, err := call(t, l, key, units(a), units(a)); err != nil {
				t.Fatalf("%s %s: %v", key, a, err)
			}
		}
	}
	spend("initech", "0.1")
	spend("globex", "0.6")
	spend("acme", "0.5", "0.4") // downgrade
	spend("hooli", "0.9")
	if _, err := call(t, l, "hooli", units("0.2"), units("0.2")); err == nil { // would cross: refused
		t.Fatal("hooli's call past the limit was served")
	}
	spend("umbrella", "0.6", "0.4") // exactly the limit: any call is refused
	spend("big", "6")               // 0.6 of its own limit
	// A call in flight holds its estimate: with it, pied reaches the limit.
	tk, err := l.Admit(context.Background(), cost.Call{Keys: []cost.Key{{Dimension: "tenant", Key: "pied"}},
		Estimate: func(*cost.Downgrade) providers.Money { return units("0.7") }})
	if err != nil {
		t.Fatal(err)
	}
	spend("pied", "0.3")

	s := l.Snapshot(4)
	if s.Currency != "USD" || !s.Time.Equal(noon) || s.Store != nil || s.FailClosed || len(s.Budgets) != 1 {
		t.Fatalf("snapshot %+v", s)
	}
	got := s.Budgets[0]
	// big spent as large a share of its own limit as globex: the first key by name comes first.
	if want := "umbrella=1/1:refuse acme=0.9/1:downgrade hooli=0.9/1:downgrade! big=6/10:warn"; keysOf(got) != want {
		t.Fatalf("keys\n got %s\nwant %s", keysOf(got), want)
	}
	// pied spent 0.3 with 0.7 in flight: refuse, though its share ranks it below the top 4.
	if got.Counted != 7 || got.More() != 3 || got.Refused != 1 || got.Full || got.Fleet || got.Shadow ||
		got.AtTier != [4]int{1, 2, 2, 2} {
		t.Fatalf("counts: %d counted, %d more, %d refused, tiers %v, full %v", got.Counted, got.More(), got.Refused, got.AtTier, got.Full)
	}
	if !got.Start.Equal(noon.Add(-12*time.Hour)) || !got.End.Equal(noon.Add(12*time.Hour)) || got.Window != cost.Day ||
		got.Per != "tenant" || got.Limit != units("1") || got.WarnAt != 0.5 || got.DowngradeAt != 0.8 || got.RefuseAt != 1 {
		t.Fatalf("budget %+v", got)
	}
	if k := got.Keys[1]; k.Share() != 0.9 || k.Reserved != 0 || !k.Heard.IsZero() {
		t.Fatalf("acme %+v share %v", k, k.Share())
	}
	all := l.Snapshot(cost.MaxSnapshotKeys + 1).Budgets[0]
	if want := "umbrella=1/1:refuse acme=0.9/1:downgrade hooli=0.9/1:downgrade! big=6/10:warn globex=0.6/1:warn pied=0.3/1:refuse initech=0.1/1:allow"; keysOf(all) != want {
		t.Fatalf("every key\n got %s\nwant %s", keysOf(all), want)
	}
	if k := all.Keys[5]; k.Reserved != units("0.7") {
		t.Fatalf("pied's call in flight: %+v", k)
	}
	tk.Settle(units("0.1"), units("0.1"))
	if none := l.Snapshot(-1).Budgets[0]; len(none.Keys) != 0 || none.Counted != 7 || none.More() != 7 {
		t.Fatalf("no keys asked: %+v", none)
	}
	// The next day nobody has spent anything.
	c.add(12 * time.Hour)
	if next := l.Snapshot(10).Budgets[0]; len(next.Keys) != 0 || next.Counted != 0 || next.AtTier != [4]int{} ||
		!next.End.Equal(noon.Add(36*time.Hour)) {
		t.Fatalf("the next day: %+v", next)
	}
}

// A snapshot lists at most the top keys asked for, and at most MaxSnapshotKeys, of any number
// kept: the right ones, whatever order the calls came in, and counts the rest.
func TestSnapshot_ListsTheTopKeysOfManyAndCountsTheRest(t *testing.T) {
	c, r := &clock{t: noon}, &recorder{}
	b := cost.Budget{Name: "t", Per: "tenant", Window: cost.Day, Limit: units("1"), NeverRefuse: true}
	l := newLedger(t, c, r, cost.LedgerOptions{}, b)
	const n = 2*cost.SnapshotChunk + 500
	// Key i spends i micro-units, in a shuffled order: the top are the last keys.
	for j := range n {
		i := (j * 7919) % n // 7919 is prime, and n is not a multiple of it
		if _, err := call(t, l, fmt.Sprintf("k%05d", i), 0, providers.Money(i+1)*1000); err != nil {
			t.Fatal(err)
		}
	}
	s := l.Snapshot(10).Budgets[0]
	if s.Counted != n || s.More() != n-10 || len(s.Keys) != 10 || s.AtTier[cost.ActionAllow] != n || s.RefuseAt != 0 {
		t.Fatalf("%d counted, %d more, %d listed, tiers %v", s.Counted, s.More(), len(s.Keys), s.AtTier)
	}
	for i, k := range s.Keys {
		if want := fmt.Sprintf("k%05d", n-1-i); k.Key != want {
			t.Fatalf("key %d is %s, want %s: %s", i, k.Key, want, keysOf(s))
		}
	}
	if s := l.Snapshot(1 << 20).Budgets[0]; len(s.Keys) != cost.MaxSnapshotKeys || s.Keys[99].Key != fmt.Sprintf("k%05d", n-100) {
		t.Fatalf("%d keys listed when asked for a million, want %d", len(s.Keys), cost.MaxSnapshotKeys)
	}
}

// Reading a budget of many keys gives its lock back between chunks: calls go on in between
// — here one is made while the snapshot is under way, and is counted by it.
func TestSnapshot_GivesTheLockBackBetweenChunks(t *testing.T) {
	c, r := &clock{t: noon}, &recorder{}
	l := newLedger(t, c, r, cost.LedgerOptions{}, tenantDaily())
	const n = 3 * cost.SnapshotChunk
	for i := range n {
		if _, err := call(t, l, fmt.Sprint("k", i), 0, units("0.001")); err != nil {
			t.Fatal(err)
		}
	}
	pauses := 0
	cost.SetBetweenChunks(l, func() {
		pauses++
		if !cost.LockFree(l, "tenant-daily") {
			t.Error("the snapshot holds the budget's lock between chunks")
			return // a call would wait for it forever
		}
		if pauses == 1 {
			if _, err := call(t, l, "late", units("0.6"), units("0.6")); err != nil {
				t.Error(err)
			}
		}
	})
	s := l.Snapshot(1).Budgets[0]
	if pauses < 3 || s.Counted != n+1 || len(s.Keys) != 1 || s.Keys[0].Key != "late" || s.Keys[0].Tier != cost.ActionWarn {
		t.Fatalf("%d pauses, %d counted, keys %s", pauses, s.Counted, keysOf(s))
	}
}

// A budget in shadow mode reports what it would do: its tiers and would-be refusals, and
// the spend it would have seen, while the calls go on.
func TestSnapshot_ShadowBudget(t *testing.T) {
	c, r := &clock{t: noon}, &recorder{}
	b := tenantDaily()
	b.Shadow = true
	l := newLedger(t, c, r, cost.LedgerOptions{}, b)
	for range 9 {
		if _, err := call(t, l, "acme", units("0.1"), units("0.1")); err != nil {
			t.Fatal(err)
		}
	}
	// Would cross the limit: served, and charged nothing, as it would have been refused.
	if _, err := call(t, l, "acme", units("0.2"), units("0.2")); err != nil {
		t.Fatal(err)
	}
	s := l.Snapshot(10).Budgets[0]
	if !s.Shadow || keysOf(s) != "acme=0.9/1:downgrade!" || s.Refused != 1 || s.AtTier[cost.ActionDowngrade] != 1 {
		t.Fatalf("shadow budget %+v: %s", s, keysOf(s))
	}
}

// A budget with no room for a new key says so for the rest of its window.
func TestSnapshot_AFullBudget(t *testing.T) {
	c, r := &clock{t: noon}, &recorder{}
	l := newLedger(t, c, r, cost.LedgerOptions{MaxKeys: 2, FailClosed: true}, tenantDaily())
	for _, k := range []string{"a", "b"} {
		if _, err := call(t, l, k, units("0.1"), units("0.1")); err != nil {
			t.Fatal(err)
		}
	}
	if s := l.Snapshot(10); s.Budgets[0].Full || !s.FailClosed {
		t.Fatalf("two keys of two: %+v", s)
	}
	if _, err := call(t, l, "c", units("0.1"), units("0.1")); err == nil {
		t.Fatal("a third key was served by a full budget failing closed")
	}
	if s := l.Snapshot(10).Budgets[0]; !s.Full || s.Counted != 2 {
		t.Fatalf("full: %+v", s)
	}
	// The next day the keys of the day before make room, and are forgotten.
	c.add(12 * time.Hour)
	if s := l.Snapshot(10).Budgets[0]; s.Full || s.Counted != 0 {
		t.Fatalf("the next day: %+v", s)
	}
	for _, k := range []string{"c", "a"} {
		if _, err := call(t, l, k, units("0.1"), units("0.1")); err != nil {
			t.Fatal(err)
		}
	}
	if err := cost.CheckOrder(l, "tenant-daily"); err != nil {
		t.Fatal(err)
	}
	if s := l.Snapshot(10).Budgets[0]; s.Full || s.Counted != 2 || keysOf(s) != "a=0.1/1:allow c=0.1/1:allow" {
		t.Fatalf("the next day, two new keys: %+v", s)
	}
}

// A fleet's budget shows the fleet's spend as this instance last heard it, and when; a store
// that stopped answering shows down until it answers again; a key the store has no room left
// for is at the refuse tier, as its next call would be refused without asking.
func TestSnapshot_FleetAndItsStore(t *testing.T) {
	store := newMemStore()
	c, r := &clock{t: noon}, &recorder{}
	b := cost.Budget{Name: "all", Per: "tenant", Window: cost.Day, Limit: units("1")}
	l := newLedger(t, c, r, cost.LedgerOptions{Store: store}, b)
	defer l.Close()
	start, end := noon.Add(-12*time.Hour), noon.Add(12*time.Hour)
	// Another instance spent $0.4 of acme's and took all but $0.05 of globex's.
	for key, want := range map[string]string{"acme": "0.4", "globex": "0.95"} {
		if _, err := store.LeaseSpend(context.Background(), cost.SpendRequest{Budget: "all", Key: key, Start: start, End: end,
			Ceiling: units("1"), Want: units(want), Spent: units("0.4")}); err != nil {
			t.Fatal(err)
		}
	}
	for _, key := range []string{"acme", "globex"} {
		if _, err := call(t, l, key, units("0.01"), units("0.01")); err != nil {
			t.Fatal(err)
		}
		l.Close()
	}
	c.add(time.Second)
	// globex's lease: $0.05 granted, $0.01 spent; a call of $0.05 needs more, which the store
	// has not: it is refused, and the key is then at the refuse tier.
	if _, err := call(t, l, "globex", units("0.05"), units("0.05")); err == nil {
		t.Fatal("a call the store had no room for was served")
	}
	l.Close()
	if _, err := call(t, l, "globex", units("0.04"), units("0.04")); err != nil {
		t.Fatal(err)
	}
	s := l.Snapshot(10)
	if s.Store == nil || s.Store.Down || len(s.Budgets) != 1 || !s.Budgets[0].Fleet {
		t.Fatalf("snapshot %+v", s)
	}
	got := s.Budgets[0]
	if keysOf(got) != "globex=0.45/1:refuse! acme=0.41/1:allow" {
		t.Fatalf("keys %s", keysOf(got))
	}
	if !got.Keys[1].Heard.Equal(noon) {
		t.Fatalf("acme heard at %v, want %v", got.Keys[1].Heard, noon)
	}
	store.fail.Store(true)
	c.add(cost.FleetRefresh)
	if _, err := call(t, l, "acme", units("0.01"), units("0.01")); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if s := l.Snapshot(10); s.Store == nil || !s.Store.Down || !s.Store.DownAt.Equal(c.now()) {
		t.Fatalf("store down: %+v", s.Store)
	}
	store.fail.Store(false)
	c.add(time.Second)
	if _, err := call(t, l, "acme", units("0.01"), units("0.01")); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if s := l.Snapshot(10); s.Store.Down {
		t.Fatalf("store back: %+v", s.Store)
	}
}

// BenchmarkSnapshot reads a budget of 100 000 keys (DefaultMaxKeys) for its top 10, as the
// health check and the status page do: the time of one reading, of which each hold of the
// lock is one chunk's share (ns/chunk).
func BenchmarkSnapshot(b *testing.B) {
	c, r := &clock{t: noon}, &recorder{}
	l, err := cost.NewLedger(cost.LedgerOptions{Now: c.now, Observer: r.observe}, tenantDaily())
	if err != nil {
		b.Fatal(err)
	}
	const n = cost.DefaultMaxKeys
	for i := range n {
		tk, err := l.Admit(context.Background(), cost.Call{Keys: []cost.Key{{Dimension: "tenant", Key: fmt.Sprint("tenant-", i)}}})
		if err != nil {
			b.Fatal(err)
		}
		tk.Settle(providers.Money(i)*1000, providers.Money(i)*1000)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if s := l.Snapshot(10); s.Budgets[0].Counted != n {
			b.Fatal(s.Budgets[0].Counted)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64((n+cost.SnapshotChunk-1)/cost.SnapshotChunk), "ns/chunk")
}
