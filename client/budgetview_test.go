package client_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/health"
	"github.com/steadyllm/steady/mocks"
)

// The client is a health.BudgetSet: its reading types are health's, field for field.
var _ health.BudgetSet = (*client.Client)(nil)

// A health checker given the client shows its budgets, read from its ledger: each key's spend
// against its limit and its tier; a tenant past the warn tier is a warning of the budget's own
// check, and readiness passes.
func TestBudgetReadings_ShowTheClientsBudgetsInHealth(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("ok"))
	defer s.Close()
	// A call of "hello there" answered "ok" costs 0.0000175 on gpt-4o: three take acme past
	// half of 0.0001.
	budget := cost.Budget{Name: "tenants", Per: "tenant", Window: cost.Day, Limit: nano(t, "0.0001"), WarnAt: 0.5}
	c := newClient(t, openAIProvider("openai", s, policy()), client.WithPrices(budgetPrices(t)),
		client.WithBudgets(cost.LedgerOptions{}, budget))
	for _, tenant := range []string{"acme", "acme", "globex", "acme"} {
		if _, err := c.Chat(context.Background(), priced("gpt-4o", "hello there", 1), client.WithTenant(tenant)); err != nil {
			t.Fatal(err)
		}
	}
	checker := health.NewChecker()
	checker.AddSet(c)
	rec := httptest.NewRecorder()
	checker.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	var doc struct {
		Status string `json:"status"`
		Checks map[string][]struct {
			Status, ObservedValue, Window, WindowEnd string
			Keys                                     []struct{ Key, Spent, Limit, Tier string }
		} `json:"checks"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	b := doc.Checks["tenants:budget"]
	if rec.Code != 200 || doc.Status != "pass" || len(b) != 1 || b[0].Status != "warn" || b[0].ObservedValue != "warn" ||
		b[0].Window != "day" || len(b[0].Keys) != 2 {
		t.Fatalf("%d\n%s", rec.Code, rec.Body)
	}
	acme, globex := b[0].Keys[0], b[0].Keys[1]
	if acme.Key != "acme" || acme.Spent != "0.0000525" || acme.Limit != "0.0001" || acme.Tier != "warn" ||
		globex.Key != "globex" || globex.Spent != "0.0000175" || globex.Tier != "allow" {
		t.Fatalf("keys %+v\n%s", b[0].Keys, rec.Body)
	}
	end, err := time.Parse(time.RFC3339, b[0].WindowEnd)
	if left := time.Until(end); err != nil || left <= 0 || left > 24*time.Hour || end.UTC().Hour() != 0 {
		t.Fatalf("the window ends at %s (%v)", b[0].WindowEnd, err)
	}
	// A client without budgets has none to show.
	plain := newClient(t, openAIProvider("openai", s, policy()))
	if r := plain.BudgetReadings(10); r != nil {
		t.Fatalf("a client without budgets reads %+v", r)
	}
}
