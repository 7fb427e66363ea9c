package observe

import (
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"

	"github.com/steadyllm/steady/providers"
)

// ScopeName is the instrumentation scope of steady's meter and tracer.
const ScopeName = "github.com/steadyllm/steady/observe"

// The metric instruments. The llm_resilience_* counters come from the resilience pipeline's
// events, so a bare pipeline has them too; the histograms need the client, which knows where a
// logical call starts and ends. Every instrument has a provider attribute: the pipeline's name,
// which the client sets to the provider's.
const (
	// MetricRetries counts retries scheduled, by provider and attempt (the number of the
	// attempt that failed: 1 for the first retry).
	MetricRetries = "llm_resilience_retry_total"
	// MetricRetryGaveUp counts retryable failures that were not retried, by provider and reason.
	MetricRetryGaveUp = "llm_resilience_retry_gave_up_total"
	// MetricCircuitBreaker counts circuit transitions, by provider and the state entered.
	MetricCircuitBreaker = "llm_resilience_circuit_breaker_total"
	// MetricCircuitRejected counts calls the circuit rejected, by provider and state.
	MetricCircuitRejected = "llm_resilience_circuit_rejected_total"
	// MetricTimeouts counts the pipeline's own time limits running out, by provider and timeout,
	// and (timeout "call") each call the client's whole-call deadline ended.
	MetricTimeouts = "llm_resilience_timeout_total"
	// MetricBulkheadRejected counts calls the bulkhead turned away, by provider.
	MetricBulkheadRejected = "llm_resilience_bulkhead_rejected_total"
	// MetricCooldowns counts the rate-limit pauses a 429 started or made longer, by provider.
	MetricCooldowns = "llm_resilience_cooldown_total"
	// MetricCooldownRejected counts calls refused during a rate-limit pause they could not wait
	// out, by provider.
	MetricCooldownRejected = "llm_resilience_cooldown_rejected_total"
	// MetricSharedStateFailures counts the times the shared state (several instances, one
	// view) stopped answering, by provider; calls go on with each instance's own state.
	MetricSharedStateFailures = "llm_resilience_shared_state_failures_total"
	// MetricActiveProbes counts the active probes of open circuits (client.WithActiveProbe)
	// that told something, by provider, model (for a model's circuit) and outcome: success
	// (the circuit closed) or failure (it stays open for a longer break).
	MetricActiveProbes = "llm_resilience_active_probe_total"
	// MetricHedges counts what hedging did (resilience.Options.HedgeAfterSeconds), by provider
	// and outcome: hedge_won (a hedge served the call), hedge_failed (a hedge failed),
	// hedge_lost (a hedge cancelled because another try delivered first), first_lost (the
	// call's first try cancelled because a hedge delivered first) and refused (the retry
	// budget allowed no hedge). Hedges sent are hedge_won + hedge_failed + hedge_lost.
	MetricHedges = "llm_resilience_hedge_total"
	// MetricBulkheadAdmitted counts the calls the bulkhead gave a slot, by provider and
	// priority (the call's class: interactive, default, batch).
	MetricBulkheadAdmitted = "llm_resilience_bulkhead_admitted_total"
	// MetricBulkheadQueued counts the calls that found no free slot and queued for one, by
	// provider and priority.
	MetricBulkheadQueued = "llm_resilience_bulkhead_queued_total"
	// MetricBulkheadWait is the time in seconds each admitted call queued for its slot (0 when
	// one was free), by provider and priority.
	MetricBulkheadWait = "llm_resilience_bulkhead_wait"
	// MetricConcurrencyLimit is the adaptive concurrency limit of a provider's bulkhead
	// (resilience.Options.AdaptiveConcurrency), recorded each time it changes.
	MetricConcurrencyLimit = "llm_resilience_concurrency_limit"
	// MetricConcurrencyLimitChanges counts the changes of the adaptive concurrency limit, by
	// provider and direction (increase, decrease).
	MetricConcurrencyLimitChanges = "llm_resilience_concurrency_limit_changes_total"
	// MetricTokenCounts counts the exact token counts made before calls (a provider that
	// counts prompts itself, such as anthropic.Config.CountTokens; client.CountTracker), by
	// provider and outcome: counted (pacing debited the count), or the error kind of a count
	// that failed (the estimate was debited instead; the call went on).
	MetricTokenCounts = "llm_resilience_token_count_total"
	// MetricCallDuration is the duration in seconds of each provider's handling of a logical
	// call (every attempt and wait; for a stream, until it ends), by provider and outcome.
	MetricCallDuration = "llm_resilience_call_duration"

	// MetricOperationDuration is the GenAI semantic conventions' client operation duration.
	MetricOperationDuration = "gen_ai.client.operation.duration"
	// MetricTokenUsage is the GenAI semantic conventions' token usage, by gen_ai.token.type.
	MetricTokenUsage = "gen_ai.client.token.usage"
	// MetricTimeToFirstChunk is the GenAI semantic conventions' time to the first chunk of a
	// stream.
	MetricTimeToFirstChunk = "gen_ai.client.operation.time_to_first_chunk"
)

