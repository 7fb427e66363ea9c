package observe

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// StartCall starts the span of one logical call of the client: a client span named
// "{operation} {model}" ("chat gpt-4o-mini"), with the GenAI attributes of the first route
// that may serve the call (client.CallStart). The returned context carries the span, so the
// pipeline's events become its span events. The returned tracker records each provider's try
// (metrics, fallback events) and, at End, the outcome, the route it is about (the one that
// served, or whose failure explains the error: see KeySpanProvider), the attempts and the
// usage, then ends the span. It makes *Telemetry a client.Telemetry.
func (t *Telemetry) StartCall(ctx context.Context, c client.CallStart) (context.Context, client.CallTracker) {
	name := string(c.Operation)
	if c.Model != "" {
		name += " " + c.Model
	}
	// The attributes the conventions want at span creation, for samplers; the others only
	// when the span records.
	system := providerName(c.System)
	start := []attribute.KeyValue{
		semconv.GenAIOperationNameKey.String(string(c.Operation)),
		semconv.GenAIProviderNameKey.String(system),
		semconv.GenAIRequestModelKey.String(c.Model),
	}
	if c.Model == "" {
		start = start[:2]
	}
	ctx, span := t.tracer.Start(ctx, name, clientKind, trace.WithAttributes(start...))
	if span.IsRecording() {
		attrs := make([]attribute.KeyValue, 0, 6)
		attrs = append(attrs,
			keyGenAISystem.String(genAISystem(system)),
			KeySpanProvider.String(c.Provider),
			KeySpanStream.Bool(c.Stream),
		)
		if c.MaxTokens > 0 {
			attrs = append(attrs, semconv.GenAIRequestMaxTokensKey.Int(c.MaxTokens))
		}
		if c.Temperature != nil {
			attrs = append(attrs, semconv.GenAIRequestTemperatureKey.Float64(*c.Temperature))
		}
		if c.TopP != nil {
			attrs = append(attrs, semconv.GenAIRequestTopPKey.Float64(*c.TopP))
		}
		if c.Policy != "" {
			attrs = append(attrs, KeySpanPolicy.String(c.Policy))
		}
		if c.Priority != "" {
			attrs = append(attrs, KeySpanPriority.String(string(c.Priority)))
		}
		if c.RequestID != "" {
			attrs = append(attrs, KeySpanRequestID.String(c.RequestID))
		}
		attrs = budgetAttributes(attrs, c)
		for _, a := range c.Attributes {
			attrs = append(attrs, otelAttr(a))
		}
		span.SetAttributes(attrs...)
	}
	tr := &callTracker{t: t, ctx: ctx, span: span, start: c}
	if t.logger != nil {
		tr.began = time.Now()
	}
	return ctx, tr
}

// clientKind is the span kind option of every call span, made once.
var clientKind = trace.WithSpanKind(trace.SpanKindClient)

// callTracker follows one logical call. The client calls it from one goroutine at a time.
type callTracker struct {
	t         *Telemetry
	ctx       context.Context
	span      trace.Span
	start     client.CallStart
	began     time.Time // for the log record only
	attempts  int
	fallbacks int
	last      client.TryResult
	// failed lists the tries that failed, in order, each with its route and its own failure:
	// for the record of a call that failed, and to find the try a failure is about (allocated
	// only when a try failed).
	failed []failedTry
	// cost is the call's cost, summed over its tries.
	cost providers.CallCost
}

// failedTry is one try's failure within a call: the route it was sent to, and how it failed.
type failedTry struct {
	at  tryRoute
	err *providers.Error
}

// tryRoute names the route of one try: its provider, deployment, GenAI system and the model it
// was asked for.
type tryRoute struct {
	provider, deployment, system, model string
}

// routeOf names the route of try r.
func routeOf(r *client.TryResult) tryRoute {
	return tryRoute{provider: r.Provider, deployment: deploymentOf(*r), system: r.System, model: r.Model}
}

