package observe

import (
	"context"
	"errors"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/resilience"
)

// instruments are the metric instruments of one Telemetry.
type instruments struct {
	retries, gaveUp, transitions, circuitRejected, timeouts, bulkheadRejected metric.Int64Counter
	cooldowns, cooldownRejected, sharedFailures, probes, hedges, tokenCounts  metric.Int64Counter
	bulkheadAdmitted, bulkheadQueued, limitChanges                            metric.Int64Counter
	bulkheadWait                                                              metric.Float64Histogram
	limit                                                                     metric.Int64Gauge

	callDuration, opDuration, firstChunk metric.Float64Histogram
	tokens                               metric.Int64Histogram

	costs   costInstruments
	options optionCache
}

func newInstruments(m metric.Meter) (*instruments, error) {
	var in instruments
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	seconds := func(name, desc string) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(durationBuckets...))
		errs = append(errs, err)
		return h
	}
	in.retries = counter(MetricRetries, "{retry}", "Retries scheduled by the resilience pipeline.")
	in.gaveUp = counter(MetricRetryGaveUp, "{failure}", "Retryable failures the resilience pipeline did not retry.")
	in.transitions = counter(MetricCircuitBreaker, "{transition}", "Circuit breaker state changes.")
	in.circuitRejected = counter(MetricCircuitRejected, "{call}", "Calls rejected by the circuit breaker.")
	in.timeouts = counter(MetricTimeouts, "{timeout}", "Time limits of the resilience pipeline that ran out.")
	in.bulkheadRejected = counter(MetricBulkheadRejected, "{call}", "Calls rejected by the bulkhead.")
	in.cooldowns = counter(MetricCooldowns, "{pause}", "Rate-limit pauses started or lengthened by a 429.")
	in.cooldownRejected = counter(MetricCooldownRejected, "{call}", "Calls refused during a rate-limit pause.")
	in.sharedFailures = counter(MetricSharedStateFailures, "{failure}", "Times the shared state stopped answering.")
	in.probes = counter(MetricActiveProbes, "{probe}", "Active probes of open circuits, by outcome.")
	in.hedges = counter(MetricHedges, "{try}", "Hedged tries of calls, by outcome.")
	in.tokenCounts = counter(MetricTokenCounts, "{count}", "Exact token counts made before calls, by outcome.")
	in.bulkheadAdmitted = counter(MetricBulkheadAdmitted, "{call}", "Calls the bulkhead gave a slot, by class.")
	in.bulkheadQueued = counter(MetricBulkheadQueued, "{call}", "Calls that queued for a bulkhead slot, by class.")
	in.limitChanges = counter(MetricConcurrencyLimitChanges, "{change}", "Changes of the adaptive concurrency limit.")
	var werr, gerr error
	in.bulkheadWait, werr = m.Float64Histogram(MetricBulkheadWait, metric.WithUnit("s"),
		metric.WithDescription("Time calls queued for a bulkhead slot, by class."),
		metric.WithExplicitBucketBoundaries(waitBuckets...))
	in.limit, gerr = m.Int64Gauge(MetricConcurrencyLimit, metric.WithUnit("{call}"),
		metric.WithDescription("The adaptive concurrency limit of a provider's bulkhead."))
	errs = append(errs, werr, gerr)
	in.callDuration = seconds(MetricCallDuration, "Duration of a provider's handling of a logical call, retries and waits included.")
	in.opDuration = seconds(MetricOperationDuration, "GenAI operation duration.")
	in.firstChunk = seconds(MetricTimeToFirstChunk, "Time to receive the first chunk of a streamed answer.")
	var err error
	in.tokens, err = m.Int64Histogram(MetricTokenUsage, metric.WithUnit("{token}"),
		metric.WithDescription("Number of input and output tokens used."),
		metric.WithExplicitBucketBoundaries(tokenBuckets...))
	errs = append(errs, err, in.costs.init(m))
	return &in, errors.Join(errs...)
}