// Attribute keys of the llm_resilience_* metrics (short, as Prometheus labels) and of
// spans and span events (namespaced steady.*).
const (
	KeyProvider = attribute.Key("provider") // the pipeline's (provider's) name
	// KeyModel is the route of an event of a pipeline that keeps its state per model
	// (resilience.Event.Route): the model, bounded per deployment by resilience.MaxRoutes.
	KeyModel   = attribute.Key("model")
	KeyAttempt = attribute.Key("attempt") // the attempt that failed
	KeyState   = attribute.Key("state")   // closed, half-open, open, isolated
	KeyTimeout = attribute.Key("timeout") // total, attempt, stream-idle, stream-stall, first-token, call
	KeyReason  = attribute.Key("reason")  // why the retry layer gave up
	KeyOutcome = attribute.Key("outcome") // success, closed, or a providers.ErrorKind
	// KeyPriority is the class of a call (resilience.Priority): interactive, default, batch.
	KeyPriority = attribute.Key("priority")
	// KeyDirection is the way the adaptive concurrency limit moved: increase, decrease.
	KeyDirection = attribute.Key("direction")

	// KeySpanProvider is, on a call's span, the provider of the route the outcome is about: the
	// one that served, or whose failure explains the call's error (the failure a chain's error
	// leads with; the route tried last when that failure is none's: the whole-call deadline
	// passed between two tries). At the span's start, and for a call no route was tried for,
	// the first route's that may serve the call. On span events, the provider the event is about.
	KeySpanProvider  = attribute.Key("steady.provider")
	KeySpanAttempts  = attribute.Key("steady.attempts")  // HTTP attempts, over every provider tried
	KeySpanFallbacks = attribute.Key("steady.fallbacks") // how many times the chain moved on
	KeySpanOutcome   = attribute.Key("steady.outcome")   // as the outcome of MetricCallDuration
	KeySpanStream    = attribute.Key("steady.stream")    // the call is a ChatStream
	KeySpanPolicy    = attribute.Key("steady.policy")    // the named policy of the call (client.WithPolicy)
	KeySpanPriority  = attribute.Key("steady.priority")  // the call's own class (client.WithPriority)
	// KeySpanDeployment is the deployment of the route KeySpanProvider names,
	// "<provider>/<name>" (the provider's name for a provider of one).
	KeySpanDeployment = attribute.Key("steady.deployment")
	// KeySpanModel is the model the route KeySpanProvider names was asked for (the request's
	// model after the client's model mapping, a downgrade or the deployment's own; the
	// provider's default when the call named none). gen_ai.request.model is the model the call
	// asked its first route for, gen_ai.response.model the one the server named in its answer.
	KeySpanModel = attribute.Key("steady.model")
	// KeySpanRoute is the route (the model) a pipeline event is about, when the pipeline keeps
	// its state per model.
	KeySpanRoute = attribute.Key("steady.route")
	// KeySpanRequestID is the call's own ID (client.WithRequestID).
	KeySpanRequestID = attribute.Key("steady.client_request_id")
)

// keyGenAISystem is gen_ai.system, which the conventions replaced with gen_ai.provider.name in
// v1.37.0; it is still sent, with its v1.36.0 values, for dashboards built on it.
const keyGenAISystem = attribute.Key("gen_ai.system")

// Span event attributes.
const (
	keyEvAttempt     = attribute.Key("steady.attempt")
	keyEvMaxAttempts = attribute.Key("steady.max_attempts")
	keyEvDelayMs     = attribute.Key("steady.delay_ms")
	keyEvServerHint  = attribute.Key("steady.server_hint")
	keyEvReason      = attribute.Key("steady.reason")
	keyEvTimeout     = attribute.Key("steady.timeout")
	keyEvState       = attribute.Key("steady.circuit.state")
	keyEvFrom        = attribute.Key("steady.circuit.from")
	keyEvTo          = attribute.Key("steady.circuit.to")
	keyEvWaitedMs    = attribute.Key("steady.waited_ms")
	keyEvPriority    = attribute.Key("steady.priority")
	keyEvLimit       = attribute.Key("steady.concurrency_limit")
	keyEvFallbackTo  = attribute.Key("steady.fallback.to")
	keyTTFC          = attribute.Key("gen_ai.response.time_to_first_chunk")
)

// The outcomes of llm_resilience_call_duration besides the providers.ErrorKind of a failure.
const (
	OutcomeSuccess = "success" // the provider served the call
	OutcomeClosed  = "closed"  // the caller closed a stream before it ended
	OutcomeFailure = "failure" // an active probe found the provider still failing

	// The outcomes of MetricHedges.
	OutcomeHedgeWon    = "hedge_won"
	OutcomeHedgeFailed = "hedge_failed"
	OutcomeHedgeLost   = "hedge_lost"
	OutcomeFirstLost   = "first_lost"
	OutcomeRefused     = "refused"

	// OutcomeCounted is the outcome of MetricTokenCounts for a count that pacing used.
	OutcomeCounted = "counted"

	// The directions of MetricConcurrencyLimitChanges.
	DirectionIncrease = "increase"
	DirectionDecrease = "decrease"
)

// The GenAI semantic conventions' recommended histogram buckets.
var (
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
)

// genAISystem returns gen_ai.system's v1.36.0 spelling of a gen_ai.provider.name value.
func genAISystem(provider string) string {
	if provider == providers.SystemAzureOpenAI {
		return "az.ai.openai"
	}
	return provider
}

// providerName returns the gen_ai.provider.name of a system the provider reported, and the
// conventions' fallback for one that reported none.
func providerName(system string) string {
	if system == "" {
		return "_OTHER"
	}
	return system
}

// errorType is the error.type of a failure: its providers.ErrorKind, or _OTHER.
func errorType(err *providers.Error) string {
	if err.Kind == "" || err.Kind == providers.KindUnknown {
		return semconv.ErrorTypeOther.Value.AsString()
	}
	return string(err.Kind)
}
