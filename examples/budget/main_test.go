package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/internal/testkit/backend"
)

func TestBudgetExample(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, client.WithClock(backend.NewManualClock())); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := out.String()
	want := []string{
		`acme: gpt-4o answered for 0.00008 USD; 0.00008 of 0.00018 spent today`,
		`event: budget_downgrade for tenant "acme" (0.00016 of 0.00018 USD spent)`,
		`acme: gpt-4o answered for 0.00008 USD; 0.00016 of 0.00018 spent today`,
		`acme: gpt-4o-mini answered for 0.0000048 USD; 0.0001648 of 0.00018 spent today`,
		`acme: gpt-4o-mini answered for 0.0000048 USD; 0.0001744 of 0.00018 spent today`,
		`acme: refused (budget_exhausted), not sent; the budget starts again when the day ends, in 16h0m0s`,
		`globex: gpt-4o answered for 0.00008 USD; 0.00008 of 0.00018 spent today`,
	}
	at := 0
	for _, w := range want {
		i := strings.Index(got[at:], w)
		if i < 0 {
			t.Fatalf("output lacks %q after what came before:\n%s", w, got)
		}
		at += i + len(w)
	}
	if n := strings.Count(got, "acme: refused"); n != 2 {
		t.Fatalf("%d refusals, want 2:\n%s", n, got)
	}
}
