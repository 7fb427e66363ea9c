package client

import (
	"context"
	"log/slog"
	"time"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// Telemetry receives what the client does, for metrics, traces and logs: the start and end of
// every logical call (Chat, ChatStream, Embed), how each provider of the fallback chain
// handled it, and every event of every provider's resilience pipeline. *observe.Telemetry
// implements it with OpenTelemetry and log/slog; the interface lets the client stay free of
// both.
//
// Implementations must be safe for concurrent use and quick: they run on the goroutine of the
// call.
type Telemetry interface {
	// StartCall is called as a logical call begins, before its first provider is tried. The
	// returned context is used for every provider the call tries, so what it carries (a span)
	// reaches the pipeline's events through resilience.Event.Context. It must return a
	// non-nil CallTracker.
	StartCall(ctx context.Context, c CallStart) (context.Context, CallTracker)
	// PipelineEvent receives every event of every provider's pipeline; Event.Pipeline is the
	// provider's name.
	PipelineEvent(e resilience.Event)
}

// WithTelemetry sends the client's calls and its pipelines' events to t, typically an
// *observe.Telemetry. Without it (or with nil) the client reports nothing and pays nothing.
// It works alongside WithObserver: both receive the pipeline events.
func WithTelemetry(t Telemetry) Option {
	return func(b *builder) error {
		b.c.telemetry = t
		return nil
	}
}

// Operation is the kind of a logical call, named as the GenAI semantic conventions name
// gen_ai.operation.name.
type Operation string

// The operations of the client.
const (
	OperationChat       Operation = "chat"
	OperationEmbeddings Operation = "embeddings"
)

// CallStart describes a logical call of the client as it begins, for telemetry. It holds the
// request's parameters, never its messages.
type CallStart struct {
	Operation Operation
	Stream    bool // ChatStream
	// Provider, System and Model are those of the first route of the call's chain that may
	// serve it (after a budget's downgrade, which may change the model and the chain): its
	// provider's name and GenAI system, and the model it is asked for (the deployment's own
	// when it has one, the provider's default when the call names none; "" when nobody names
	// one). A provider that cannot take the call (embeddings asked of one that has none) is
	// passed over, as the walk passes it over; when no route may serve the call, the chain's
	// first provider. Each try's own route is in its TryResult.
	Provider, System, Model string
	MaxTokens               int      // 0 when unset
	Temperature, TopP       *float64 // nil when unset
	// Policy is the named policy the call runs under (WithPolicy), "" for each provider's own.
	Policy string
	// Priority is the call's own class (WithPriority), "" for its policy's.
	Priority resilience.Priority
	// RequestID is the call's own ID (WithRequestID), "" when none.
	RequestID string
	// Attributes are the call's own telemetry attributes (WithAttributes).
	Attributes []slog.Attr
	// Tenant is the call's tenant (WithTenant), "" when none.
	Tenant string
	// Budget is what the client's budgets decided for the call (cost.Action's name: allow,
	// warn, downgrade, refuse), "" when no budget counts it; ShadowBudget what budgets in
	// shadow mode would have decided, "" when none is in shadow mode.
	Budget, ShadowBudget string
}

// TryResult is how one provider of the fallback chain handled a logical call.
type TryResult struct {
	Provider, System, Model string // as in CallStart, for this provider
	// Deployment is the deployment that handled the try, "<provider>/<deployment>", or the
	// provider's name when it has one (see WithDeployments).
	Deployment string
	// ResponseModel and ResponseID are the provider's model and response ID, when it says.
	ResponseModel, ResponseID string
	FinishReason              providers.FinishReason
	// Usage is the provider's token count; zero when it reported none.
	Usage providers.Usage
	// Err is the failure, nil when the provider served the call.
	Err *providers.Error
	// Attempts is the number of HTTP attempts the resilience pipeline made, retries
	// included; 0 when it rejected the call before any (open circuit, full bulkhead).
	Attempts int
	// Duration is the time from the start of the try to its end: for a stream, to the end of
	// the stream.
	Duration time.Duration
	// TimeToFirstChunk is, for a stream, the time from the start of the try until its first
	// content arrived; 0 for other calls and for streams that failed before any content.
	TimeToFirstChunk time.Duration
	// Closed reports a stream that the caller closed before it ended.
	Closed bool
	// Hedge reports a try sent as a hedge (resilience.Options.HedgeAfterSeconds); Lost, a try
	// cancelled because another try of the hedged call delivered first (Err is nil: it did
	// not fail).
	Hedge, Lost bool
	// Next is the provider the chain tries after this failure, "" when it stops here.
	Next string
	// Cost is what the try cost at the client's prices (WithPrices): Serving for the try that
	// served, Abandoned and Estimated for one that failed after its server counted or
	// delivered something; zero without prices.
	Cost providers.CallCost
}

// CallTracker follows one logical call for telemetry. The client calls TryDone once for each
// provider it tried, in chain order, then End once. Both are called on the goroutine of the
// call, except for a stream that ends by Close from another goroutine.
type CallTracker interface {
	// TryDone reports how one provider handled the call.
	TryDone(r TryResult)
	// End reports the end of the call: err is nil when a provider served it, otherwise the
	// error the call returned. A stream's call ends when the stream does (Done, a failure, or
	// Close).
	End(err error)
}

// pipelineObserver returns the observer the client gives every pipeline: WithObserver's
// function, the telemetry's, both, or nil for none.
func (c *Client) pipelineObserver() resilience.Observer {
	switch {
	case c.telemetry == nil:
		return c.observer
	case c.observer == nil:
		return c.telemetry.PipelineEvent
	}
	fn, t := c.observer, c.telemetry
	return func(e resilience.Event) {
		fn(e)
		t.PipelineEvent(e)
	}
}

// startCall starts the telemetry of the logical call op, which asks a of its routes: named
// after the first route of its chain that may serve it (see CallStart).
func (c *Client) startCall(ctx context.Context, o *callOptions, pl plan, op Operation, stream bool, a ask,
	maxTokens int, temperature, topP *float64) (context.Context, CallTracker) {
	cs := CallStart{
		Operation: op, Stream: stream, MaxTokens: maxTokens, Temperature: temperature, TopP: topP,
		Budget: pl.budget, ShadowBudget: pl.shadowBudget,
	}
	w := walk{c: c, ask: a, cur: cursor{chain: pl.chain}}
	if r, ok := w.first(); ok {
		cs.Provider, cs.System, cs.Model = r.e.name, r.e.system, r.e.telemetryModel(r.model)
	} else {
		e := c.entries[pl.chain[0]]
		cs.Provider, cs.System, cs.Model = e.name, e.system, e.telemetryModel(c.modelFor(e, a.model, true))
	}
	if o != nil {
		cs.Policy, cs.RequestID, cs.Attributes = o.policy, o.requestID, o.attrs
		cs.Priority, cs.Tenant = o.priority, o.tenantOf()
	}
	return c.telemetry.StartCall(ctx, cs)
}

// telemetryModel fills in the provider's own default model, for telemetry, when the client
// asks it for none.
func (e *entry) telemetryModel(model string) string {
	if model == "" {
		return e.providerModel
	}
	return model
}

// tryResult describes the try of deployment d of provider e, asked for model, that took took
// and ended with perr (nil for success).
func tryResult(e *entry, d *deployment, model string, took time.Duration, info *resilience.CallInfo, perr *providers.Error) TryResult {
	r := TryResult{Provider: e.name, Deployment: d.name, System: e.system, Model: e.telemetryModel(model),
		Err: perr, Duration: took}
	if info != nil {
		r.Attempts = info.Attempts
	}
	return r
}
