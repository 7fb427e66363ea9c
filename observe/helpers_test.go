package observe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/observe"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// sentinelKey is the API key of every provider in these tests: it must never reach a log
// record, a span or a metric.
const sentinelKey = "sk-SENTINEL-observe-5b7e1d"

// harness is a Telemetry over the OpenTelemetry SDK's in-memory reader and span recorder, with
// a JSON slog handler writing to a buffer at Debug level.
type harness struct {
	tel    *observe.Telemetry
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	logs   *syncBuffer
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder(), logs: &syncBuffer{}}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(h.reader))
	h.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(h.spans))
	t.Cleanup(func() {
		_ = mp.Shutdown(context.Background())
		_ = h.tp.Shutdown(context.Background())
	})
	logger := slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	tel, err := observe.New(observe.WithMeterProvider(mp), observe.WithTracerProvider(h.tp), observe.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	h.tel = tel
	return h
}

// point is one data point of a counter or a histogram.
type point struct {
	attrs attribute.Set
	sum   float64
	count uint64 // histograms only
}

// points returns the data points of the metric called name.
func (h *harness) points(t *testing.T, name string) []point {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := h.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var out []point
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != observe.ScopeName {
			t.Errorf("scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out = append(out, point{attrs: p.Attributes, sum: float64(p.Value)})
				}
			case metricdata.Sum[float64]:
				for _, p := range d.DataPoints {
					out = append(out, point{attrs: p.Attributes, sum: p.Value})
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out = append(out, point{attrs: p.Attributes, sum: p.Sum, count: p.Count})
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					out = append(out, point{attrs: p.Attributes, sum: float64(p.Value)})
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					out = append(out, point{attrs: p.Attributes, sum: float64(p.Sum), count: p.Count})
				}
			default:
				t.Fatalf("%s: unexpected data %T", name, m.Data)
			}
		}
	}
	return out
}

// value returns the sum of the point of metric name whose attributes are exactly attrs, and
// fails the test when there is none.
func (h *harness) value(t *testing.T, name string, attrs ...attribute.KeyValue) point {
	t.Helper()
	want := attribute.NewSet(attrs...)
	pts := h.points(t, name)
	for _, p := range pts {
		if p.attrs.Equals(&want) {
			return p
		}
	}
	var have []string
	for _, p := range pts {
		have = append(have, p.attrs.Encoded(attribute.DefaultEncoder()))
	}
	t.Fatalf("%s has no point {%s}; it has %q", name, want.Encoded(attribute.DefaultEncoder()), have)
	return point{}
}

// span returns the one ended span called name.
func (h *harness) span(t *testing.T, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range h.spans.Ended() {
		if s.Name() == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		var names []string
		for _, s := range h.spans.Ended() {
			names = append(names, s.Name())
		}
		t.Fatalf("%d spans called %q; ended spans: %q", len(found), name, names)
	}
	return found[0]
}

// attr returns the attribute key of a span (or span event), failing when it is missing.
func attr(t *testing.T, kvs []attribute.KeyValue, key string) attribute.Value {
	t.Helper()
	for _, kv := range kvs {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	t.Fatalf("no attribute %s in %v", key, kvs)
	return attribute.Value{}
}

func hasAttr(kvs []attribute.KeyValue, key string) bool {
	for _, kv := range kvs {
		if string(kv.Key) == key {
			return true
		}
	}
	return false
}

// events returns the span's events called name.
func events(s sdktrace.ReadOnlySpan, name string) []sdktrace.Event {
	var out []sdktrace.Event
	for _, e := range s.Events() {
		if e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// logRecord is one decoded JSON log line.
type logRecord map[string]any

func (r logRecord) str(key string) string { s, _ := r[key].(string); return s }

// records decodes the log buffer.
func (h *harness) records(t *testing.T) []logRecord {
	t.Helper()
	var out []logRecord
	for _, line := range strings.Split(strings.TrimSpace(h.logs.String()), "\n") {
		if line == "" {
			continue
		}
		var r logRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// withEvent returns the log records of one event kind.
func withEvent(rs []logRecord, kind resilience.EventType) []logRecord {
	var out []logRecord
	for _, r := range rs {
		if r.str(observe.LogEvent) == kind.String() {
			out = append(out, r)
		}
	}
	return out
}

// assertNoSecrets fails when text holds the sentinel key, a URL or a query string.
func assertNoSecrets(t *testing.T, what, text string) {
	t.Helper()
	for _, bad := range []string{sentinelKey, "SENTINEL", "http://", "https://", "api-version", "?"} {
		if strings.Contains(text, bad) {
			t.Errorf("%s contains %q:\n%s", what, bad, text)
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fastPolicy retries at once (1 ms backoff, no jitter, no budget) with generous limits.
func fastPolicy() resilience.Options {
	o := resilience.DefaultOptions()
	o.RetryBaseDelaySeconds = 0.001
	o.RetryUseJitter = false
	o.RetryBudgetPercent = 0
	o.TimeoutSeconds = 5
	o.StreamIdleTimeoutSeconds = 5
	return o
}

// openAIProvider adds an OpenAI provider named name that talks to s.
func openAIProvider(name string, s *mocks.Server, o resilience.Options) client.Option {
	return client.WithProvider(name, o, func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{Name: name, BaseURL: s.OpenAIBaseURL(), APIKey: sentinelKey, HTTPClient: hc, Model: "gpt-4o-mini"})
	})
}

// azureProvider adds an Azure OpenAI provider named name that talks to s: its URLs carry an
// api-version query, which must not reach the telemetry.
func azureProvider(name string, s *mocks.Server, o resilience.Options) client.Option {
	return client.WithProvider(name, o, func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{Name: name, Dialect: openai.Azure, BaseURL: s.URL(), APIKey: sentinelKey, HTTPClient: hc,
			Model: "gpt-4o-mini"})
	})
}

// anthropicProvider adds an Anthropic provider named name that talks to s.
func anthropicProvider(name string, s *mocks.Server, o resilience.Options) client.Option {
	return client.WithProvider(name, o, func(hc *http.Client) (providers.Provider, error) {
		return anthropic.New(anthropic.Config{Name: name, BaseURL: s.AnthropicBaseURL(), APIKey: sentinelKey, HTTPClient: hc,
			Model: "claude-haiku-4-5"})
	})
}

func newClient(t *testing.T, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func hello() *providers.ChatRequest {
	return &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: "hello there"}}}
}

// eventually polls cond until it holds or a generous deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
