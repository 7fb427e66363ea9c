// Package cost prices LLM calls and keeps budgets of what they spend.
//
// A price table (Prices) gives each provider's models a Price per million tokens — input,
// cached input, cache writes, output, reasoning — and per image; the client
// (client.WithPrices) prices every call from the usage its servers report, and says what each
// call cost in providers.CallCost: the attempt that served, the attempts it abandoned that the
// servers counted (known), and what nobody counted but a server may bill (estimated).
//
//	prices, err := cost.NewPrices("USD", []cost.Entry{
//		{Provider: "openai", Model: "gpt-4o-mini*", Price: cost.PerMillion(0.15, 0.60)},
//	})
//	c, err := client.New(..., client.WithPrices(prices))
//	resp, err := c.Chat(ctx, req)
//	fmt.Println(resp.Cost.Total(), resp.Cost.Currency) // 0.0000039 USD
//
// Money is exact: amounts are integer nano-units (providers.Money), prices are read from
// their decimal text (a configured 0.15 is 150 000 000 nano-units per million tokens, not the
// binary fraction nearest to it), and each call's cost is rounded once, to half a nano-unit at
// most, after its token counts were multiplied by their prices in 128-bit integers. Sums of
// costs are exact.
//
// A model with no price is never guessed: its calls cost nothing in the sums, are counted in
// CallCost.Unpriced, and the client reports the model once (EventUnpriced). steady bundles
// no price list: prices change often, and a stale bundled price would be a silent lie.
//
// # Budgets
//
// A Ledger keeps Budgets: a limit per key (a tenant, a team, an API key of your application)
// over a calendar Window, with tiers of action — warn, downgrade to a cheaper model or
// policy, refuse — and a shadow mode that decides identically and applies nothing
// (client.WithBudgets). Each call is admitted with its pre-flight estimate held until it ends,
// then charged what it cost; a call that would cross a limit is refused before it is sent.
//
// With a SpendStore (state/redis), the instances of a fleet keep one budget together: each
// leases slices of the room (sixteen calls' estimates, at most a sixteenth of the limit) and
// spends them without a round trip, refilling in the background; the fleet spends at most the
// limit plus what the calls in flight cost beyond their estimates, one call per instance when
// each has one call in flight. Once the store has no room left for an account, an instance
// refuses the account's calls its lease cannot cover without asking the store again, for
// FleetRecheck (5 s) or until the window ends: a tenant over its budget calling in a loop costs
// the store one request per instance every 5 s, not one per call.
//
// Values read back from the store are bounded, and every request carries what its instance
// knows the window's totals to be at least — those of its last answer. A store keeps its
// totals at or above them, and rebuilds from them a total that is garbage, a key of another
// type, or a window lost before its end: the damage refuses no call, and the fleet may be
// granted again only what was granted since the rebuilding instance last heard, until a
// better-informed instance asks (see SpendStore). A store that cannot be reached fails open
// (calls counted locally and told to it later) or closed (LedgerOptions.FailClosed).
//
// Ledger.Snapshot reads every budget at once, for a health check or a status page (the
// packages health and statuspage show it): the keys that spent the largest share of their
// limit, the tier each key's next call would meet, how many keys are at each tier, when the
// window ends, and the spend store's state. It costs calls nothing until it is asked for.
package cost
