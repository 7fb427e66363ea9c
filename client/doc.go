// Package client is steady's provider-agnostic LLM client: one API (Chat, ChatStream, Embed)
// over OpenAI, Azure OpenAI, OpenAI-compatible servers and Anthropic, with every provider
// behind its own resilience pipeline, typed errors, and fallback along an ordered chain.
//
//	c, err := client.New(
//		client.WithProvider("openai", resilience.DefaultOptions(), func(hc *http.Client) (providers.Provider, error) {
//			return openai.New(openai.Config{Name: "openai", APIKey: os.Getenv("OPENAI_API_KEY"), HTTPClient: hc})
//		}),
//		client.WithFallback("openai"),
//	)
//	resp, err := c.Chat(ctx, &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: "Hi"}}})
//
// Or from configuration, in one line: steady.FromConfig(cfg) (package steady, at the root of the
// module), which knows every provider dialect and package config; this package knows neither.
//
// # Anatomy of a call
//
// A call — Chat, ChatStream or Embed — goes through five stages, each in files of its own, each
// with one contract:
//
//  1. Prologue (call.go, with plan.go, deadline.go, budget.go). The call is described as an
//     operation: its request, its try, how its answer is completed. Client.call validates it,
//     plans it from its options (the chain, the policy), starts its whole-call deadline, asks the
//     budgets to admit it (a refusal or a downgrade happens here) and starts its telemetry, once
//     each. Nothing is sent before the prologue ends; every mistake found in it is a bad_request.
//  2. Pick (pick.go, with strategy.go). The walk (walk.go) asks for the next route of the chain
//     that may serve the call: a route is one deployment asked for one model, and mayServe is the
//     one answer to whether it may (the provider's capabilities, the raw tools' system, the state
//     a pinned call needs, the context window, not tried yet) — every place that needs that
//     answer asks it. ready says whether a route can take the call now (its circuits, its pause,
//     its per-minute limits); a provider's routing strategy orders its deployments.
//  3. Attempt (attempt.go, hedge.go; the operation's try in chat.go, chatstream.go, embed.go).
//     One try on the route through its resilience pipeline, alone or raced against its hedges.
//     A try that failed is recorded once (lost: its latency, the failure, its cost, a take-out)
//     and reported once (report), whichever sent it.
//  4. Decide (decide.go). After a failure: stop, go on to the next route, redirect to the
//     failure kind's own chain (WithFallbackOn), or ask the same route again (a stored answer
//     that is gone, a first-token limit when nothing else can serve). A stream that fails after
//     content meets the same decision in its rescue (rescue.go), which asks the route that
//     takes over for the rest of the answer (continue.go) or the whole of it.
//  5. Settle (call.go; stream.go for a stream). The answer is completed — who served it, what
//     the call cost — the budgets are settled and the telemetry ends; a stream's, when it ends.
//
// Where to add a rule: a new picking rule goes in mayServe (pick.go); a new retry or fallback
// decision in decide (decide.go); a new cost rule in admit (budget.go) for what a call may
// spend before it is sent, in lost (attempt.go) for what a failed try cost, and in the
// operation's serve (serveChat, serveEmbed, serveStream) for the answer's.
//
// Errors are *providers.Error (errors.As), with a Kind to act on: rate limited (RetryAfter),
// quota exhausted, overloaded, unavailable, timeout, circuit open, bulkhead full, auth, bad
// request, context too long, content filtered, stream truncated, budget exhausted. The client falls back to the
// next provider only when one is unavailable to the request, never for an error the request
// itself caused. A failure with more than one provider's is a *ChainError, which errors.As
// sees through to the failure that explains it. A service's HTTP handler answers its own
// caller for any of them with WriteError (or reads the status and the wait from HTTPStatus):
// a status chosen for each kind, a Retry-After when waiting helps, and words of steady's that
// repeat nothing of the provider's message.
//
// A call that continues from provider state (providers.ChatRequest.Pin) is pinned: a stored
// answer (Previous, from an earlier ChatResponse.Stored of a provider on OpenAI's Responses
// API), a conversation the provider keeps (Conversation; NewConversation creates one), or a
// conversation pruned at a compaction item (providers.PruneCompacted). Only the route that
// holds the state — the one whose sharing scope is its Origin — is asked, never hedged or
// failed over, because no other holds the conversation; its failure says so, and a chain
// without that route refuses the call (bad request) before sending. Reasoning items and the
// compaction items of a transcript the caller keeps whole are no such pin: a fallback sends
// the conversation without them.
//
// A stored answer the provider no longer holds (providers.ErrResponseGone: a cut background
// stream whose resume is a 404) ends the call with the text delivered — no fallback, rescue or
// retry, since asking again would produce and bill the answer twice — unless the call opts in
// with WithRestartIfGone.
//
// Each call takes options (WithPolicy, WithTimeout, WithCallTimeout, WithProviders,
// WithRequestID, WithExtraFields…). WithTimeout bounds each route's try; WithCallTimeout (or
// the policy's CallTimeoutSeconds) bounds the whole call — every try, retry, backoff, hedge and
// fallback together — and fails it with kind timeout, GaveUp "deadline", as soon as a wait
// would pass it or it runs out (see deadline.go for streams and the caller's own deadline). A provider may be several deployments — keys, regions, base URLs —
// routed by a Strategy (WithDeployments, WithStickyKey), each paced under its per-minute
// budgets and paused after a 429; a call that would have to wait longer than
// WithFailoverAfter goes to another provider that can serve it at once.
//
// Cost is two options: WithPrices prices every call from its usage (ChatResponse.Cost,
// Stream.Cost: the serving attempt, and the attempts it abandoned that a server counted or
// may bill), and WithBudgets keeps budgets per key (WithTenant, WithBudgetKey) that warn,
// downgrade to a cheaper model or policy, and refuse (budget_exhausted, before sending) —
// or, in shadow mode, only record what they would do; with a Redis store they are the
// fleet's (see package cost). A client without them pays nothing for them.
//
// Observability is one option: WithTelemetry(t) with an *observe.Telemetry gives
// OpenTelemetry metrics and a span per logical call (and log/slog records); WithObserver
// receives the raw resilience events. Without them the client does no telemetry work. Watch
// adds an observer while the client runs, for the event types it names, as the status page
// (package statuspage) does while it is mounted; DeploymentInfo (Deployments) is the state
// such a page reads.
package client
