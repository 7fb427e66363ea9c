package cost_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
	_ "time/tzdata" // the windows' zones, on machines without a zone database

	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/providers"
)

// clock is a clock a test moves by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// recorder keeps the events of a ledger.
type recorder struct {
	mu  sync.Mutex
	all []cost.Event
}

func (r *recorder) observe(e cost.Event) { r.mu.Lock(); r.all = append(r.all, e); r.mu.Unlock() }

func (r *recorder) of(t cost.EventType) []cost.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []cost.Event
	for _, e := range r.all {
		if e.Type == t {
			out = append(out, e)
		}
	}
	return out
}

func units(s string) providers.Money {
	m, err := providers.ParseMoney(s)
	if err != nil {
		panic(err)
	}
	return m
}

func newLedger(t *testing.T, c *clock, r *recorder, o cost.LedgerOptions, budgets ...cost.Budget) *cost.Ledger {
	t.Helper()
	o.Now, o.Observer = c.now, r.observe
	l, err := cost.NewLedger(o, budgets...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// call admits a call of estimate est for tenant and settles it at actual when admitted.
func call(t *testing.T, l *cost.Ledger, tenant string, est, actual providers.Money) (*cost.Ticket, error) {
	t.Helper()
	var keys []cost.Key
	if tenant != "" {
		keys = []cost.Key{{Dimension: "tenant", Key: tenant}}
	}
	tk, err := l.Admit(context.Background(), cost.Call{Keys: keys, Estimate: func(*cost.Downgrade) providers.Money { return est }})
	if err == nil {
		tk.Settle(actual, actual)
	}
	return tk, err
}

var noon = time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC)

func tenantDaily() cost.Budget {
	return cost.Budget{Name: "tenant-daily", Per: "tenant", Window: cost.Day, Limit: units("1"),
		WarnAt: 0.5, DowngradeAt: 0.8, Downgrade: cost.Downgrade{Model: "cheap"}}
}

// The tiers, in order, each from the call after the spend reached it; the refusal before the
// call that would cross the limit, until the window ends.
func TestLedger_TiersActFromTheCallAfterTheyAreCrossed(t *testing.T) {
	c, r := &clock{t: noon}, &recorder{}
	l := newLedger(t, c, r, cost.LedgerOptions{}, tenantDaily())
	var got []cost.Action
	for range 12 {
		tk, err := call(t, l, "acme", units("0.1"), units("0.1"))
		if err != nil {
			var pe *providers.Error
			if !errors.As(err, &pe) || pe.Kind != providers.KindBudgetExhausted || pe.RetryAfter != 12*time.Hour {
				t.Fatalf("refusal %v", err)
			}
			if !strings.Contains(pe.Message, `budget "tenant-daily" of tenant "acme": 1 of 1 USD spent this day`) {
				t.Fatalf("message %q", pe.Message)
			}
			got = append(got, cost.ActionRefuse)
			continue
		}
		got = append(got, tk.Action)
	}
	w, d, a, rf := cost.ActionWarn, cost.ActionDowngrade, cost.ActionAllow, cost.ActionRefuse
	want := []cost.Action{a, a, a, a, a, w, w, w, d, d, rf, rf}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("decisions %v, want %v", got, want)
		}
	}
	if n := len(r.of(cost.EventWarn)); n != 1 {
		t.Errorf("%d warn events", n)
	}
	if e := r.of(cost.EventDowngrade); len(e) != 1 || e[0].Key != "acme" || e[0].Spent != units("0.8") || e[0].Limit != units("1") ||
		!e[0].WindowEnd.Equal(noon.Add(12*time.Hour)) {
		t.Errorf("downgrade events %+v", e)
	}
	if n := len(r.of(cost.EventExhausted)); n != 1 {
		t.Errorf("%d exhausted events, want one per window", n)
	}
	if n := len(r.of(cost.EventDecision)); n != 12 {
		t.Errorf("%d decisions, want 12", n)
	}
	// Another tenant has its own spend; the next day, acme starts again.
	if tk, err := call(t, l, "beta", units("0.1"), 0); err != nil || tk.Action != cost.ActionAllow {
		t.Fatalf("beta: %v %v", tk, err)
	}
	c.add(12 * time.Hour)
	if tk, err := call(t, l, "acme", units("0.1"), 0); err != nil || tk.Action != cost.ActionAllow {
		t.Fatalf("the next day: %v %v", tk, err)
	}
	if s, ok := l.Spend("tenant-daily", "acme"); !ok || s.Spent != 0 || !s.Start.Equal(noon.Add(12*time.Hour)) {
		t.Fatalf("spend the next day %+v", s)
	}
}

