// Package health reports whether an application can reach its LLM providers, from the
// state of each provider's circuit breaker, and serves that report over HTTP.
//
// A [Checker] holds named circuit sources — a *resilience.Pipeline, or each provider of a
// client — and maps their states to the statuses of the IETF health-check draft:
//
//	closed    → pass
//	half-open → warn  (the break elapsed; probes are being let through)
//	open      → fail  (calls are rejected at once; "nextProbeIn" says for how long)
//	isolated  → fail  (taken out of service by hand until Reset)
//
// The overall status is the worst of them, unless the checker was built with
// [WithFallback]: then the sources form a fallback chain, and one provider down while
// another still passes is only warn.
//
// # Usage
//
//	openai, _ := resilience.New(resilience.DefaultOptions(), resilience.WithName("openai"))
//	checker := health.NewChecker()
//	checker.Add("openai", openai)
//
//	mux := http.NewServeMux()
//	mux.Handle("/readyz", checker.Handler())      // readiness: provider trouble → 503
//	mux.Handle("/livez", health.LivenessHandler()) // liveness: never fails for a provider
//
// Mount the checker on readiness only. An orchestrator restarts an instance whose liveness
// probe fails; restarting does not bring a provider back, and restarting every replica at
// once during a provider outage turns a partial outage into a total one. A failing
// readiness probe only takes the instance out of rotation until its circuits close again.
//
// To use an existing health library instead of the handler, register [Checker.Check],
// which has the usual func(context.Context) error shape.
//
// # Budgets
//
// A client that keeps cost budgets (a [BudgetSet]) shows each as the check "<budget>:budget":
// pass below the warn tier, warn once a key passed it or had a call refused, with the
// [BudgetKeys] keys nearest their limit. A budget never fails readiness — a tenant over its
// budget is the application's policy working, not an outage — and a key's tier does not
// change the overall status; a budget with no room for new keys, or a spend store that is
// down, makes it a warning.
//
// # Guarantees
//
//   - States are read when asked, never cached: an open circuit shows as half-open as soon
//     as its break has elapsed, without any call going through it.
//   - Checking does no I/O and starts no goroutine; it is cheap enough for every probe.
//     (Reading a *resilience.Pipeline may hand its pending state-change events to the
//     pipeline's OnEvent observer, on the goroutine serving the health request.) Reading
//     a client's budgets takes time in proportion to the keys they count in their windows —
//     about 9 ms for 100 000 keys — and holds each budget's lock for 128 keys at a time.
//   - The output holds the names given to Add, circuit states and measures, and the cost
//     budgets' names, amounts and keys (the application's own: a tenant, a team), escaped and
//     bounded: no URLs, headers, API keys or error text from providers.
//   - Everything is safe for concurrent use.
package health