// TryDone records how one provider handled the call.
func (c *callTracker) TryDone(r client.TryResult) {
	c.t.inst.try(c.ctx, c.start.Operation, c.start.Stream, &r)
	c.t.inst.tryCost(c.ctx, &c.start, &r)
	c.cost = c.cost.Add(r.Cost)
	c.attempts += r.Attempts
	if h := hedgeOutcome(&r); h != "" && c.span.IsRecording() {
		c.hedgeSpan(r, h)
	}
	if r.Lost {
		return // cancelled for the try that serves: not the call's last word
	}
	c.last = r
	if r.Err != nil {
		c.failed = append(c.failed, failedTry{at: routeOf(&r), err: r.Err})
	}
	if r.Err == nil || r.Next == "" {
		return
	}
	c.fallbacks++
	if c.span.IsRecording() {
		c.span.AddEvent(SpanEventFallback, trace.WithAttributes(
			KeySpanProvider.String(r.Provider), KeySpanDeployment.String(deploymentOf(r)), KeySpanModel.String(r.Model),
			keyEvFallbackTo.String(r.Next), semconv.ErrorTypeKey.String(errorType(r.Err)), KeySpanAttempts.Int(r.Attempts)))
	}
	if l := c.t.logger; l != nil && l.Enabled(c.ctx, slog.LevelWarn) {
		l.LogAttrs(c.ctx, slog.LevelWarn, "falling back from "+deploymentOf(r)+" to "+r.Next+" after "+string(r.Err.Kind),
			slog.String(LogProvider, r.Provider), slog.String(LogDeployment, deploymentOf(r)), slog.String(LogModel, r.Model),
			slog.String(LogFallbackTo, r.Next), slog.String(LogErrorKind, string(r.Err.Kind)), slog.Int(LogAttempts, r.Attempts))
	}
}

// outcomeRoute returns the route the call's outcome is about, and false when the call tried
// none (refused before anything was sent). A call that was served: the route that served. A
// call that failed with perr: the route of the try whose failure perr is — the one that
// explains the call's outcome, which a chain's error leads with — or, when perr is no try's
// (the whole-call deadline passed between two tries), the route tried last.
func (c *callTracker) outcomeRoute(perr *providers.Error) (tryRoute, bool) {
	if perr == nil || len(c.failed) == 0 {
		if c.last.Provider == "" {
			return tryRoute{}, false
		}
		return routeOf(&c.last), true
	}
	for _, f := range c.failed {
		if f.err == perr {
			return f.at, true
		}
	}
	// Not the same error value (a copy, or a failure a custom client reported): the last
	// failed try of the provider or deployment it names.
	for i := len(c.failed) - 1; i >= 0 && perr.Provider != ""; i-- {
		if f := c.failed[i]; f.at.deployment == perr.Provider || f.at.provider == perr.Provider {
			return f.at, true
		}
	}
	return c.failed[len(c.failed)-1].at, true
}

// hedgeSpan records try r of a hedged call, which did outcome: an event on the call's span,
// and a span of its own under it ("hedge <deployment>", from the try's start to its end),
// which the call's span links to, so a trace shows each hedge beside the try that served.
func (c *callTracker) hedgeSpan(r client.TryResult, outcome string) {
	attrs := []attribute.KeyValue{KeySpanProvider.String(r.Provider), KeySpanDeployment.String(deploymentOf(r)),
		KeyOutcome.String(outcome), KeySpanAttempts.Int(r.Attempts), KeySpanModel.String(r.Model)}
	c.span.AddEvent(SpanEventHedge, trace.WithAttributes(attrs[:3]...))
	end := time.Now()
	_, s := c.t.tracer.Start(c.ctx, SpanEventHedge+" "+deploymentOf(r), trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(end.Add(-r.Duration)), trace.WithAttributes(attrs...))
	if r.Err != nil {
		s.SetStatus(codes.Error, string(r.Err.Kind))
	}
	s.End(trace.WithTimestamp(end))
	c.span.AddLink(trace.Link{SpanContext: s.SpanContext(), Attributes: attrs[2:3]})
}

