package observe_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/observe"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

// completion is a canned OpenAI chat completion.
const completion = `{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello!"},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}`

// cannedTransport answers every request with the canned completion, in memory, so the
// benchmarks measure the client and its telemetry rather than a network.
type cannedTransport struct{}

func (cannedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		_ = req.Body.Close()
	}
	return &http.Response{
		StatusCode:    http.StatusOK,
		Status:        "200 OK",
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(strings.NewReader(completion)),
		ContentLength: int64(len(completion)),
		Request:       req,
	}, nil
}

func benchClient(b *testing.B, opts ...client.Option) *client.Client {
	b.Helper()
	all := append([]client.Option{
		client.WithProvider("openai", resilience.DefaultOptions(), func(hc *http.Client) (providers.Provider, error) {
			return openai.New(openai.Config{Name: "openai", APIKey: "sk-bench", HTTPClient: hc, Model: "gpt-4o-mini"})
		}),
		client.WithBaseTransport(cannedTransport{}),
	}, opts...)
	c, err := client.New(all...)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkChatTelemetry compares a successful Chat with no telemetry (the default), with
// observe.New over the OpenTelemetry no-op providers, and with the SDK (a meter provider
// with a manual reader that is never collected, a tracer provider that samples every span
// and exports none).
func BenchmarkChatTelemetry(b *testing.B) {
	mustNew := func(opts ...observe.Option) *observe.Telemetry {
		t, err := observe.New(opts...)
		if err != nil {
			b.Fatal(err)
		}
		return t
	}
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tracers := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	b.Cleanup(func() {
		_ = meters.Shutdown(context.Background())
		_ = tracers.Shutdown(context.Background())
	})
	for _, bc := range []struct {
		name string
		opts []client.Option
	}{
		{"none", nil},
		{"noop", []client.Option{client.WithTelemetry(mustNew(
			observe.WithMeterProvider(metricnoop.NewMeterProvider()), observe.WithTracerProvider(tracenoop.NewTracerProvider())))}},
		{"sdk", []client.Option{client.WithTelemetry(mustNew(
			observe.WithMeterProvider(meters), observe.WithTracerProvider(tracers)))}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := benchClient(b, bc.opts...)
			req := &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: "Hi"}}}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := c.Chat(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPipelineObserver measures the observer on a bare pipeline's successful call, whose
// only events are an attempt started and finished: what Telemetry costs on the hot path.
func BenchmarkPipelineObserver(b *testing.B) {
	noop, err := observe.New(observe.WithMeterProvider(metricnoop.NewMeterProvider()),
		observe.WithTracerProvider(tracenoop.NewTracerProvider()))
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		opts []resilience.Option
	}{
		{"none", nil},
		{"telemetry", []resilience.Option{noop.PipelineOption()}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p, err := resilience.New(resilience.DefaultOptions(), bc.opts...)
			if err != nil {
				b.Fatal(err)
			}
			hc := &http.Client{Transport: p.Wrap(cannedTransport{})}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				req, _ := http.NewRequest(http.MethodPost, "http://llm.invalid/v1/chat/completions", strings.NewReader("{}"))
				resp, err := hc.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
		})
	}
}
