package observe

import (
	"go.opentelemetry.io/otel/attribute"
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
	SpanEventBulkheadQueued   = "bulkhead_queued" // no slot was free: the call waits for one
	SpanEventCircuitChanged   = "circuit_state_changed"
	SpanEventFallback         = "fallback"
	SpanEventCooldown         = "cooldown"          // a 429 paused the provider
	SpanEventCooldownWaited   = "cooldown_waited"   // the call waited for the pause to end
	SpanEventCooldownRejected = "cooldown_rejected" // the call could not wait: not sent
	SpanEventSharedState      = "shared_state"      // the shared state failed or recovered
	// SpanEventHedge marks a try of a hedged call that did not simply serve it: a hedge sent
	// (and how it ended) or a try cancelled because another delivered first.
	SpanEventHedge = "hedge"
)

// spanEvent adds a pipeline event to the span in the event's context, if that span records:
// the client's call span, or whatever span the application started around a bare pipeline
// (an otelhttp transport's, say). Attempt events are left out: the span counts attempts.
func spanEvent(e resilience.Event) {
	if e.Context == nil {
		return
	}
	d := describe(e)
	if d == nil || d.span == "" {
		return
	}
	span := trace.SpanFromContext(e.Context)
	if !span.IsRecording() {
		return
	}
	fs := d.collect(e)
	attrs := make([]attribute.KeyValue, 0, fs.n+2)
	attrs = append(attrs, KeySpanProvider.String(e.Pipeline))
	if e.Route != "" {
		attrs = append(attrs, KeySpanRoute.String(e.Route))
	}
	for _, v := range fs.list[:fs.n] {
		if v.f.span == "" {
			continue
		}
		switch v.kind {
		case 'i':
			attrs = append(attrs, v.f.span.Int64(v.i))
		case 's':
			attrs = append(attrs, v.f.span.String(v.s))
		case 'b':
			attrs = append(attrs, v.f.span.Bool(v.b))
		}
	}
	span.AddEvent(d.span, trace.WithAttributes(attrs...))
}