// TokensCounted records a count of the call's prompt made before a try (client.CountTracker):
// MetricTokenCounts by provider and outcome, and, for a count that failed, a warning that the
// estimate stood in for it (for pacing and budgets). It may run on a hedge's goroutine: it touches no state of the
// tracker.
func (c *callTracker) TokensCounted(r client.TokenCount) {
	outcome := OutcomeCounted
	if r.Err != nil {
		outcome = string(r.Err.Kind)
	}
	c.t.inst.tokenCount(c.ctx, r.Provider, outcome)
	if l := c.t.logger; r.Err != nil && l != nil && l.Enabled(c.ctx, slog.LevelWarn) {
		l.LogAttrs(c.ctx, slog.LevelWarn, "token count for "+r.Deployment+" failed ("+string(r.Err.Kind)+"): the estimate stood in",
			slog.String(LogProvider, r.Provider), slog.String(LogDeployment, r.Deployment), slog.String(LogModel, r.Model),
			slog.String(LogErrorKind, string(r.Err.Kind)), slog.Int64(LogDurationMs, r.Duration.Milliseconds()))
	}
}

// HedgeRefused counts a hedge of the call the retry budget of provider did not allow
// (client.HedgeTracker).
func (c *callTracker) HedgeRefused(provider string) {
	c.t.inst.hedge(c.ctx, provider, OutcomeRefused)
	if c.span.IsRecording() {
		c.span.AddEvent(SpanEventHedge, trace.WithAttributes(KeySpanProvider.String(provider), KeyOutcome.String(OutcomeRefused)))
	}
}

// End records the call's outcome on its span and ends it.
func (c *callTracker) End(err error) {
	r := &c.last
	outcome := OutcomeSuccess
	perr := asProviderError(err)
	at, tried := c.outcomeRoute(perr)
	switch {
	case perr != nil:
		outcome = string(perr.Kind)
		var te *resilience.TimeoutError
		if perr.Kind == providers.KindTimeout && errors.As(perr, &te) && te.Limit == resilience.TimeoutCall {
			c.t.inst.callDeadline(c.ctx, at.provider)
		}
	case err != nil:
		outcome = string(providers.KindUnknown)
	case r.Closed:
		outcome = OutcomeClosed
	}
	if c.span.IsRecording() {
		attrs := make([]attribute.KeyValue, 0, 16)
		if tried {
			// The route the outcome is about; a call that tried none keeps what its start named.
			system := providerName(at.system)
			attrs = append(attrs,
				semconv.GenAIProviderNameKey.String(system),
				keyGenAISystem.String(genAISystem(system)),
				KeySpanProvider.String(at.provider),
				KeySpanDeployment.String(at.deployment),
				KeySpanModel.String(at.model),
			)
		}
		attrs = append(attrs,
			KeySpanAttempts.Int(c.attempts),
			KeySpanFallbacks.Int(c.fallbacks),
			KeySpanOutcome.String(outcome),
		)
		if r.ResponseModel != "" {
			attrs = append(attrs, semconv.GenAIResponseModelKey.String(r.ResponseModel))
		}
		if r.ResponseID != "" {
			attrs = append(attrs, semconv.GenAIResponseIDKey.String(r.ResponseID))
		}
		if r.FinishReason != "" {
			attrs = append(attrs, semconv.GenAIResponseFinishReasonsKey.StringSlice([]string{string(r.FinishReason)}))
		}
		if err == nil && r.Usage.Total() > 0 {
			attrs = append(attrs, semconv.GenAIUsageInputTokensKey.Int(r.Usage.InputTokens),
				semconv.GenAIUsageOutputTokensKey.Int(r.Usage.OutputTokens))
		}
		if r.TimeToFirstChunk > 0 {
			attrs = append(attrs, keyTTFC.Float64(r.TimeToFirstChunk.Seconds()))
		}
		attrs = costAttributes(attrs, c.cost, c.start.Tenant)
		if err != nil {
			et := semconv.ErrorTypeOther.Value.AsString()
			if perr != nil {
				et = errorType(perr)
			}
			attrs = append(attrs, semconv.ErrorTypeKey.String(et))
			c.span.SetStatus(codes.Error, safeText(err))
		}
		c.span.SetAttributes(attrs...)
	}
	c.span.End()
	c.log(err, outcome, at)
}