// A call whose estimate would take the spend past the limit is refused before it is sent;
// a smaller one still fits. The estimates of calls in flight count.
func TestLedger_PreflightEstimateAndCallsInFlightCount(t *testing.T) {
	c, r := &clock{t: noon}, &recorder{}
	l := newLedger(t, c, r, cost.LedgerOptions{}, cost.Budget{Name: "all", Window: cost.Month, Limit: units("1")})
	if _, err := call(t, l, "", units("0.9"), units("0.9")); err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, l, "", units("0.2"), 0); err == nil {
		t.Fatal("a call estimated to cross the limit was admitted")
	}
	if _, err := call(t, l, "", units("0.1"), units("0.05")); err != nil {
		t.Fatalf("a call that fits: %v", err)
	}
	// 0.95 spent: a call in flight holds its 0.04; the next 0.04 would cross.
	held, err := l.Admit(context.Background(), cost.Call{Estimate: func(*cost.Downgrade) providers.Money { return units("0.04") }})
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := l.Spend("all", ""); s.Spent != units("0.95") || s.Reserved != units("0.04") {
		t.Fatalf("spend %+v", s)
	}
	if _, err := call(t, l, "", units("0.02"), 0); err == nil {
		t.Fatal("the estimate in flight did not count")
	}
	held.Settle(units("0.01"), units("0.01"))
	held.Settle(units("5"), units("5")) // only the first settle counts
	if s, _ := l.Spend("all", ""); s.Spent != units("0.96") || s.Reserved != 0 {
		t.Fatalf("spend after settling %+v", s)
	}
	var pe *providers.Error
	_, err = call(t, l, "", units("0.05"), 0)
	// The month ends on April 1st, 17 days and 12 hours after noon on March 14th.
	if !errors.As(err, &pe) || pe.RetryAfter != (17*24+12)*time.Hour {
		t.Fatalf("refusal %v", err)
	}
}

func TestLedger_KeysAreCheckedAsTheCallersInput(t *testing.T) {
	c, r := &clock{t: noon}, &recorder{}
	l := newLedger(t, c, r, cost.LedgerOptions{}, tenantDaily())
	for _, tc := range []struct {
		keys []cost.Key
		want string
	}{
		{[]cost.Key{{Dimension: "team", Key: "x"}}, `no budget is kept per "team" (budgets are kept per: tenant)`},
		{[]cost.Key{{Dimension: "tenant", Key: ""}}, "must not be empty"},
		{[]cost.Key{{Dimension: "tenant", Key: "a\nb"}}, "control character"},
		{[]cost.Key{{Dimension: "tenant", Key: strings.Repeat("k", 129)}}, "at most 128"},
		{[]cost.Key{{Dimension: "tenant", Key: "\xff"}}, "not valid UTF-8"},
		{[]cost.Key{{Dimension: "tenant", Key: "a"}, {Dimension: "tenant", Key: "b"}}, `two budget keys of "tenant"`},
		{make([]cost.Key, 9), "at most 8"},
	} {
		_, err := l.Admit(context.Background(), cost.Call{Keys: tc.keys})
		var pe *providers.Error
		if !errors.As(err, &pe) || pe.Kind != providers.KindBadRequest || !strings.Contains(pe.Message, tc.want) {
			t.Errorf("%v: %v, want bad_request %q", tc.keys, err, tc.want)
		}
	}
}

