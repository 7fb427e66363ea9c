package client

import (
	"context"
	"net/http"
	"testing"

	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// The steps a call takes through the cost accounting allocate nothing when the client keeps
// no budgets — nor, but for the admission itself, when it prices calls: a closure that
// captured the request or the plan, say, would move them to the heap on every call.
func TestCost_TheCallPathAllocatesNothingWithoutBudgets(t *testing.T) {
	prices, err := cost.NewPrices("USD", []cost.Entry{{Provider: "idle", Model: "m", Price: cost.PerMillion(1, 5)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, opts := range [][]Option{nil, {WithPrices(prices)}} {
		c, err := New(append(opts, WithProvider("idle", resilience.DefaultOptions(), func(*http.Client) (providers.Provider, error) {
			return idle{}, nil
		}))...)
		if err != nil {
			t.Fatal(err)
		}
		req := &providers.ChatRequest{Model: "m", Messages: []providers.Message{{Role: providers.RoleUser, Content: "hello there"}}}
		pl, err := c.planFor(nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		e := c.entries["idle"]
		rt := routeOf(e, e.deps[0], "m")
		u := providers.Usage{InputTokens: 3, OutputTokens: 4}
		var sink providers.Money
		n := testing.AllocsPerRun(100, func() {
			op := operation{c: c, kind: OperationChat, chat: req, pl: pl, bill: bill{chat: req}}
			err := c.admit(ctx, &op)
			b, ticket, r, prior := op.bill, op.ticket, op.chat, op.prior
			if err != nil || ticket != nil || r != req || len(op.pl.chain) != 1 || prior != nil {
				t.Fatal("admit changed a call the client keeps no budgets for")
			}
			cc := c.servedCost(rt, "", u, b, 10)
			cc = cc.Add(c.abandonedCost(rt, &providers.Error{Usage: &u, Partial: "text"}, b))
			c.settle(ticket, cc, "idle", "m", u, b)
			sink += cc.Total()
		})
		if n != 0 {
			t.Errorf("%d options: the cost accounting allocates %v per call", len(opts), n)
		}
		_ = sink
	}
}
