package client

import (
	"context"
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
	StartCall(ctx context.Context, c providers.CallStart) (context.Context, providers.CallTracker)
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

// startCall starts the telemetry of a logical call whose first provider is asked for model.
func (c *Client) startCall(ctx context.Context, op providers.Operation, stream bool, model string,
	maxTokens int, temperature, topP *float64) (context.Context, providers.CallTracker) {
	e := c.entries[c.chain[0]]
	return c.telemetry.StartCall(ctx, providers.CallStart{
		Operation: op, Stream: stream, Provider: e.name, System: e.system,
		Model: e.telemetryModel(c.modelFor(e, model, true)), MaxTokens: maxTokens, Temperature: temperature, TopP: topP,
	})
}

// telemetryModel fills in the provider's own default model, for telemetry, when the client
// asks it for none.
func (e *entry) telemetryModel(model string) string {
	if model == "" {
		return e.providerModel
	}
	return model
}

// tryResult describes the try of provider e, asked for model, that started at start and ended
// with perr (nil for success).
func tryResult(e *entry, model string, start time.Time, info *resilience.CallInfo, perr *providers.Error) providers.TryResult {
	r := providers.TryResult{Provider: e.name, System: e.system, Model: e.telemetryModel(model),
		Err: perr, Duration: time.Since(start)}
	if info != nil {
		r.Attempts = info.Attempts
	}
	return r
}

// nextAfter returns the provider after the i-th of the chain that can serve need, "" for
// none.
func (c *Client) nextAfter(i int, need providers.Capabilities) string {
	for _, name := range c.chain[i+1:] {
		if c.entries[name].caps.Has(need) {
			return name
		}
	}
	return ""
}