// Keys past MaxKeys are not counted (failing open) or refused (failing closed); keys whose
// window ended make room.
func TestLedger_KeysAreBounded(t *testing.T) {
	for _, closed := range []bool{false, true} {
		c, r := &clock{t: noon}, &recorder{}
		b := tenantDaily()
		b.Window = cost.Hour
		l := newLedger(t, c, r, cost.LedgerOptions{MaxKeys: 2, FailClosed: closed}, b)
		for _, k := range []string{"a", "b"} {
			if _, err := call(t, l, k, units("0.1"), units("0.1")); err != nil {
				t.Fatal(err)
			}
		}
		_, err := call(t, l, "c", units("0.1"), units("0.1"))
		var pe *providers.Error
		switch {
		case closed && (!errors.As(err, &pe) || pe.Kind != providers.KindBudgetExhausted || pe.Code != cost.CodeKeysFull || pe.RetryAfter != time.Hour):
			t.Fatalf("closed: %v", err)
		case !closed && err != nil:
			t.Fatalf("open: %v", err)
		}
		if s, _ := l.Spend(b.Name, "c"); s.Spent != 0 {
			t.Fatalf("a key past the bound was counted: %+v", s)
		}
		_, _ = call(t, l, "d", units("0.1"), 0)
		if n := len(r.of(cost.EventKeysFull)); n != 1 {
			t.Fatalf("%d keys-full events, want one per window", n)
		}
		c.add(time.Hour)
		if _, err := call(t, l, "c", units("0.1"), units("0.1")); err != nil {
			t.Fatalf("the next hour: %v", err)
		}
		if s, _ := l.Spend(b.Name, "c"); s.Spent != units("0.1") {
			t.Fatalf("the next hour, c: %+v", s)
		}
	}
}

// A key of Limits has its own limit; calls that name no key share the key "".
func TestLedger_LimitsPerKeyAndTheUnnamedKey(t *testing.T) {
	c, r := &clock{t: noon}, &recorder{}
	b := cost.Budget{Name: "t", Per: "tenant", Window: cost.Day, Limit: units("1"), Limits: map[string]providers.Money{"big": units("10")}}
	l := newLedger(t, c, r, cost.LedgerOptions{}, b)
	if _, err := call(t, l, "big", units("5"), units("5")); err != nil {
		t.Fatalf("big: %v", err)
	}
	if _, err := call(t, l, "small", units("5"), 0); err == nil {
		t.Fatal("small took 5 of 1")
	}
	if _, err := call(t, l, "", units("0.6"), units("0.6")); err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, l, "", units("0.6"), 0); err == nil {
		t.Fatal("calls without a key do not share a spend")
	}
}

// In shadow mode the decisions are the enforce mode's, call for call, and nothing is refused.
func TestLedger_ShadowDecidesAsEnforceWithoutRefusing(t *testing.T) {
	run := func(shadow bool) []cost.Action {
		c, r := &clock{t: noon}, &recorder{}
		b := tenantDaily()
		b.Shadow = shadow
		l := newLedger(t, c, r, cost.LedgerOptions{}, b)
		var out []cost.Action
		for i := range 14 {
			tk, err := call(t, l, "acme", units("0.1"), units("0.1"))
			switch {
			case err != nil && shadow:
				t.Fatalf("shadow refused call %d: %v", i, err)
			case err != nil:
				out = append(out, cost.ActionRefuse)
			case shadow:
				if tk.Action != cost.ActionAllow || tk.Downgrade != nil {
					t.Fatalf("shadow applied %v", tk.Action)
				}
				out = append(out, tk.WouldBe)
			default:
				out = append(out, tk.Action)
			}
		}
		ds := r.of(cost.EventDecision)
		if len(ds) != 14 || ds[0].Shadow != shadow {
			t.Fatalf("decision events %+v", ds)
		}
		return out
	}
	enforced, shadowed := run(false), run(true)
	for i := range enforced {
		if enforced[i] != shadowed[i] {
			t.Fatalf("enforce %v, shadow %v", enforced, shadowed)
		}
	}
}

