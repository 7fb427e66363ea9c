// Package statuspage is a live status page for a steady client, for the people on call: one
// screen with every provider, deployment and model the client calls, what their circuits and
// rate-limit pauses are doing, the rate-limit budgets left, the calls in flight, the latest
// latencies, the hedges and failovers, the cost budgets' spend per key, the shared-state
// store, and the latest things that went wrong.
//
// The page is an http.Handler that the application mounts where its operators can reach it:
//
//	page, err := statuspage.New(c) // c is the *client.Client
//	if err != nil { … }
//	defer page.Close()
//	mux.Handle("/debug/steady", page)
//
// It serves three forms, chosen by the query alone, so it works at any path:
//
//	GET /debug/steady               the page: HTML, rendered on the server
//	GET /debug/steady?format=json   the same state as JSON (Snapshot)
//	GET /debug/steady?format=sse    server-sent events: the state rendered anew on each change
//
// An open page reads the stream and replaces its content as the state changes (within the
// refresh, DefaultRefresh), and counts down the time to the next probe and to the end of a
// pause on its own. Without JavaScript it reloads itself every 5 s.
//
// # What it shows
//
// For each provider (those of the fallback chain first): its status for readiness, as
// health.Checker judges it, how many of its deployments can serve, and its hedges and
// failovers. For each deployment, and each model it served (a route): the circuit's state
// with the time to the next probe, the rate-limit pause with the time left, the share left of
// the requests and tokens per minute, the p50 and p95 of the time to first content, the error
// rate, a sparkline of the latest SparkPoints times to first content, the calls in flight of
// the bulkhead's limit, and the hedges sent there and the calls that failed there and went on
// elsewhere. Then the client's cost budgets (client.WithBudgets), as the readiness check reads
// them: for each, its status, mode (shadow marked), window and the time until it ends, how many
// keys are at each tier, and the health.BudgetKeys keys that spent the largest share of their
// limit, each with a bar of its spend against its limit (ticks at the tiers), the amounts and
// the tier its next call meets; the spend store sharing them (up or down, failing open or
// closed). Then the shared-state store (up or down), and the latest notable events: failed
// attempts, retries, give-ups, timeouts, circuit changes, pauses, bulkhead refusals, probes,
// the store failing or coming back.
//
// # Guarantees
//
//   - Nothing secret: the page shows names, states, counts, amounts and times, budget keys
//     (the application's own: a tenant, a team) escaped and bounded, and the text of events
//     through steady's redaction (URLs cut to scheme://host, bearer tokens, key=value
//     credentials and sk-… keys masked, with WithSecrets any string you name), never a key,
//     a header, a URL's credentials or query, a prompt or an answer.
//   - No external assets: one HTML document with its style and script inline, allowed by a
//     Content-Security-Policy that names their hashes and nothing else; it works offline.
//   - Off unless mounted: a client without a page pays nothing. A mounted page listens to
//     the events of what goes wrong (client.Client.Watch with the types it keeps) into a
//     bounded buffer, without a lock: the pipelines do not even build the events of a call
//     that goes well but its attempt's end, which the page drops at once, so such a call
//     allocates nothing more and takes no measurable time more. Close stops listening.
//     Nothing runs in the background: the state is read only while a page is open, by that
//     page's own request. Budgets are read then too (cost.Ledger.Snapshot), holding each
//     budget's lock for 128 keys at a time: about 9 ms a refresh for 100 000 keys.
//   - Weight: about 6 KB for one provider, 27 KB for three providers of two deployments
//     serving two models each with 50 events, and about 0.45 KB more per budget key shown; it
//     grows with deployments, models, events and budgets.
//   - Bounded: at most WithEvents events (MaxEvents), WithMaxViewers open pages at once,
//     each stream reopened after 10 minutes and dropped when one message takes more than
//     10 s to write (its viewer stopped reading), whatever the server's WriteTimeout.
//
// The page shows how the application's providers are doing: mount it only where the
// application's other debug endpoints are, behind the same access control, not on a public
// listener.
package statuspage
