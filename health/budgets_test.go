package health

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadyllm/steady/resilience"
)

// budgetSet is a BudgetSet whose readings the test sets.
type budgetSet struct {
	readings atomic.Pointer[[]BudgetReading]
	asked    atomic.Int64 // the top last asked for
}

func (s *budgetSet) BudgetReadings(top int) []BudgetReading {
	s.asked.Store(int64(top))
	if p := s.readings.Load(); p != nil {
		return *p
	}
	return nil
}

func (s *budgetSet) set(r ...BudgetReading) { s.readings.Store(&r) }

// circuitsAndBudgets is a circuit set that keeps budgets, as the steady client does.
type circuitsAndBudgets struct {
	*budgetSet
	p *resilience.Pipeline
}

func (c circuitsAndBudgets) Circuits() map[string]*resilience.Pipeline {
	return map[string]*resilience.Pipeline{"openai": c.p}
}

var midnight = time.Date(2025, 6, 2, 0, 0, 0, 0, time.UTC)

// tenantsDaily is a budget of three tenants: one past the warn tier, one refused a call.
func tenantsDaily() BudgetReading {
	return BudgetReading{Name: "tenants-daily", Per: "tenant", Window: "day", WindowEnd: midnight, EndsIn: 12 * time.Hour, Currency: "USD",
		WarnAt: 0.5, DowngradeAt: 0.8, RefuseAt: 1,
		Keys: []BudgetKeyReading{
			{Key: "acme", Spent: "0.6", Limit: "1", Share: 0.6, Tier: "warn"},
			{Key: "globex", Spent: "0.2", Limit: "1", Share: 0.2, Tier: "allow", Refused: true},
		},
		Counted: 3, AtWarn: 1, Refused: 1}
}

// Budgets are checks of their own, "<budget>:budget": pass below the warn tier, warn past it
// or once a key was refused, with the keys nearest their limit; a budget never fails
// readiness, and a key's tier leaves the overall status to the circuits. A budget in shadow
// mode shows what it would do and passes.
func TestChecker_BudgetsAreChecksOfTheirOwn(t *testing.T) {
	p := newPipelineT(t)
	set := &budgetSet{}
	quiet := BudgetReading{Name: "all-monthly", Window: "month", WindowEnd: midnight.AddDate(0, 0, 29), Currency: "USD", RefuseAt: 1,
		Keys: []BudgetKeyReading{{Key: "", Spent: "12.5", Limit: "100", Share: 0.125, Tier: "allow"}}, Counted: 1}
	shadow := tenantsDaily()
	shadow.Name, shadow.Shadow, shadow.AtWarn, shadow.AtRefuse = "tenants-shadow", true, 0, 1
	shadow.Keys[0].Tier = "refuse"
	set.set(tenantsDaily(), quiet, shadow)
	c := NewChecker(WithNow(fixedNow))
	c.AddSet(circuitsAndBudgets{budgetSet: set, p: p})

	rec, doc := serve(t, c.Handler(), http.MethodGet)
	if rec.Code != http.StatusOK || doc["status"] != "pass" || set.asked.Load() != BudgetKeys {
		t.Fatalf("%d %v, %d keys asked\n%s", rec.Code, doc["status"], set.asked.Load(), rec.Body)
	}
	tenants := checkEntry(t, doc, "tenants-daily:budget")
	for k, want := range map[string]any{"componentType": "budget", "observedValue": "warn", "status": "warn", "mode": "enforce",
		"per": "tenant", "window": "day", "windowEnd": "2025-06-02T00:00:00Z", "endsIn": "12h0m0s", "currency": "USD", "moreKeys": 1.0,
		"keysRefused": 1.0, "time": "2025-06-01T12:00:00Z"} {
		if tenants[k] != want {
			t.Errorf("tenants-daily %s = %v, want %v", k, tenants[k], want)
		}
	}
	keys := tenants["keys"].([]any)
	if len(keys) != 2 {
		t.Fatalf("keys %v", keys)
	}
	acme, globex := keys[0].(map[string]any), keys[1].(map[string]any)
	if acme["key"] != "acme" || acme["spent"] != "0.6" || acme["limit"] != "1" || acme["share"] != "0.60" || acme["tier"] != "warn" ||
		acme["refused"] != nil || globex["refused"] != true || globex["tier"] != "allow" {
		t.Fatalf("keys %v", keys)
	}
	if at := tenants["keysAtTier"].(map[string]any); len(at) != 1 || at["warn"] != 1.0 {
		t.Fatalf("keysAtTier %v", at)
	}
	all := checkEntry(t, doc, "all-monthly:budget")
	if all["status"] != "pass" || all["observedValue"] != "allow" || all["per"] != nil || all["keysAtTier"] != nil {
		t.Fatalf("all-monthly %v", all)
	}
	sh := checkEntry(t, doc, "tenants-shadow:budget")
	if sh["status"] != "pass" || sh["observedValue"] != "refuse" || sh["mode"] != "shadow" {
		t.Fatalf("the shadow budget %v", sh)
	}
	if c.Check(context.Background()) != nil {
		t.Fatal("a budget failed the check")
	}
	r := c.Report()
	if len(r.Budgets) != 3 || r.Budgets[0].Reading.Name != "all-monthly" || r.Budgets[1].Status != StatusWarn ||
		r.Budgets[1].Tier != "warn" || r.Budgets[2].Status != StatusPass || len(r.SharedStates) != 0 {
		t.Fatalf("report %+v", r)
	}
	// A refused key alone is a warning too.
	only := tenantsDaily()
	only.Keys, only.AtWarn = only.Keys[1:], 0
	set.set(only)
	if r := c.Report(); r.Budgets[0].Status != StatusWarn || r.Budgets[0].Tier != "allow" || r.Status != StatusPass {
		t.Fatalf("a refused key: %+v", r)
	}
	// A key at a tier beyond the keys shown counts all the same.
	hidden := quiet
	hidden.AtDowngrade = 1
	set.set(hidden)
	if r := c.Report(); r.Budgets[0].Status != StatusWarn || r.Budgets[0].Tier != "downgrade" {
		t.Fatalf("a key at downgrade beyond the top: %+v", r.Budgets)
	}
	// An open circuit fails readiness as ever.
	p.Isolate()
	if r := c.Report(); r.Status != StatusFail {
		t.Fatalf("isolated circuit with budgets: %v", r.Status)
	}
}

