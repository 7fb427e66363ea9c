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
// "{operation} {model}" ("chat gpt-4o-mini"), with the GenAI attributes of the chain's first
// provider. The returned context carries the span, so the pipeline's events become its span
// events. The returned tracker records each provider's try (metrics, fallback events) and,
// at End, the outcome, the provider that served, the attempts and the usage, then ends the
// span. It makes *Telemetry a client.Telemetry.
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
	// failed lists the tries that failed, each deployment with its own kind, for the log
	// record of a call that failed (allocated only then).
	failed []failedTry
	// cost is the call's cost, summed over its tries.
	cost providers.CallCost
}

// failedTry is one provider's failure within a call.
type failedTry struct {
	deployment string
	kind       providers.ErrorKind
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
	if r.Err != nil && c.t.logger != nil {
		c.failed = append(c.failed, failedTry{deployment: deploymentOf(r), kind: r.Err.Kind})
	}
	if r.Err == nil || r.Next == "" {
		return
	}
	c.fallbacks++
	if c.span.IsRecording() {
		c.span.AddEvent(SpanEventFallback, trace.WithAttributes(
			KeySpanProvider.String(r.Provider),
			KeySpanDeployment.String(deploymentOf(r)), KeySpanDeployment.String(deploymentOf(r)), keyEvFallbackTo.String(r.Next),
			semconv.ErrorTypeKey.String(errorType(r.Err)), KeySpanAttempts.Int(r.Attempts)))
	}
	if l := c.t.logger; l != nil && l.Enabled(c.ctx, slog.LevelWarn) {
		l.LogAttrs(c.ctx, slog.LevelWarn, "falling back from "+deploymentOf(r)+" to "+r.Next+" after "+string(r.Err.Kind),
			slog.String(LogProvider, r.Provider), slog.String(LogDeployment, deploymentOf(r)), slog.String(LogFallbackTo, r.Next),
			slog.String(LogErrorKind, string(r.Err.Kind)), slog.Int(LogAttempts, r.Attempts))
	}
}

// hedgeSpan records try r of a hedged call, which did outcome: an event on the call's span,
// and a span of its own under it ("hedge <deployment>", from the try's start to its end),
// which the call's span links to, so a trace shows each hedge beside the try that served.
func (c *callTracker) hedgeSpan(r client.TryResult, outcome string) {
	attrs := []attribute.KeyValue{KeySpanProvider.String(r.Provider), KeySpanDeployment.String(deploymentOf(r)),
		KeyOutcome.String(outcome), KeySpanAttempts.Int(r.Attempts)}
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
			slog.String(LogProvider, r.Provider), slog.String(LogDeployment, r.Deployment),
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
	switch {
	case perr != nil:
		outcome = string(perr.Kind)
		var te *resilience.TimeoutError
		if perr.Kind == providers.KindTimeout && errors.As(perr, &te) && te.Limit == resilience.TimeoutCall {
			c.t.inst.callDeadline(c.ctx, r.Provider)
		}
	case err != nil:
		outcome = string(providers.KindUnknown)
	case r.Closed:
		outcome = OutcomeClosed
	}
	if c.span.IsRecording() {
		system := providerName(r.System)
		attrs := make([]attribute.KeyValue, 0, 14)
		attrs = append(attrs,
			semconv.GenAIProviderNameKey.String(system),
			keyGenAISystem.String(genAISystem(system)),
			KeySpanProvider.String(r.Provider),
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
	c.log(err, outcome)
}

// log writes the call's outcome: Debug for success, naming the deployment and the model that
// served; Error for a failure, naming each provider or deployment tried with its own kind;
// Info for a call the caller canceled; Warn for a call a budget refused (budget_exhausted).
func (c *callTracker) log(err error, outcome string) {
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
	r := &c.last
	took := ms(time.Since(c.began))
	model := c.start.Model
	provider, deployment := r.Provider, deploymentOf(*r)
	if err == nil {
		// The model that served: as the server named it, else as it was asked (a fallback
		// asks its own model).
		if model = r.ResponseModel; model == "" {
			model = r.Model
		}
	} else if perr := asProviderError(err); perr != nil && perr.Provider != "" {
		// The failure that explains the outcome is not always the last try's.
		provider, deployment = perr.Provider, perr.Provider
		if owner, _, ok := strings.Cut(perr.Provider, "/"); ok {
			provider = owner // a deployment's failure: "<provider>/<deployment>"
		}
	}
	what := string(c.start.Operation)
	if model != "" {
		what += " " + model
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
			b.WriteString(f.deployment)
			b.WriteString(" ")
			b.WriteString(string(f.kind))
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