// log writes the call's outcome: Debug for success, naming the deployment and the model that
// served; Error for a failure, naming each provider or deployment tried with its own kind,
// and in its attributes the route whose failure explains it (at, see outcomeRoute) with the
// model that route was asked for; Info for a call the caller canceled; Warn for a call a
// budget refused (budget_exhausted).
func (c *callTracker) log(err error, outcome string, at tryRoute) {
	l := c.t.logger
	level := slog.LevelDebug
	switch {
	case outcome == string(providers.KindCanceled):
		level = slog.LevelInfo // the caller's own choice, not a failure of anything steady calls
	case outcome == string(providers.KindBudgetExhausted):
		level = slog.LevelWarn // the application's own policy working, not a provider's failure
	case err != nil:
		level = slog.LevelError
	}
	if l == nil || !l.Enabled(c.ctx, level) {
		return
	}
	took := ms(time.Since(c.began))
	provider, deployment, model := at.provider, at.deployment, at.model
	switch {
	case err == nil && c.last.ResponseModel != "":
		model = c.last.ResponseModel // the model that served, as the server named it
	case at == tryRoute{}:
		model = c.start.Model // refused before any route was tried: the model it would have asked
	}
	// The message names a served call by the model that served it, a failed one as it was
	// asked (it goes on to list every route tried).
	what, named := string(c.start.Operation), model
	if err != nil {
		named = c.start.Model
	}
	if named != "" {
		what += " " + named
	}
	attrs := []slog.Attr{slog.String(LogProvider, provider), slog.String(LogDeployment, deployment),
		slog.String(LogOperation, string(c.start.Operation)), slog.String(LogModel, model),
		slog.String(LogOutcome, outcome), slog.Int(LogAttempts, c.attempts),
		slog.Int(LogFallbacks, c.fallbacks), slog.Int64(LogDurationMs, took.Milliseconds())}
	if c.start.Model != "" && c.start.Model != model {
		attrs = append(attrs, slog.String(LogRequestModel, c.start.Model))
	}
	if c.start.Policy != "" {
		attrs = append(attrs, slog.String(LogPolicy, c.start.Policy))
	}
	if c.start.RequestID != "" {
		attrs = append(attrs, slog.String(LogRequestID, c.start.RequestID))
	}
	attrs = append(attrs, c.start.Attributes...)
	msg := what + " served by " + deployment + " in " + took.String()
	if err != nil {
		attrs = append(attrs, slog.String(LogError, safeText(err)))
		var b strings.Builder
		b.WriteString(what)
		b.WriteString(" failed after ")
		b.WriteString(took.String())
		b.WriteString(": ")
		if len(c.failed) == 0 {
			b.WriteString(outcome) // refused before any provider was tried
		}
		for i, f := range c.failed {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(f.at.deployment)
			b.WriteString(" ")
			b.WriteString(string(f.err.Kind))
		}
		msg = b.String()
	}
	l.LogAttrs(c.ctx, level, msg, attrs...)
}

// asProviderError returns the *providers.Error in err's chain, or nil.
func asProviderError(err error) *providers.Error {
	if err == nil {
		return nil
	}
	var perr *providers.Error
	if errors.As(err, &perr) {
		return perr
	}
	return nil
}

// otelAttr converts a call's slog attribute (client.WithAttributes) to a span attribute:
// strings, numbers, booleans and durations (as seconds) keep their type, anything else is
// recorded as its text.
func otelAttr(a slog.Attr) attribute.KeyValue {
	k := attribute.Key(a.Key)
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return k.String(v.String())
	case slog.KindInt64:
		return k.Int64(v.Int64())
	case slog.KindUint64:
		return k.Int64(int64(v.Uint64()))
	case slog.KindFloat64:
		return k.Float64(v.Float64())
	case slog.KindBool:
		return k.Bool(v.Bool())
	case slog.KindDuration:
		return k.Float64(v.Duration().Seconds())
	default:
		return k.String(v.String())
	}
}

// deploymentOf is the deployment that handled try r: its own name, or the provider's when the
// tracker was fed by a client that does not set it.
func deploymentOf(r client.TryResult) string {
	if r.Deployment != "" {
		return r.Deployment
	}
	return r.Provider
}