// A budget with no room for new keys warns, and so does the overall status: new keys go
// uncounted, or are refused. A spend store that is down is "spend:shared-state", a warning as
// every shared-state store; neither fails readiness.
func TestChecker_AFullBudgetAndTheSpendStoreWarn(t *testing.T) {
	set := &budgetSet{}
	b := tenantsDaily()
	b.Keys, b.AtWarn, b.Refused, b.Fleet = nil, 0, 0, true
	set.set(b)
	c := NewChecker(WithNow(fixedNow))
	c.Add("openai", stateSource(resilience.CircuitClosed))
	c.AddBudgets(set)
	_, doc := serve(t, c.Handler(), http.MethodGet)
	if st := checkEntry(t, doc, "spend:shared-state"); st["observedValue"] != "up" || st["status"] != "pass" || doc["status"] != "pass" {
		t.Fatalf("store up: %v", doc)
	}
	if bc := checkEntry(t, doc, "tenants-daily:budget"); bc["fleet"] != true || bc["status"] != "pass" {
		t.Fatalf("budget %v", bc)
	}
	b.StoreDown = true
	set.set(b)
	rec, doc := serve(t, c.Handler(), http.MethodGet)
	if st := checkEntry(t, doc, "spend:shared-state"); rec.Code != 200 || st["observedValue"] != "down" || st["status"] != "warn" ||
		st["componentType"] != "datastore" || doc["status"] != "warn" {
		t.Fatalf("store down: %d %s", rec.Code, rec.Body)
	}
	b.StoreDown, b.Full = false, true
	set.set(b)
	rec, doc = serve(t, c.Handler(), http.MethodGet)
	if bc := checkEntry(t, doc, "tenants-daily:budget"); rec.Code != 200 || bc["keysFull"] != true || bc["status"] != "warn" ||
		doc["status"] != "warn" {
		t.Fatalf("full: %d %s", rec.Code, rec.Body)
	}
	if c.Check(context.Background()) != nil {
		t.Fatal("a full budget failed the check")
	}
}

// What a budget set hands over is bounded and escaped: keys beyond BudgetKeys are cut, a key
// is at most maxText bytes with its control characters escaped and credential shapes masked,
// a tier nobody knows ranks as refuse, and a budget named twice shows once.
func TestChecker_BudgetTextIsBoundedAndEscaped(t *testing.T) {
	set := &budgetSet{}
	b := tenantsDaily()
	b.Keys = nil
	for i := range BudgetKeys + 5 {
		b.Keys = append(b.Keys, BudgetKeyReading{Key: strings.Repeat("k", i+1), Spent: "0", Limit: "1", Tier: "allow"})
	}
	b.Keys[0] = BudgetKeyReading{Key: "line\u2028two\x1b[31m sk-abcdefghijklmnop " + strings.Repeat("é", 200), Spent: "0.1",
		Limit: "1", Tier: "<script>"}
	b.Counted, b.AtWarn, b.Refused = 100, 0, 0
	set.set(b, tenantsDaily())
	c := NewChecker(WithNow(fixedNow))
	c.AddBudgets(set)
	rec, doc := serve(t, c.Handler(), http.MethodGet)
	bc := checkEntry(t, doc, "tenants-daily:budget")
	keys := bc["keys"].([]any)
	first := keys[0].(map[string]any)["key"].(string)
	if len(keys) != BudgetKeys || bc["moreKeys"] != float64(100-BudgetKeys) || bc["observedValue"] != "refuse" || bc["status"] != "warn" {
		t.Fatalf("%d keys, %v more, %v", len(keys), bc["moreKeys"], bc["observedValue"])
	}
	if len(first) > maxText+len("…") || strings.ContainsAny(first, "\u2028\x1b") || strings.Contains(first, "abcdefghijklmnop") ||
		!strings.HasPrefix(first, `line\u2028two\x1b[31m sk-[REDACTED] é`) {
		t.Fatalf("the key is shown as %q", first)
	}
	if strings.Contains(rec.Body.String(), "<script>") && !strings.Contains(rec.Body.String(), `\u003cscript\u003e`) {
		t.Fatalf("markup unescaped: %s", rec.Body)
	}
	if n := len(c.Report().Budgets); n != 1 {
		t.Fatalf("a budget named twice shows %d times", n)
	}
}

func newPipelineT(t *testing.T) *resilience.Pipeline {
	t.Helper()
	p, err := resilience.New(resilience.DefaultOptions(), resilience.WithName("openai"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}
