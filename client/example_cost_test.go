package client_test

import (
	"context"
	"fmt"
	"net/http"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

// What calls cost: an answer is priced from the usage its server reported, exact to the
// nano-unit; a stream the caller closes before its end is charged an estimate of what its
// server may bill.
func Example_cost() {
	s := mocks.NewServer(mocks.WithReply("Calendar windows, in your time zone."))
	defer s.Close()
	// docs:begin prices
	prices, err := cost.NewPrices("USD", []cost.Entry{
		{Provider: "openai", Model: "gpt-4o", Price: cost.PerMillion(2.50, 10)},         // $ per million tokens in, out
		{Provider: "openai", Model: "gpt-4o-mini*", Price: cost.PerMillion(0.15, 0.60)}, // a prefix: every gpt-4o-mini…
	})
	if err != nil {
		return // every bad line at once, each named
	}
	c, err := client.New(
		client.WithProvider("openai", resilience.DefaultOptions(), func(hc *http.Client) (providers.Provider, error) {
			return openai.New(openai.Config{Name: "openai", BaseURL: s.OpenAIBaseURL(), APIKey: "sk-example", HTTPClient: hc, Model: "gpt-4o-mini"})
		}),
		client.WithPrices(prices),
	)
	// docs:end prices
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	req := &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: "How are budget windows counted?"}}}
	// docs:begin chat-cost
	resp, err := c.Chat(ctx, req, client.WithTenant("acme")) // the tenant labels the cost metric and span
	if err != nil {
		return
	}
	fmt.Printf("%d in + %d out on %s: %s %s\n", resp.Usage.InputTokens, resp.Usage.OutputTokens, resp.Model,
		resp.Cost.Total(), resp.Cost.Currency)
	// docs:end chat-cost
	// docs:begin stream-cost
	st, err := c.ChatStream(ctx, req)
	if err != nil {
		return
	}
	d, _ := st.Recv() // one delta, then the caller walks away
	_ = st.Close()    // the stream's cost is final once it ended: its Done delta, a failure, or Close
	cc := st.Cost()
	fmt.Printf("read %q, then closed: known %s, estimated %s\n", d.Text, cc.Known(), cc.Estimated)
	// docs:end stream-cost

	// Output:
	// 8 in + 9 out on gpt-4o-mini: 0.0000066 USD
	// read "Calendar", then closed: known 0, estimated 0.00000315
}
