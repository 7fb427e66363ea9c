package cost_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/providers"
)

// refused reports whether err is the limit's own refusal, with the window's end as its
// RetryAfter.
func refused(err error, end time.Time, now time.Time) bool {
	var pe *providers.Error
	return errors.As(err, &pe) && pe.Kind == providers.KindBudgetExhausted && pe.Code == "" && pe.RetryAfter == end.Sub(now)
}

// Once the store granted an instance less than it asked — its room all granted — the instance
// spends what it holds without asking the store at each call, and refuses the calls it cannot
// cover without asking either, until FleetRecheck has passed: then one call asks again, and is
// served if the store has room again. The refusals stay the limit's own, with the window's end
// as their RetryAfter.
func TestFleet_ARefusalIsRememberedUntilTheRecheck(t *testing.T) {
	store := newMemStore()
	c, r := &clock{t: noon}, &recorder{}
	b := cost.Budget{Name: "all", Window: cost.Day, Limit: units("1")}
	l := newLedger(t, c, r, cost.LedgerOptions{Store: store}, b)
	defer l.Close()
	start, end := noon.Add(-12*time.Hour), noon.Add(12*time.Hour)
	// The other instances took all but $0.03 of the room.
	if _, err := store.LeaseSpend(context.Background(), cost.SpendRequest{Budget: "all", Start: start, End: end,
		Ceiling: units("1"), Want: units("0.97")}); err != nil {
		t.Fatal(err)
	}
	store.calls.Store(0)
	// The first call asks for a slice ($0.0625), is granted $0.03, and is served from it.
	if _, err := call(t, l, "", units("0.01"), units("0.01")); err != nil {
		t.Fatal(err)
	}
	l.Close()
	// $0.02 is left in the lease, below a quarter of a slice: small calls are served from it,
	// and none asks the store for more it does not have.
	for range 15 {
		if _, err := call(t, l, "", units("0.001"), units("0.001")); err != nil {
			t.Fatal(err)
		}
		l.Close()
	}
	if n := store.calls.Load(); n != 1 {
		t.Fatalf("%d requests to the store for 16 calls served from a lease it could not refill, want 1", n)
	}
	// $0.005 is left: a call of $0.01 is refused, a thousand times, without a request.
	for range 1000 {
		if _, err := call(t, l, "", units("0.01"), units("0.01")); !refused(err, end, c.now()) {
			t.Fatalf("a call the lease cannot cover: %v", err)
		}
	}
	c.add(cost.FleetRecheck - time.Millisecond)
	if _, err := call(t, l, "", units("0.01"), units("0.01")); !refused(err, end, c.now()) {
		t.Fatalf("just before the recheck: %v", err)
	}
	if n := store.calls.Load(); n != 1 {
		t.Fatalf("%d requests to the store after 1000 refusals within FleetRecheck, want 1", n)
	}
	// After FleetRecheck the next call asks (once), and is refused while the store has no room;
	// the refusal is remembered again.
	c.add(time.Millisecond)
	for range 10 {
		if _, err := call(t, l, "", units("0.01"), units("0.01")); !refused(err, end, c.now()) {
			t.Fatalf("after the recheck, no room: %v", err)
		}
	}
	if n := store.calls.Load(); n != 2 {
		t.Fatalf("%d requests to the store, want 2: one recheck", n)
	}
	// The store has room again: the call after the next recheck is served.
	store.extra.Store(int64(units("0.5")))
	c.add(cost.FleetRecheck)
	if _, err := call(t, l, "", units("0.01"), units("0.01")); err != nil {
		t.Fatalf("after the recheck, with room again: %v", err)
	}
	if n := len(r.of(cost.EventExhausted)); n != 1 {
		t.Fatalf("%d budget_exhausted events in one window, want 1", n)
	}
}

// A store that loses the window in the middle of it (evicted, flushed) is seeded again from
// the totals the instances heard: the tenant is served on, and the fleet spends no more than
// the limit and what was granted after the first instance to ask had last heard — one slice,
// here, since each of the two instances asked just before the loss.
func TestFleet_ALostWindowIsSeededFromWhatTheInstancesHeard(t *testing.T) {
	store := newMemStore()
	c := &clock{t: noon}
	b := tenantDaily()
	a := newLedger(t, c, &recorder{}, cost.LedgerOptions{Store: store}, b)
	other := newLedger(t, c, &recorder{}, cost.LedgerOptions{Store: store}, b)
	defer a.Close()
	defer other.Close()
	est := units("0.01") // slices of 1/16
	var spent providers.Money
	spend := func(l *cost.Ledger) error {
		_, err := call(t, l, "acme", est, est)
		if err == nil {
			spent += est
		}
		l.Close()
		return err
	}
	for i := range 60 {
		if err := spend([]*cost.Ledger{a, other}[i%2]); err != nil {
			t.Fatal(err)
		}
	}
	c.add(cost.FleetRefresh) // each instance's next call asks, and hears the totals
	for _, l := range []*cost.Ledger{a, other} {
		if err := spend(l); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := a.Spend(b.Name, "acme")
	store.lose()
	for done := [2]bool{}; !done[0] || !done[1]; {
		for i, l := range []*cost.Ledger{a, other} {
			if err := spend(l); err != nil {
				done[i] = true
			}
		}
		if spent > 3*units("1") {
			break
		}
	}
	slice := units("1") / 16
	if spent > units("1")+slice || spent < units("1")-2*est {
		t.Fatalf("the fleet spent %s of a limit of 1 (the bound after the loss: 1 + one slice, %s)", spent, slice)
	}
	t.Logf("the fleet spent %s of 1 (at most 1 + %s)", spent, slice)
	if after, _ := a.Spend(b.Name, "acme"); after.Spent < before.Spent {
		t.Fatalf("the spend as the instance sees it went from %s to %s", before.Spent, after.Spent)
	}
	granted, _ := store.totals(b.Name, "acme", noon.Add(-12*time.Hour))
	if granted != units("1") {
		t.Fatalf("the store holds %s granted, want the ceiling", granted)
	}
}
