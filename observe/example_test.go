package observe_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
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

// Wiring a client: one option, here over the OpenTelemetry SDK's in-memory reader and span
// recorder (an application would install its exporters instead).
func Example() {
	fake := mocks.NewServer(mocks.WithScript(mocks.RateLimited(10*time.Millisecond), mocks.OK()))
	defer fake.Close()

	reader := sdkmetric.NewManualReader()
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	spans := tracetest.NewSpanRecorder()
	tracers := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	// docs:begin client
	tel, err := observe.New(observe.WithMeterProvider(meters), observe.WithTracerProvider(tracers))
	if err != nil {
		panic(err)
	}
	c, err := client.New(
		client.WithProvider("openai", resilience.DefaultOptions(), func(hc *http.Client) (providers.Provider, error) {
			return openai.New(openai.Config{BaseURL: fake.OpenAIBaseURL(), APIKey: "sk-example", HTTPClient: hc, Model: "gpt-4o-mini"})
		}),
		client.WithTelemetry(tel),
	)
	// docs:end client
	if err != nil {
		panic(err)
	}
	if _, err := c.Chat(context.Background(), &providers.ChatRequest{
		Messages: []providers.Message{{Role: providers.RoleUser, Content: "Hi"}},
	}); err != nil {
		panic(err)
	}

	span := spans.Ended()[0]
	for _, ev := range span.Events() {
		set := attribute.NewSet(ev.Attributes...)
		fmt.Printf("span %q, event %s: %v\n", span.Name(), ev.Name, set.Encoded(attribute.DefaultEncoder()))
	}
	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
			for _, p := range sum.DataPoints {
				fmt.Printf("%s{%s} %d\n", m.Name, p.Attributes.Encoded(attribute.DefaultEncoder()), p.Value)
			}
		}
	}
	// Output:
	// span "chat gpt-4o-mini", event cooldown: steady.delay_ms=10,steady.provider=openai,steady.route=gpt-4o-mini,steady.server_hint=true
	// span "chat gpt-4o-mini", event retry: http.response.status_code=429,steady.attempt=1,steady.delay_ms=10,steady.max_attempts=4,steady.provider=openai,steady.reason=status 429,steady.route=gpt-4o-mini,steady.server_hint=true
	// llm_resilience_retry_total{attempt=1,model=gpt-4o-mini,provider=openai} 1
	// llm_resilience_cooldown_total{model=gpt-4o-mini,provider=openai} 1
	// llm_resilience_bulkhead_admitted_total{priority=default,provider=openai} 1
}

// Logs alone, for a bare pipeline: the observer is the pipeline's OnEvent.
func ExampleNewSlogObserver() {
	fake := mocks.NewServer(mocks.WithScript(mocks.Status(503), mocks.OK()))
	defer fake.Close()

	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		Level: slog.LevelWarn, // Debug would add every attempt
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // a stable output for the example
			}
			return a
		},
	}))
	opts := resilience.DefaultOptions()
	opts.RetryBaseDelaySeconds, opts.RetryUseJitter = 0.001, false
	// docs:begin slog
	p, err := resilience.New(opts, resilience.WithName("openai"), resilience.OnEvent(observe.NewSlogObserver(logger)))
	// docs:end slog
	if err != nil {
		panic(err)
	}
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	hc := &http.Client{Transport: p.Wrap(base)}
	req, _ := http.NewRequest(http.MethodPost, fake.OpenAIBaseURL()+"/chat/completions",
		strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}]}`))
	req.Header.Set("Authorization", "Bearer sk-example")
	resp, err := hc.Do(req)
	if err != nil {
		panic(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	// Output:
	// level=WARN msg="attempt 1 of 4 for openai failed (status 503); next attempt in 1ms (backoff)" provider=openai event=retry_scheduled attempt=1 max_attempts=4 status=503 delay_ms=1 server_hint=false reason="status 503"
}
