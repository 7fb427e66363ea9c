package statuspage_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/health"
	"github.com/steadyllm/steady/internal/testkit/backend"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/statuspage"
)

// A token costs $0.00004 at these prices: a call of spendPrompt answered "ok" costs $0.004 (99
// tokens in, 1 out, as the fake counts), and, asking for at most 1 token, is estimated at as
// much once the route has learnt from one answer how the fake counts (its first estimate, in
// the chat format, is a few tokens more, within every budget's first call).
func tokenPrices(t testing.TB) *cost.Prices {
	t.Helper()
	p, err := cost.NewPrices("USD", []cost.Entry{{Provider: "openai", Model: "gpt-4o-mini*", Price: cost.PerMillion(40, 40)}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// budgets are $0.01 an hour per tenant, warning at half, and a trial of $0.005 an hour per
// tenant in shadow mode.
func budgets() []cost.Budget {
	return []cost.Budget{
		{Name: "tenants", Per: "tenant", Window: cost.Hour, Limit: 10 * providers.Unit / 1000, WarnAt: 0.5},
		{Name: "trial", Per: "tenant", Window: cost.Hour, Limit: 5 * providers.Unit / 1000, WarnAt: 0.5, Shadow: true},
	}
}

// budgetedClient is a client of the fake server s, on clock, keeping budgets.
func budgetedClient(t testing.TB, s *mocks.Server, clock *backend.ManualClock, o cost.LedgerOptions, opts ...client.Option) *client.Client {
	t.Helper()
	return newClient(t, append([]client.Option{client.WithProvider("openai", policy(), openAIOn("openai", s)),
		client.WithPrices(tokenPrices(t)), client.WithBudgets(o, budgets()...), client.WithClock(clock)}, opts...)...)
}

// spendPrompt is 396 bytes: 99 tokens to the fake.
var spendPrompt = strings.Repeat("spend ", 66)

// spend makes one call of tenant's, costing $0.004.
func spend(c *client.Client, tenant string) error {
	_, err := c.Chat(context.Background(), &providers.ChatRequest{MaxTokens: 1,
		Messages: []providers.Message{{Role: providers.RoleUser, Content: spendPrompt}}}, client.WithTenant(tenant))
	return err
}

// The page shows each budget — its status, mode, window and the time until it ends, and its
// keys' spend against their limit, with a bar, and tier — in the HTML, the JSON and the
// stream, which sends the change when a tenant spends. A tenant over its budget is a warning
// of its budget alone: the overall status stays the circuits'.
func TestPage_ShowsBudgets(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("ok"))
	defer s.Close()
	clock := backend.NewManualClock() // 08:00:00 UTC: the hour ends in an hour
	c := budgetedClient(t, s, clock, cost.LedgerOptions{})
	page := newPage(t, c)
	srv := serve(t, page)
	st := openStream(t, srv.URL+"/debug/steady?format=sse")
	if m := st.next(t); !strings.Contains(m.HTML, `data-budget="tenants"`) || !strings.Contains(m.HTML, "No key has spent anything") {
		t.Fatalf("before any call, the stream shows:\n%s", m.HTML)
	}
	for _, tenant := range []string{"acme", "acme", "globex"} {
		if err := spend(c, tenant); err != nil {
			t.Fatal(err)
		}
	}
	var pe *providers.Error
	if err := spend(c, "acme"); !errors.As(err, &pe) || pe.Kind != providers.KindBudgetExhausted {
		t.Fatalf("acme's third call: %v", err)
	}

	snap := page.Snapshot()
	if snap.Status != health.StatusPass || snap.SpendStore != nil || len(snap.Budgets) != 2 {
		t.Fatalf("snapshot: status %s, store %+v, %d budgets", snap.Status, snap.SpendStore, len(snap.Budgets))
	}
	// A budgeted client's routes learn from each answer how the server counts tokens, which
	// the page shows by the route.
	if rt := snap.Providers[0].Deployments[0].Routes; len(rt) != 1 || rt[0].Tokens == nil || rt[0].Tokens.Method != "learnt" ||
		rt[0].Tokens.Samples != 3 || rt[0].Tokens.Text <= 0 {
		t.Fatalf("routes %+v", rt)
	}
	if _, _, html := get(t, srv.URL+"/debug/steady"); !strings.Contains(html, "<td>learnt: text ×") || !strings.Contains(html, "(3 answers)</td>") {
		t.Fatalf("the page does not show what the route learnt:\n%s", html)
	}
	tenants, trial := snap.Budgets[0], snap.Budgets[1]
	if tenants.Name != "tenants" || tenants.Status != health.StatusWarn || tenants.Tier != "warn" || tenants.Shadow ||
		tenants.Per != "tenant" || tenants.Window != "hour" || tenants.EndsInMs != time.Hour.Milliseconds() ||
		tenants.Currency != "USD" || tenants.WarnAt != 0.5 || tenants.RefuseAt != 1 || tenants.AtWarn != 1 || tenants.Refused != 1 ||
		tenants.MoreKeys != 0 || len(tenants.Keys) != 2 {
		t.Fatalf("tenants %+v", tenants)
	}
	if k := tenants.Keys[0]; k != (statuspage.BudgetKey{Key: "acme", Spent: "0.008", Limit: "0.01", Share: 0.8, Tier: "warn", Refused: true}) {
		t.Fatalf("acme %+v", k)
	}
	if k := tenants.Keys[1]; k != (statuspage.BudgetKey{Key: "globex", Spent: "0.004", Limit: "0.01", Share: 0.4, Tier: "allow"}) {
		t.Fatalf("globex %+v", k)
	}
	// The trial would have warned both and refused acme's second call: it passes all the same.
	if trial.Name != "trial" || !trial.Shadow || trial.Status != health.StatusPass || trial.Tier != "warn" || trial.Refused != 1 ||
		len(trial.Keys) != 2 || trial.Keys[0].Spent != "0.004" || !trial.Keys[0].Refused {
		t.Fatalf("trial %+v", trial)
	}

	_, _, html := get(t, srv.URL+"/debug/steady")
	for _, want := range []string{
		`<h2 id="budgets">Budgets <small>this instance's own</small></h2>`,
		`<h3 data-budget="tenants" data-status="warn"><span class="badge warn">warn</span> tenants <small>hour · per tenant · 2 keys · 1 at warn · 1 refused a call · ends in <span data-until="`,
		`">1.0h</span></small></h3>`,
		`<tr data-key="acme" data-tier="warn" data-refused="yes"><td>acme</td><td><svg class="bar warn" width="120" height="10" viewBox="0 0 120 10" role="img" aria-label="80% of the limit spent; warn at 50%; refuse at 100%"><rect class="track" width="120" height="10"/><rect class="fill" width="96.0" height="10"/>`,
		`</svg> 80%</td><td>0.008 of 0.01 USD</td><td class="warn">warn · refused a call</td></tr>`,
		`<tr data-key="globex" data-tier="allow" data-refused="no"><td>globex</td>`, `<td class="pass">allow</td>`,
		`<h3 data-budget="trial" data-status="pass"><span class="badge pass">pass</span> trial <span class="badge shadow">shadow</span>`,
		`<td class="warn">would warn · would have refused a call</td>`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(html)
	}
	for _, attr := range []string{" src=", " href=", " style=", " on"} {
		if strings.Contains(strings.ToLower(html), attr) {
			t.Errorf("the page holds %q, which its Content-Security-Policy forbids", attr)
		}
	}
	_, _, js := get(t, srv.URL+"/debug/steady?format=json")
	var decoded statuspage.Snapshot
	if err := json.Unmarshal([]byte(js), &decoded); err != nil || len(decoded.Budgets) != 2 || decoded.Budgets[0].Keys[0].Key != "acme" ||
		!strings.Contains(js, `"windowEnd": "2027-01-15T09:00:00Z"`) {
		t.Fatalf("JSON (%v):\n%s", err, js)
	}
	// The stream sends a new tenant's spend.
	if err := spend(c, "initech"); err != nil {
		t.Fatal(err)
	}
	for m := st.next(t); !strings.Contains(m.HTML, `data-key="initech" data-tier="allow"`); m = st.next(t) {
	}
	// The hour ends: every key starts again from nothing, and the window's end moves on.
	clock.Advance(time.Hour)
	if b := page.Snapshot().Budgets[0]; len(b.Keys) != 0 || b.Status != health.StatusPass || b.EndsInMs != time.Hour.Milliseconds() {
		t.Fatalf("the next hour: %+v", b)
	}
}

// A page shows at most health.BudgetKeys keys of a budget, and counts the others; every key
// is escaped and bounded, and what WithSecrets names is masked in keys too.
func TestPage_BudgetKeysAreBoundedAndEscaped(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("ok"))
	defer s.Close()
	c := budgetedClient(t, s, backend.NewManualClock(), cost.LedgerOptions{})
	page := newPage(t, c, statuspage.WithSecrets("hunter2-custom-secret"))
	hostile := []string{`<script>alert(1)</script>`, "line\u2028break", "hunter2-custom-secret", strings.Repeat("é", 64)}
	for _, tenant := range hostile {
		if err := spend(c, tenant); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		if err := spend(c, fmt.Sprint("tenant-", i)); err != nil {
			t.Fatal(err)
		}
	}
	srv := serve(t, page)
	_, _, html := get(t, srv.URL+"/debug/steady")
	_, _, js := get(t, srv.URL+"/debug/steady?format=json")
	m := openStream(t, srv.URL+"/debug/steady?format=sse").next(t)
	for where, text := range map[string]string{"the page": html, "the JSON": js, "the stream": m.HTML} {
		mustNotShow(t, where, text, "<script>alert", "hunter2-custom-secret", "\u2028")
	}
	for _, want := range []string{`&lt;script&gt;alert(1)&lt;/script&gt;`, `line\u2028break`, `[REDACTED]`,
		`and 4 more keys that spent less of their limit`} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	snap := page.Snapshot()
	if b := snap.Budgets[0]; len(b.Keys) != health.BudgetKeys || b.MoreKeys != 4 {
		t.Fatalf("%d keys shown, %d more", len(b.Keys), b.MoreKeys)
	}
	rows := 0
	for _, b := range snap.Budgets {
		rows += len(b.Keys)
	}
	t.Logf("the page weighs %d bytes with %d budgets showing %d keys", len(html), len(snap.Budgets), rows)
}

// spendStore is a cost.SpendStore in memory that grants what is asked up to the ceiling, and
// can be made to fail.
type spendStore struct {
	fail    atomic.Bool
	mu      sync.Mutex
	granted map[string]providers.Money
}

func (s *spendStore) LeaseSpend(_ context.Context, r cost.SpendRequest) (cost.SpendLease, error) {
	if s.fail.Load() {
		return cost.SpendLease{}, errors.New("dial tcp 127.0.0.1:6379: connection refused")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := r.Budget + "|" + r.Key + "|" + r.Start.String()
	got := min(r.Want, max(r.Ceiling-s.granted[k], 0))
	s.granted[k] += got
	return cost.SpendLease{Granted: got, FleetGranted: s.granted[k], FleetSpent: r.FloorSpent + r.Spent}, nil
}

// Budgets shared through a spend store show the store: up, then down (a warning of the whole
// page, as the shared-state store's), and whether the budgets fail open or closed.
func TestPage_ShowsTheSpendStore(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("ok"))
	defer s.Close()
	store := &spendStore{granted: map[string]providers.Money{}}
	clock := backend.NewManualClock()
	c := budgetedClient(t, s, clock, cost.LedgerOptions{Store: store, FailClosed: true})
	page := newPage(t, c)
	if err := spend(c, "acme"); err != nil {
		t.Fatal(err)
	}
	srv := serve(t, page)
	if snap := page.Snapshot(); snap.SpendStore == nil || !snap.SpendStore.Up || !snap.SpendStore.FailClosed || !snap.Budgets[0].Fleet ||
		snap.Status != health.StatusPass {
		t.Fatalf("store up: %+v, status %s", snap.SpendStore, snap.Status)
	}
	_, _, html := get(t, srv.URL+"/debug/steady")
	if !strings.Contains(html, `spend store: <b class="pass">up</b> · fail closed`) {
		t.Fatalf("store up, the page says:\n%s", html)
	}
	// The store fails: the next call that needs more than its lease is refused (fail closed),
	// and the page says the store is down.
	store.fail.Store(true)
	for range 10 {
		_ = spend(c, "globex")
	}
	snap := page.Snapshot()
	if snap.SpendStore.Up || snap.Status != health.StatusWarn {
		t.Fatalf("store down: %+v, status %s", snap.SpendStore, snap.Status)
	}
	_, _, html = get(t, srv.URL+"/debug/steady")
	if !strings.Contains(html, `spend store: <b class="warn">down</b> · fail closed`) {
		t.Fatalf("store down, the page says:\n%s", html)
	}
	mustNotShow(t, "the page", html, "6379")
}

// A page mounted on a client that keeps budgets adds no allocation to a budgeted call: it
// reads the budgets only when someone looks.
func TestPage_AddsNoAllocationToABudgetedCall(t *testing.T) {
	s := mocks.NewServer() // its URL only: the canned transport answers
	defer s.Close()
	all := cost.Budget{Name: "all", Window: cost.Day, Limit: 1_000_000 * providers.Unit, WarnAt: 0.5}
	c := newClient(t, client.WithProvider("openai", policy(), openAIOn("openai", s)), client.WithBaseTransport(canned{}),
		client.WithPrices(tokenPrices(t)), client.WithBudgets(cost.LedgerOptions{}, all), client.WithClock(backend.NewManualClock()))
	none, mounted, closed := allocsWithAndWithoutPage(t, c)
	t.Logf("allocations of one budgeted Chat in memory: no page %v, page mounted %v, page closed %v", none, mounted, closed)
	if d := noise(); mounted < none-d || mounted > none+d || closed < none-d || closed > none+d {
		t.Fatalf("the page changed the allocations of a call: %v without it, %v mounted, %v closed", none, mounted, closed)
	}
	if b, ok := c.Ledger().Spend("all", ""); !ok || b.Spent == 0 {
		t.Fatalf("the calls were not counted: %+v", b)
	}
}