// event records a pipeline event on its llm_resilience_* counter, if it has one.
func (in *instruments) event(ctx context.Context, e resilience.Event) {
	d := describe(e)
	if d == nil || d.counter == nil {
		return
	}
	key, str, n := d.label(e)
	var key2 attribute.Key
	var str2 string
	if d.label2 != nil {
		key2, str2 = d.label2(e)
	}
	k := optionKey{layout: layoutEvent + uint8(e.Type), a: e.Pipeline, b: str, n: n, c: e.Route, d: str2}
	o := in.options.get(k, func() []attribute.KeyValue {
		attrs := []attribute.KeyValue{KeyProvider.String(e.Pipeline)}
		if e.Route != "" {
			attrs = append(attrs, KeyModel.String(e.Route))
		}
		switch {
		case key == "":
		case str == "":
			attrs = append(attrs, key.Int(n))
		default:
			attrs = append(attrs, key.String(str))
		}
		if key2 != "" && str2 != "" {
			attrs = append(attrs, key2.String(str2))
		}
		return attrs
	})
	d.counter(in).Add(ctx, 1, o.add...)
	if d.also != nil {
		d.also(ctx, in, e, o)
	}
}

// waitBuckets are the boundaries of MetricBulkheadWait: from a millisecond to half a minute.
var waitBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// queueWait records, with the admitted call's attributes o, how long it queued.
func (in *instruments) queueWait(ctx context.Context, e resilience.Event, o options) {
	in.bulkheadWait.Record(ctx, e.Duration.Seconds(), o.record...)
}

// limitNow records the adaptive concurrency limit a change left.
func (in *instruments) limitNow(ctx context.Context, e resilience.Event) {
	in.limit.Record(ctx, int64(e.Limit), in.options.get(optionKey{layout: layoutLimit, a: e.Pipeline}, func() []attribute.KeyValue {
		return []attribute.KeyValue{KeyProvider.String(e.Pipeline)}
	}).record...)
}

// try records how one provider handled a logical call: llm_resilience_call_duration and the
// GenAI client metrics.
func (in *instruments) try(ctx context.Context, op client.Operation, stream bool, r *client.TryResult) {
	if h := hedgeOutcome(r); h != "" {
		in.hedge(ctx, r.Provider, h)
		if r.Lost {
			return // cancelled, not served: no duration or usage to tell
		}
	}
	outcome := OutcomeSuccess
	switch {
	case r.Err != nil:
		outcome = string(r.Err.Kind)
	case r.Closed:
		outcome = OutcomeClosed
	}
	in.callDuration.Record(ctx, r.Duration.Seconds(),
		in.options.get(optionKey{layout: layoutCall, a: r.Provider, b: outcome}, func() []attribute.KeyValue {
			return []attribute.KeyValue{KeyProvider.String(r.Provider), KeyOutcome.String(outcome)}
		}).record...)

	k := optionKey{layout: layoutGenAI, a: r.Provider, b: string(op), c: providerName(r.System), d: r.Model, e: r.ResponseModel}
	if r.Err != nil {
		k.f = errorType(r.Err)
	}
	genAI := func() []attribute.KeyValue {
		attrs := []attribute.KeyValue{
			KeyProvider.String(k.a),
			semconv.GenAIOperationNameKey.String(k.b),
			semconv.GenAIProviderNameKey.String(k.c),
			keyGenAISystem.String(genAISystem(k.c)),
		}
		if k.d != "" {
			attrs = append(attrs, semconv.GenAIRequestModelKey.String(k.d))
		}
		if k.e != "" {
			attrs = append(attrs, semconv.GenAIResponseModelKey.String(k.e))
		}
		if k.f != "" {
			attrs = append(attrs, semconv.ErrorTypeKey.String(k.f))
		}
		return attrs
	}
	opt := in.options.get(k, genAI)
	in.opDuration.Record(ctx, r.Duration.Seconds(), opt.record...)
	if stream && r.TimeToFirstChunk > 0 {
		in.firstChunk.Record(ctx, r.TimeToFirstChunk.Seconds(), opt.record...)
	}
	// Token usage only when the provider reported it: the conventions forbid guessing.
	if r.Err == nil && r.Usage.Total() > 0 {
		k.layout = layoutInputTokens
		in.tokens.Record(ctx, int64(r.Usage.InputTokens), in.options.get(k, func() []attribute.KeyValue {
			return append(genAI(), semconv.GenAITokenTypeInput)
		}).record...)
		k.layout = layoutOutputTokens
		in.tokens.Record(ctx, int64(r.Usage.OutputTokens), in.options.get(k, func() []attribute.KeyValue {
			return append(genAI(), semconv.GenAITokenTypeOutput)
		}).record...)
	}
}

