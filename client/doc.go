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
// Errors are *providers.Error (errors.As), with a Kind to act on: rate limited (RetryAfter),
// quota exhausted, overloaded, unavailable, timeout, circuit open, bulkhead full, auth, bad
// request, context too long, content filtered, stream truncated, budget exhausted. The client falls back to the
// next provider only when one is unavailable to the request, never for an error the request
// itself caused.
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