func TestBudget_ValidateNamesEachFieldOutOfRange(t *testing.T) {
	_, err := cost.NewLedger(cost.LedgerOptions{MaxKeys: -1, Currency: "us"},
		cost.Budget{Name: "bad name", Per: "a b", Window: 9, Limit: 0, WarnAt: -1, DowngradeAt: 11, RefuseAt: 0.5,
			Limits: map[string]providers.Money{"k": -1, "": 1}},
		cost.Budget{Name: "d", Window: cost.Day, Limit: 1, DowngradeAt: 0.5},
		cost.Budget{Name: "e", Window: cost.Day, Limit: 1, Downgrade: cost.Downgrade{Model: "m"}},
		cost.Budget{Name: "e", Window: cost.Day, Limit: cost.MaxLimit + 1},
	)
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"MaxKeys -1", `currency "us"`, `budget "bad name": Name`, "Per", "Window 9", "Limit 0: must be above 0",
		"WarnAt -1", "DowngradeAt 11", "Limits[k]", "Limits key", `"d": Downgrade (none): is required with DowngradeAt`,
		`"e": DowngradeAt 0: is required with a Downgrade`, "at most 1000000000"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if _, err := cost.NewLedger(cost.LedgerOptions{}, tenantDaily(), tenantDaily()); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Fatalf("a budget twice: %v", err)
	}
}

func TestWindow_BoundsFollowTheZone(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	kolkata, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2025, 3, 9, 15, 47, 30, 5, time.UTC) // 11:47 in New York on the day DST starts
	for _, tc := range []struct {
		w          cost.Window
		loc        *time.Location
		start, end time.Time
	}{
		{cost.Minute, nil, time.Date(2025, 3, 9, 15, 47, 0, 0, time.UTC), time.Date(2025, 3, 9, 15, 48, 0, 0, time.UTC)},
		{cost.Hour, nil, time.Date(2025, 3, 9, 15, 0, 0, 0, time.UTC), time.Date(2025, 3, 9, 16, 0, 0, 0, time.UTC)},
		{cost.Hour, kolkata, time.Date(2025, 3, 9, 15, 30, 0, 0, time.UTC), time.Date(2025, 3, 9, 16, 30, 0, 0, time.UTC)},
		{cost.Day, nil, time.Date(2025, 3, 9, 0, 0, 0, 0, time.UTC), time.Date(2025, 3, 10, 0, 0, 0, 0, time.UTC)},
		// The day DST starts in New York is 23 hours long: midnight EST to midnight EDT.
		{cost.Day, ny, time.Date(2025, 3, 9, 5, 0, 0, 0, time.UTC), time.Date(2025, 3, 10, 4, 0, 0, 0, time.UTC)},
		{cost.Month, nil, time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2025, 4, 1, 0, 0, 0, 0, time.UTC)},
		{cost.Month, ny, time.Date(2025, 3, 1, 5, 0, 0, 0, time.UTC), time.Date(2025, 4, 1, 4, 0, 0, 0, time.UTC)},
	} {
		s, e := tc.w.Bounds(at, tc.loc)
		if !s.Equal(tc.start) || !e.Equal(tc.end) {
			t.Errorf("%v in %v: [%v, %v), want [%v, %v)", tc.w, tc.loc, s.UTC(), e.UTC(), tc.start, tc.end)
		}
	}
	// December rolls into the next year.
	if _, e := cost.Month.Bounds(time.Date(2025, 12, 31, 23, 0, 0, 0, time.UTC), nil); !e.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("December ends %v", e)
	}
	for _, s := range []string{"minute", "HOUR", " day ", "Month"} {
		if _, err := cost.ParseWindow(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	if _, err := cost.ParseWindow("week"); err == nil {
		t.Error("week accepted")
	}
}

// A call counted by several budgets is refused by the one it would cross; what the others held
// for it is given back.
func TestLedger_ARefusalByOneBudgetReleasesTheOthers(t *testing.T) {
	c, r := &clock{t: noon}, &recorder{}
	l := newLedger(t, c, r, cost.LedgerOptions{},
		cost.Budget{Name: "all", Window: cost.Month, Limit: units("100")},
		cost.Budget{Name: "tenant", Per: "tenant", Window: cost.Day, Limit: units("1")})
	if _, err := call(t, l, "acme", units("0.9"), units("0.9")); err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, l, "acme", units("0.5"), 0); err == nil {
		t.Fatal("admitted past the tenant's limit")
	}
	all, _ := l.Spend("all", "")
	if all.Spent != units("0.9") || all.Reserved != 0 {
		t.Fatalf("the other budget kept what it held for the refused call: %+v", all)
	}
	if d := r.of(cost.EventDecision); len(d) != 2 || d[1].Action != cost.ActionRefuse || d[1].Budget != "tenant" {
		t.Fatalf("decisions %+v", d)
	}
}

