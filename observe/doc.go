// Package observe shows what steady's resilience pipelines and client do, in the tools an
// on-call engineer already runs: OpenTelemetry metrics and traces, and log/slog.
//
// On the client, one option wires everything:
//
//	tel, err := observe.New(observe.WithLogger(logger)) // global OpenTelemetry providers
//	if err != nil { … }
//	c, err := client.New(
//		client.WithProvider("openai", policy, factory),
//		client.WithTelemetry(tel),
//	)
//
// On a bare pipeline, one option as well:
//
//	p, err := resilience.New(opts, resilience.WithName("openai"), tel.PipelineOption())
//
// and for logs alone, with no OpenTelemetry at all:
//
//	p, err := resilience.New(opts, resilience.OnEvent(observe.NewSlogObserver(logger)))
//
// # What is recorded
//
// Metrics, every one with a provider attribute (the pipeline's name): the counters
// llm_resilience_retry_total (attempt), llm_resilience_retry_gave_up_total (reason),
// llm_resilience_circuit_breaker_total (state, on each transition),
// llm_resilience_circuit_rejected_total (state), llm_resilience_timeout_total (timeout) and
// llm_resilience_bulkhead_rejected_total, from the pipeline's events; and, from the client,
// which knows where a call starts and ends, the histogram llm_resilience_call_duration
// (outcome) and the GenAI semantic conventions' gen_ai.client.operation.duration,
// gen_ai.client.token.usage and gen_ai.client.operation.time_to_first_chunk, with the
// conventions' bucket boundaries. With a fallback chain, the histograms have one
// observation per provider tried.
//
// Traces: a client span per logical call, named after its operation and model
// ("chat gpt-4o-mini"), with the GenAI attributes (gen_ai.operation.name,
// gen_ai.provider.name, gen_ai.request.model, gen_ai.response.model, gen_ai.usage.*…), the
// route its outcome is about (steady.provider, steady.deployment, steady.model: the one that
// served it, or whose failure explains its error), the attempts, the fallbacks and the
// outcome; its status is Error when the call failed. Retries (with their delay and whether it came from the server's
// hint), give-ups, timeouts, rejections, circuit transitions and fallbacks are span events.
// Pipeline events go to the span in the request's context, so on a bare pipeline they land
// on the application's own span (an otelhttp transport's, for instance).
//
// Logs: see NewSlogObserver for the levels and the attribute keys.
//
// # Guarantees
//
// Nothing recorded holds a URL, a header, a request or response body, a prompt or a key:
// the pipeline's events carry none, the client reports only parameters and counts, and any
// error text is scrubbed of URLs and credentials before it is written. Attribute values come
// from small fixed sets (provider names, states, error kinds, models), so metrics keep a low
// cardinality. Without WithTelemetry the client does no telemetry work at all; with the
// OpenTelemetry no-op providers the cost is a few allocations per call (see the benchmarks).
package observe
