// Command observability runs the quickstart's scenario — the embedded fake LLM server answers
// 429 (with retry-after-ms and Retry-After), then 503, then the answer — through a client wired
// to OpenTelemetry and log/slog with one option, and shows what an on-call engineer would see:
// the log records on stderr, then the metrics and the trace on stdout.
//
//	go run ./examples/observability
//
// The OpenTelemetry SDK here keeps everything in memory (a manual metric reader, a span
// recorder) so the program can print it; an application installs its own exporters (OTLP,
// Prometheus…) on the providers instead and changes nothing else.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/observe"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

func main() {
	if err := run(context.Background(), os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "observability:", err)
		os.Exit(1)
	}
}

// run makes one call through the scripted failures, writing log records to logs and the
// answer, the metrics and the trace to out.
func run(ctx context.Context, out, logs io.Writer) error {
	fake := mocks.NewServer(
		mocks.WithReply("Hello from the fake LLM server!"),
		mocks.WithScript(
			mocks.RateLimited(200*time.Millisecond), // retry-after-ms: 200, Retry-After: 1
			mocks.Status(http.StatusServiceUnavailable),
			mocks.OK(),
		),
	)
	defer fake.Close()

	// The application's OpenTelemetry setup: here in memory, so that it can be printed.
	reader := sdkmetric.NewManualReader()
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	spans := tracetest.NewSpanRecorder()
	tracers := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer func() {
		_ = meters.Shutdown(context.Background())
		_ = tracers.Shutdown(context.Background())
	}()
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))

	// steady's side: one Telemetry, one client option.
	tel, err := observe.New(observe.WithMeterProvider(meters), observe.WithTracerProvider(tracers), observe.WithLogger(logger))
	if err != nil {
		return err
	}
	policy := resilience.DefaultOptions()
	policy.RetryBaseDelaySeconds = 0.05 // keep the demo short; the default is 1 s
	c, err := client.New(
		client.WithProvider("openai", policy, func(hc *http.Client) (providers.Provider, error) {
			return openai.New(openai.Config{Name: "openai", BaseURL: fake.OpenAIBaseURL(),
				APIKey: "sk-observability-not-a-real-key", HTTPClient: hc, Model: "gpt-4o-mini"})
		}),
		client.WithTelemetry(tel),
	)
	if err != nil {
		return err
	}

	resp, err := c.Chat(ctx, &providers.ChatRequest{
		Messages:  []providers.Message{{Role: providers.RoleUser, Content: "Say hello in one short sentence."}},
		MaxTokens: 50,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "answer from %s: %q\n\n", resp.Provider, resp.Message.Content)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		return err
	}
	printMetrics(out, rm)
	fmt.Fprintln(out)
	printSpans(out, spans.Ended())
	return nil
}

// printMetrics writes every data point, under its instrument's name: value, attributes.
func printMetrics(out io.Writer, rm metricdata.ResourceMetrics) {
	type row struct{ name, attrs, value string }
	var rows []row
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			unit := strings.Trim(m.Unit, "{}")
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					rows = append(rows, row{m.Name, encode(p.Attributes), fmt.Sprint(p.Value)})
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					rows = append(rows, row{m.Name, encode(p.Attributes), fmt.Sprintf("count=%d sum=%.3f%s", p.Count, p.Sum, unit)})
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					rows = append(rows, row{m.Name, encode(p.Attributes), fmt.Sprintf("count=%d sum=%d %s", p.Count, p.Sum, unit)})
				}
			}
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].name != rows[j].name {
			return rows[i].name < rows[j].name
		}
		return rows[i].attrs < rows[j].attrs
	})
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	for i, r := range rows {
		if i == 0 || rows[i-1].name != r.name {
			fmt.Fprintln(tw, r.name)
		}
		fmt.Fprintf(tw, "  %s\t%s\n", r.value, strings.ReplaceAll(r.attrs, ",", " "))
	}
	_ = tw.Flush()
}

// printSpans writes each span with its attributes and events.
func printSpans(out io.Writer, spans []sdktrace.ReadOnlySpan) {
	for _, s := range spans {
		fmt.Fprintf(out, "span %q (%s, %s, status %s)\n", s.Name(), s.SpanKind(),
			s.EndTime().Sub(s.StartTime()).Round(time.Millisecond), s.Status().Code)
		attrs := append([]attribute.KeyValue(nil), s.Attributes()...)
		sort.Slice(attrs, func(i, j int) bool { return attrs[i].Key < attrs[j].Key })
		for _, kv := range attrs {
			fmt.Fprintf(out, "  %s = %s\n", kv.Key, kv.Value.Emit())
		}
		for _, e := range s.Events() {
			fmt.Fprintf(out, "  event %-8s +%-6s %s\n", e.Name, e.Time.Sub(s.StartTime()).Round(time.Millisecond),
				encode(attribute.NewSet(e.Attributes...)))
		}
	}
}

func encode(set attribute.Set) string { return set.Encoded(attribute.DefaultEncoder()) }
