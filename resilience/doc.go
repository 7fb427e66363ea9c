// Package resilience makes any HTTP client survive flaky LLM providers by wrapping its
// transport in four layers, outermost first:
//
//	bulkhead → timeout → circuit breaker → retry → base transport
//
// Wrap a client's transport once and every call through it is protected:
//
//	p, err := resilience.New(resilience.DefaultOptions(), resilience.WithName("openai"))
//	if err != nil { … }
//	httpClient := &http.Client{Transport: p.Wrap(http.DefaultTransport)}
//
// In front of them, a call meets the pipeline's rate-limit state: a pause after a 429
// (RateLimitCooldown; under an adaptive limit only for a spent budget, as a 429 for too many
// calls at once shrinks the limit instead) and per-minute limits of requests and tokens
// (PaceRequestsPerMinute, PaceTokensPerMinute, learnt from the answers' headers with
// PaceFromHeaders); it waits when
// that fits its deadline and RetryMaxDelaySeconds (and Call.MaxWait), else ErrCoolingDown. A
// call may bring its own retries and time limits (WithPolicy, Call.Policy).
//
// The layers:
//
//   - Bulkhead: at most BulkheadMaxConcurrency exchanges in flight, each holding its slot
//     until its response body is closed or read to EOF, so streams count for as long as they
//     are open. Up to BulkheadMaxQueue callers wait, first come first served within a class
//     (Priority: interactive, default, batch), higher classes first with a minimum share for
//     the lower ones; the next is rejected at once with ErrBulkheadRejected, unless it is of a
//     higher class than a waiter, which is then shed. With AdaptiveConcurrency the limit is
//     found from the provider's overload signals instead (see Pipeline.Concurrency).
//   - Timeout: TimeoutSeconds bounds the whole call, backoffs and body included; for an event
//     stream it ends when the headers arrive (when its reader reports content, Call.WatchStream,
//     with its first content) and StreamIdleTimeoutSeconds bounds each silence of the wire (a
//     Read that lasts longer while bytes keep coming is not idle; see Wrap). After a watched
//     stream's first content, a silence longer than its route's learnt rhythm allows
//     (StreamStallFactor) is a stall, cut before the idle limit.
//     Only the pipeline's own expiry is ErrTimeout; the caller's cancellation is returned as it is.
//     (CallTimeoutSeconds is the steady client's deadline across a whole call and its
//     fallbacks, which the pipelines below see as their context's deadline; a bare pipeline
//     ignores it.)
//   - Circuit breaker: counts logical calls; 5xx, 529, network errors, our timeouts, reported
//     in-stream failures and refused credentials (401, 403) are failures; 429 and the other
//     4xx are not. After
//     CircuitBreakerThreshold consecutive failures it rejects calls with ErrCircuitOpen for a
//     break, then lets a probe through, which makes one attempt. The first break lasts
//     CircuitBreakerMinDurationSeconds (5 s); each failed probe lengthens it, up to
//     CircuitBreakerDurationSeconds and to about a tenth of the outage so far, so a provider
//     back from a short outage is used again within seconds. An active probe (WithActiveProbe)
//     can test the provider when a break ends instead of a caller's call. Its state is
//     computed on read.
//   - Retry (hashicorp/go-retryablehttp as the engine): retries 429, 502, 503, 504, 529 and
//     network errors with exponential backoff and jitter, honouring retry-after-ms and
//     Retry-After; a hint beyond RetryMaxDelaySeconds or the deadline returns the response at
//     once, hint intact, so the caller can defer the work. When retries run out the last
//     response is returned as a response, so SDKs build their usual typed errors.
//
// Guarantees: the caller's request is never modified and its body always closed; bodies are
// never buffered (only a request body without GetBody, once); discarded responses are
// drained so connections are reused, and the caller's idle connections are never closed;
// nothing is logged, and events carry no URLs, headers or bodies. Events go to the observer
// of OnEvent and to the watchers added while the pipeline runs (Watch); an event that none of
// them wants is not built.
package resilience
