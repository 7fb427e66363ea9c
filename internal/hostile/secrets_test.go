package hostile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/health"
	"github.com/steadyllm/steady/observe"
	"github.com/steadyllm/steady/providers"
)

// echo is a way for a server to put the key in what it answers.
type echo struct {
	name  string
	ops   []string
	serve func(w http.ResponseWriter, r *http.Request, k kind)
}

// envelope writes the kind's error envelope with the key in every field, and in the
// request-id headers.
func envelope(w http.ResponseWriter, k kind, status int, typ string) {
	w.Header().Set("X-Request-Id", "req_"+sentinel)
	w.Header().Set("Request-Id", sentinel)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if k.isAnthropic() {
		fmt.Fprintf(w, `{"type":"error","error":{"type":"%s %s","message":"key %s rejected","details":{"error_code":"%s"}},"request_id":"%s"}`,
			typ, sentinel, sentinel, sentinel, sentinel)
		return
	}
	fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s","type":"%s %s","param":"%s","code":"%s"}}`,
		sentinel, typ, sentinel, sentinel, sentinel)
}

var echoes = func() []echo {
	var es []echo
	for _, st := range []struct {
		status int
		typ    string
	}{
		{400, "invalid_request_error"}, {401, "authentication_error"}, {403, "permission_error"},
		{404, "not_found_error"}, {413, "request_too_large"}, {422, "invalid_request_error"},
		{429, "rate_limit_error"}, {429, "insufficient_quota"}, {500, "api_error"}, {502, "api_error"},
		{503, "api_error"}, {529, "overloaded_error"}, {400, "content_filter"}, {400, "context_length_exceeded"},
	} {
		st := st
		es = append(es, echo{fmt.Sprintf("envelope %d %s", st.status, st.typ), []string{"chat", "stream", "embed"},
			func(w http.ResponseWriter, r *http.Request, k kind) { envelope(w, k, st.status, st.typ) }})
	}
	return append(es,
		echo{"plain text body, key across the message cut", []string{"chat", "stream", "embed"}, func(w http.ResponseWriter, _ *http.Request, _ kind) {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(502)
			fmt.Fprint(w, strings.Repeat("x", 190)+" key="+sentinel)
		}},
		echo{"HTML page", []string{"chat"}, func(w http.ResponseWriter, _ *http.Request, _ kind) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(503)
			fmt.Fprint(w, "<html>"+sentinel+"</html>")
		}},
		echo{"200 envelope", []string{"chat", "stream", "embed"}, func(w http.ResponseWriter, r *http.Request, k kind) { envelope(w, k, 200, "api_error") }},
		echo{"200 non-answer", []string{"chat", "embed"}, func(w http.ResponseWriter, _ *http.Request, _ kind) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Request-Id", sentinel)
			fmt.Fprintf(w, `{"note":%q}`, sentinel)
		}},
		echo{"error event inside a stream", []string{"stream"}, func(w http.ResponseWriter, _ *http.Request, k kind) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("X-Request-Id", sentinel)
			switch {
			case k.isResponses():
				fmt.Fprintf(w, "event: error\ndata: {\"type\":\"error\",\"code\":\"%s\",\"message\":\"%s\",\"param\":\"%s\"}\n\n", sentinel, sentinel, sentinel)
			case k.isAnthropic():
				fmt.Fprintf(w, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"%s\"}}\n\n", sentinel)
			default:
				fmt.Fprintf(w, "data: {\"error\":{\"message\":\"%s\",\"type\":\"server_error\",\"code\":\"%s\"}}\n\n", sentinel, sentinel)
			}
		}},
		echo{"stream event that is not JSON", []string{"stream"}, func(w http.ResponseWriter, _ *http.Request, _ kind) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {%s\n\n", sentinel)
		}},
		echo{"redirect with the key in the query", []string{"chat", "stream", "embed"}, func(w http.ResponseWriter, _ *http.Request, _ kind) {
			w.Header().Set("Location", "http://127.0.0.1:1/x?key="+sentinel)
			w.WriteHeader(307)
		}},
		echo{"reset before any answer", []string{"chat"}, func(w http.ResponseWriter, _ *http.Request, _ kind) {
			conn, _, _ := w.(http.Hijacker).Hijack()
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			_ = conn.Close()
		}},
	)
}()

// outputs collects everything an application could show: the error printed every way, slog
// records, spans (status, attributes, events), metrics and the health endpoint.
type outputs struct {
	logs   *bytes.Buffer
	mu     *sync.Mutex
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	tel    *observe.Telemetry
}

func newOutputs(t *testing.T) outputs {
	o := outputs{logs: &bytes.Buffer{}, mu: &sync.Mutex{}, spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(o.reader))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(o.spans))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()); _ = tp.Shutdown(context.Background()) })
	logger := slog.New(slog.NewJSONHandler(lockedWriter{o.logs, o.mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	tel, err := observe.New(observe.WithMeterProvider(mp), observe.WithTracerProvider(tp), observe.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	o.tel = tel
	return o
}

type lockedWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (o outputs) text(t *testing.T, c *client.Client) string {
	var all strings.Builder
	o.mu.Lock()
	all.WriteString(o.logs.String())
	o.mu.Unlock()
	for _, s := range o.spans.Ended() {
		fmt.Fprintf(&all, "%s %v %v %v\n", s.Name(), s.Status(), s.Attributes(), s.Events())
	}
	var rm metricdata.ResourceMetrics
	if err := o.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(rm)
	all.Write(js)
	checker := health.NewChecker()
	checker.AddAll(c.Circuits())
	rec := httptest.NewRecorder()
	checker.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	all.WriteString(rec.Body.String())
	return all.String()
}

// Rule 7: no key in any error field, whatever the server echoes, in any output.
func TestSecrets_TheKeyNeverLeavesInAnyOutput(t *testing.T) {
	for _, ec := range echoes {
		for _, k := range kinds {
			out := newOutputs(t)
			srv := server(t, func(w http.ResponseWriter, r *http.Request) { ec.serve(w, r, k) })
			o := policy()
			o.RetryCount = 1
			o.CircuitBreakerThreshold = 1
			c := newClient(t, k, srv.URL, o, providers.Limits{}, client.WithTelemetry(out.tel))
			for _, op := range ec.ops {
				if op == "embed" && k.isAnthropic() {
					continue
				}
				c.Pipeline("p").Reset()
				err := run(context.Background(), c, op)
				if err == nil {
					t.Fatalf("%s, %s %s: no error", ec.name, k.name, op)
				}
				e := asError(t, err)
				for _, field := range []string{e.Message, e.Type, e.Code, e.RequestID, e.Error(), fmt.Sprintf("%#v", e)} {
					if strings.Contains(field, sentinel[:8]) {
						t.Fatalf("%s, %s %s: a field holds the key: %q", ec.name, k.name, op, field)
					}
				}
				if len(e.Message) > 1100 {
					t.Fatalf("%s, %s %s: a message of %d bytes", ec.name, k.name, op, len(e.Message))
				}
			}
			if all := out.text(t, c); strings.Contains(all, sentinel[:8]) {
				i := strings.Index(all, sentinel[:8])
				t.Fatalf("%s, %s: the key reached the telemetry or health output: …%s…", ec.name, k.name, all[max(0, i-200):i+20])
			}
		}
	}
}