// A call in flight when its window ends is charged to the window it ends in; what it held in
// the one that ended is not taken from the new one.
func TestLedger_ACallThatOutlivesItsWindowIsChargedToTheNext(t *testing.T) {
	c, r := &clock{t: time.Date(2025, 3, 14, 23, 59, 59, 0, time.UTC)}, &recorder{}
	l := newLedger(t, c, r, cost.LedgerOptions{}, cost.Budget{Name: "day", Window: cost.Day, Limit: units("1")})
	tk, err := l.Admit(context.Background(), cost.Call{Estimate: func(*cost.Downgrade) providers.Money { return units("0.5") }})
	if err != nil {
		t.Fatal(err)
	}
	c.add(2 * time.Second)
	if _, err := call(t, l, "", units("0.4"), 0); err != nil { // opens the new day's window
		t.Fatal(err)
	}
	tk.Settle(units("0.3"), units("0.3"))
	if s, _ := l.Spend("day", ""); s.Spent != units("0.3") || s.Reserved != 0 || !s.Start.Equal(time.Date(2025, 3, 15, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("spend %+v", s)
	}
}

// A call in flight when its window ends, the first of its key to end in the next window, opens
// that window and is charged to it: its cost is counted, not lost with the window that ended.
func TestLedger_ACallThatOutlivesItsWindowOpensTheNext(t *testing.T) {
	c, r := &clock{t: time.Date(2025, 3, 14, 12, 0, 59, 0, time.UTC)}, &recorder{}
	l := newLedger(t, c, r, cost.LedgerOptions{}, cost.Budget{Name: "minute", Window: cost.Minute, Limit: units("1"), WarnAt: 0.5})
	tk, err := l.Admit(context.Background(), cost.Call{Estimate: func(*cost.Downgrade) providers.Money { return units("0.1") }})
	if err != nil {
		t.Fatal(err)
	}
	c.add(2 * time.Second)
	tk.Settle(units("0.6"), units("0.6"))
	if s, _ := l.Spend("minute", ""); s.Spent != units("0.6") || s.Reserved != 0 || !s.Start.Equal(time.Date(2025, 3, 14, 12, 1, 0, 0, time.UTC)) {
		t.Fatalf("spend %+v", s)
	}
	if w := r.of(cost.EventWarn); len(w) != 1 || w[0].Spent != units("0.6") {
		t.Fatalf("events %+v", r.all)
	}
}
