package observe

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/steadyllm/steady/resilience"
)

// Telemetry turns what steady does into OpenTelemetry metrics and traces and, with WithLogger,
// log/slog records. It uses only the OpenTelemetry API: the application chooses the SDK and
// the exporters, and without an SDK every instrument and span is a no-op.
//
// Wire it once: on the client with client.WithTelemetry(t), or on a bare pipeline with
// t.PipelineOption(). A Telemetry may serve many clients and pipelines at once; it is safe
// for concurrent use.
type Telemetry struct {
	inst     *instruments
	tracer   trace.Tracer
	logger   *slog.Logger // nil: no log records
	observer resilience.Observer
}

// Option configures a Telemetry.
type Option func(*settings)

type settings struct {
	meters  metric.MeterProvider
	tracers trace.TracerProvider
	logger  *slog.Logger
}

// WithMeterProvider sets where the metrics go. The default (and nil) is the global provider
// (otel.GetMeterProvider), which forwards to whatever provider the application installs with
// otel.SetMeterProvider, even later.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(s *settings) { s.meters = mp }
}

// WithTracerProvider sets where the spans go. The default (and nil) is the global provider
// (otel.GetTracerProvider).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(s *settings) { s.tracers = tp }
}

// WithLogger also writes every pipeline event, fallback and call outcome to logger, as
// NewSlogObserver describes. The default (and nil) is no logging.
func WithLogger(l *slog.Logger) Option {
	return func(s *settings) { s.logger = l }
}

// New builds a Telemetry: it creates the instruments (see the Metric… names) on the meter
// provider and a tracer on the tracer provider, both under ScopeName. It fails only when the
// meter provider refuses an instrument.
func New(opts ...Option) (*Telemetry, error) {
	var s settings
	for _, o := range opts {
		if o == nil {
			continue // a nil option is no option
		}
		o(&s)
	}
	if s.meters == nil {
		s.meters = otel.GetMeterProvider()
	}
	if s.tracers == nil {
		s.tracers = otel.GetTracerProvider()
	}
	inst, err := newInstruments(s.meters.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL)))
	if err != nil {
		return nil, err
	}
	t := &Telemetry{
		inst:   inst,
		tracer: s.tracers.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL)),
		logger: s.logger,
	}
	t.observer = t.PipelineEvent
	return t, nil
}

// Observer returns the resilience.Observer that records a pipeline's events: the
// llm_resilience_* counters, span events on the span in the event's context, and log records
// with WithLogger. Combine it with another observer with Join.
func (t *Telemetry) Observer() resilience.Observer { return t.observer }

// PipelineOption returns the option that wires t into a bare pipeline:
//
//	p, err := resilience.New(opts, resilience.WithName("openai"), tel.PipelineOption())
//
// It is resilience.OnEvent(t.Observer()), so it replaces any other OnEvent given before it.
func (t *Telemetry) PipelineOption() resilience.Option { return resilience.OnEvent(t.observer) }

// PipelineEvent records one pipeline event; see Observer. It makes *Telemetry a
// client.Telemetry.
func (t *Telemetry) PipelineEvent(e resilience.Event) {
	// The descriptors decide what each sink records: attempt events, frequent and already
	// summed up by the call's span and duration, have no counter and no span event.
	ctx := e.Context
	if ctx == nil {
		ctx = context.Background()
	}
	t.inst.event(ctx, e)
	spanEvent(e)
	if t.logger != nil {
		logEvent(t.logger, e)
	}
}

// Join returns an observer that passes each event to every non-nil observer in turn, so a
// pipeline can feed Telemetry and a program's own observer at once.
func Join(observers ...resilience.Observer) resilience.Observer {
	var live []resilience.Observer
	for _, o := range observers {
		if o != nil {
			live = append(live, o)
		}
	}
	switch len(live) {
	case 0:
		return nil
	case 1:
		return live[0]
	}
	return func(e resilience.Event) {
		for _, o := range live {
			o(e)
		}
	}
}