// maxCachedOptions bounds the option cache. Past it, new combinations are built on each use:
// correct, only slower. The metrics' own cardinality is the same, so the bound is rarely met.
const maxCachedOptions = 4096

// optionCache memoizes the measurement options of each combination of attribute values, so
// that recording a measurement builds, sorts and allocates an attribute set only the first
// time a combination is seen. It keeps the options as the slices Add and Record take, which
// spares the allocation of a variadic argument on every call.
type optionCache struct {
	mu sync.RWMutex
	m  map[optionKey]options
}

// options holds one attribute set's option, ready for Add and for Record. The instruments
// only read these slices.
type options struct {
	add    []metric.AddOption
	record []metric.RecordOption
}

// optionKey names a combination: a layout (which instrument's attributes, in which roles)
// and its values.
type optionKey struct {
	layout        uint8
	a, b, c, d, e string
	f             string
	n             int
}

// The attribute layouts of optionKey.
const (
	layoutCall         uint8 = iota + 1 // a provider, b outcome
	layoutGenAI                         // a provider, b operation, c system, d model, e response model, f error type
	layoutInputTokens                   // as layoutGenAI, plus gen_ai.token.type=input
	layoutOutputTokens                  // as layoutGenAI, plus gen_ai.token.type=output
	layoutHedge                         // a provider, b outcome of MetricHedges
	layoutLimit                         // a provider, for MetricConcurrencyLimit
	layoutTokenCount                    // a provider, b outcome of MetricTokenCounts
	layoutCallDeadline                  // a provider, for MetricTimeouts' timeout="call"

	// layoutEvent plus an event type: a provider, and the b or n of the event's label
	// (see eventDesc).
	layoutEvent uint8 = 64
)

// get returns the options of k, building its attributes with build the first time.
func (c *optionCache) get(k optionKey, build func() []attribute.KeyValue) options {
	c.mu.RLock()
	o, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return o
	}
	opt := metric.WithAttributeSet(attribute.NewSet(build()...))
	o = options{add: []metric.AddOption{opt}, record: []metric.RecordOption{opt}}
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[optionKey]options)
	}
	if len(c.m) < maxCachedOptions {
		c.m[k] = o
	}
	c.mu.Unlock()
	return o
}

// hedgeOutcome is what try r did for a hedged call (MetricHedges), "" for a try that was no
// hedge and was not cancelled for one.
func hedgeOutcome(r *client.TryResult) string {
	switch {
	case r.Lost && r.Hedge:
		return OutcomeHedgeLost
	case r.Lost:
		return OutcomeFirstLost
	case !r.Hedge:
		return ""
	case r.Err != nil:
		return OutcomeHedgeFailed
	}
	return OutcomeHedgeWon
}

// tokenCount counts one pre-flight token count for provider, by outcome.
func (in *instruments) tokenCount(ctx context.Context, provider, outcome string) {
	in.tokenCounts.Add(ctx, 1, in.options.get(optionKey{layout: layoutTokenCount, a: provider, b: outcome}, func() []attribute.KeyValue {
		return []attribute.KeyValue{KeyProvider.String(provider), KeyOutcome.String(outcome)}
	}).add...)
}

// callDeadline counts one call the client's whole-call deadline ended (MetricTimeouts with
// timeout "call"), for the provider it tried last ("" when it tried none).
func (in *instruments) callDeadline(ctx context.Context, provider string) {
	in.timeouts.Add(ctx, 1, in.options.get(optionKey{layout: layoutCallDeadline, a: provider}, func() []attribute.KeyValue {
		return []attribute.KeyValue{KeyProvider.String(provider), KeyTimeout.String(string(resilience.TimeoutCall))}
	}).add...)
}

// hedge counts one outcome of hedging for provider.
func (in *instruments) hedge(ctx context.Context, provider, outcome string) {
	in.hedges.Add(ctx, 1, in.options.get(optionKey{layout: layoutHedge, a: provider, b: outcome}, func() []attribute.KeyValue {
		return []attribute.KeyValue{KeyProvider.String(provider), KeyOutcome.String(outcome)}
	}).add...)
}
