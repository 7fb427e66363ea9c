package observe

import (
	"time"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/steadyllm/steady/resilience"
)

// The names of the span events added to the span of the call an event belongs to.
const (
	SpanEventRetry            = "retry"
	SpanEventRetryGaveUp      = "retry_gave_up"
	SpanEventTimeout          = "timeout"
	SpanEventCircuitRejected  = "circuit_rejected"
	SpanEventBulkheadRejected = "bulkhead_rejected"
	SpanEventCircuitChanged   = "circuit_state_changed"
	SpanEventFallback         = "fallback"
)

// spanEvent adds a pipeline event to the span in the event's context, if that span records:
// the client's call span, or whatever span the application started around a bare pipeline
// (an otelhttp transport's, say). Attempt events are left out: the span counts attempts.
func spanEvent(e resilience.Event) {
	if e.Context == nil {
		return
	}
	span := trace.SpanFromContext(e.Context)
	if !span.IsRecording() {
		return
	}
	provider := KeySpanProvider.String(e.Pipeline)
	var name string
	var attrs []attribute.KeyValue
	switch e.Type {
	case resilience.EventRetryScheduled:
		name = SpanEventRetry
		attrs = []attribute.KeyValue{provider, keyEvAttempt.Int(e.Attempt), keyEvMaxAttempts.Int(e.MaxAttempts),
			keyEvDelayMs.Int64(e.Delay.Round(time.Millisecond).Milliseconds()), keyEvServerHint.Bool(e.ServerHint), keyEvReason.String(e.Reason)}
	case resilience.EventGaveUp:
		name = SpanEventRetryGaveUp
		attrs = []attribute.KeyValue{provider, keyEvAttempt.Int(e.Attempt), keyEvReason.String(string(e.GaveUp))}
		if e.Delay > 0 {
			attrs = append(attrs, keyEvDelayMs.Int64(e.Delay.Round(time.Millisecond).Milliseconds()), keyEvServerHint.Bool(true))
		}
	case resilience.EventTimeout:
		name = SpanEventTimeout
		attrs = []attribute.KeyValue{provider, keyEvTimeout.String(string(e.Timeout)), keyEvDelayMs.Int64(e.Delay.Round(time.Millisecond).Milliseconds())}
	case resilience.EventBreakerRejected:
		name = SpanEventCircuitRejected
		attrs = []attribute.KeyValue{provider, keyEvState.String(e.To.String())}
		if e.Delay > 0 {
			attrs = append(attrs, keyEvDelayMs.Int64(e.Delay.Round(time.Millisecond).Milliseconds()))
		}
	case resilience.EventBulkheadRejected:
		name = SpanEventBulkheadRejected
		attrs = []attribute.KeyValue{provider, keyEvWaitedMs.Int64(e.Duration.Round(time.Millisecond).Milliseconds())}
	case resilience.EventBreakerStateChanged:
		name = SpanEventCircuitChanged
		attrs = []attribute.KeyValue{provider, keyEvFrom.String(e.From.String()), keyEvTo.String(e.To.String())}
	default:
		return
	}
	if e.Status != 0 {
		attrs = append(attrs, semconv.HTTPResponseStatusCode(e.Status))
	}
	span.AddEvent(name, trace.WithAttributes(attrs...))
}
