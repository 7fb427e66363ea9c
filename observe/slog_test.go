package observe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/observe"
	"github.com/steadyllm/steady/resilience"
)

func TestSlogObserver_LevelsMessagesAndAttributes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		event resilience.Event
		level string
		msg   string
		attrs map[string]any
	}{
		{"attempt started", resilience.Event{Type: resilience.EventAttemptStarted, Attempt: 1},
			"DEBUG", "attempt 1 of 4 for openai started", map[string]any{"attempt": 1.0, "max_attempts": 4.0}},
		{"attempt finished", resilience.Event{Type: resilience.EventAttemptFinished, Attempt: 2, Status: 503, Duration: 12 * time.Millisecond},
			"DEBUG", "attempt 2 of 4 for openai got status 503 after 12ms", map[string]any{"status": 503.0, "duration_ms": 12.0}},
		{"retry from the server's hint", resilience.Event{Type: resilience.EventRetryScheduled, Attempt: 2, Status: 429, Reason: "status 429",
			Delay: 400 * time.Millisecond, ServerHint: true},
			"WARN", "attempt 2 of 4 for openai failed (status 429); next attempt in 400ms (server hint)",
			map[string]any{"delay_ms": 400.0, "server_hint": true, "reason": "status 429", "status": 429.0, "attempt": 2.0}},
		{"retry from backoff", resilience.Event{Type: resilience.EventRetryScheduled, Attempt: 1, Reason: "connection reset",
			Delay: 1500 * time.Millisecond, Err: errors.New("read: connection reset by peer")},
			"WARN", "attempt 1 of 4 for openai failed (connection reset); next attempt in 1.5s (backoff)",
			map[string]any{"server_hint": false, "error": "read: connection reset by peer"}},
		{"gave up", resilience.Event{Type: resilience.EventGaveUp, Attempt: 4, Status: 503, GaveUp: resilience.GaveUpExhausted,
			Reason: resilience.GaveUpExhausted.Description()},
			"ERROR", "gave up on openai after attempt 4 of 4: retries exhausted", map[string]any{"reason": "exhausted"}},
		{"gave up on a long hint", resilience.Event{Type: resilience.EventGaveUp, Attempt: 1, Status: 429, GaveUp: resilience.GaveUpHintTooLong,
			Reason: resilience.GaveUpHintTooLong.Description(), Delay: time.Minute},
			"ERROR", "gave up on openai after attempt 1 of 4: the server's hint exceeds the max delay (server asked for 1m0s)",
			map[string]any{"delay_ms": 60000.0, "server_hint": true}},
		{"timeout", resilience.Event{Type: resilience.EventTimeout, Timeout: resilience.TimeoutTotal, Delay: 30 * time.Second},
			"WARN", "total timeout of 30s ran out for openai", map[string]any{"timeout": "total", "delay_ms": 30000.0}},
		{"circuit opened", resilience.Event{Type: resilience.EventBreakerStateChanged, From: resilience.CircuitClosed, To: resilience.CircuitOpen},
			"WARN", "circuit for openai opened (was closed): calls fail fast", map[string]any{"from": "closed", "to": "open"}},
		{"circuit half-open", resilience.Event{Type: resilience.EventBreakerStateChanged, From: resilience.CircuitOpen, To: resilience.CircuitHalfOpen},
			"INFO", "circuit for openai half-open: letting probes through", map[string]any{"to": "half-open"}},
		{"circuit closed", resilience.Event{Type: resilience.EventBreakerStateChanged, From: resilience.CircuitHalfOpen, To: resilience.CircuitClosed},
			"INFO", "circuit for openai closed (was half-open): calls flow again", map[string]any{"to": "closed"}},
		{"circuit isolated", resilience.Event{Type: resilience.EventBreakerStateChanged, From: resilience.CircuitClosed, To: resilience.CircuitIsolated},
			"WARN", "circuit for openai isolated by hand: calls fail fast until Reset", map[string]any{"to": "isolated"}},
		{"circuit rejected", resilience.Event{Type: resilience.EventBreakerRejected, To: resilience.CircuitOpen, Delay: 12 * time.Second},
			"WARN", "circuit for openai is open: call rejected, next probe in 12s", map[string]any{"to": "open", "delay_ms": 12000.0}},
		{"bulkhead full", resilience.Event{Type: resilience.EventBulkheadRejected},
			"WARN", "bulkhead for openai full: call rejected", map[string]any{"event": "bulkhead_rejected"}},
		{"bulkhead queue timeout", resilience.Event{Type: resilience.EventBulkheadRejected, Duration: 2 * time.Second},
			"WARN", "bulkhead for openai: no free slot after waiting 2s, call rejected", map[string]any{"duration_ms": 2000.0}},
		{"shared state failed", resilience.Event{Type: resilience.EventSharedStateFailed, Err: errors.New("dial tcp 127.0.0.1:6379: connection refused")},
			"WARN", "openai: the shared state does not answer; going on with this instance's own state",
			map[string]any{"event": "shared_state_failed", "error": "dial tcp 127.0.0.1:6379: connection refused"}},
		{"shared state recovered", resilience.Event{Type: resilience.EventSharedStateRecovered},
			"INFO", "openai: the shared state answers again", map[string]any{"event": "shared_state_recovered"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			obs := observe.NewSlogObserver(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
			e := tc.event
			e.Pipeline, e.MaxAttempts, e.Context = "openai", 4, context.Background()
			obs(e)
			var rec map[string]any
			if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
				t.Fatalf("%v: %q", err, buf.String())
			}
			if rec["level"] != tc.level || rec["msg"] != tc.msg {
				t.Errorf("got %v %q, want %s %q", rec["level"], rec["msg"], tc.level, tc.msg)
			}
			if rec["provider"] != "openai" || rec["event"] != e.Type.String() {
				t.Errorf("provider/event %v/%v", rec["provider"], rec["event"])
			}
			for k, want := range tc.attrs {
				if rec[k] != want {
					t.Errorf("%s = %#v, want %#v", k, rec[k], want)
				}
			}
		})
	}
}

func TestSlogObserver_DisabledLevelsCostNothing(t *testing.T) {
	var buf bytes.Buffer
	obs := observe.NewSlogObserver(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})))
	e := resilience.Event{Type: resilience.EventAttemptStarted, Pipeline: "openai", Attempt: 1, MaxAttempts: 4}
	if n := testing.AllocsPerRun(100, func() { obs(e) }); n != 0 {
		t.Errorf("%v allocations for a record below the level", n)
	}
	if buf.Len() != 0 {
		t.Errorf("wrote %q", buf.String())
	}
}

func TestSlogObserver_ScrubsErrorText(t *testing.T) {
	var buf bytes.Buffer
	obs := observe.NewSlogObserver(slog.New(slog.NewJSONHandler(&buf, nil)))
	obs(resilience.Event{Type: resilience.EventRetryScheduled, Pipeline: "gateway", Attempt: 1, MaxAttempts: 2,
		Reason: "connection reset",
		Err: errors.New(`Post "https://user:pw@gw.example.com/v1/chat?api_key=` + sentinelKey + `": Authorization: Bearer ` +
			sentinelKey + " reset")})
	out := buf.String()
	for _, bad := range []string{sentinelKey, "user:pw", "/v1/chat", "api_key="} {
		if strings.Contains(out, bad) {
			t.Errorf("record holds %q: %s", bad, out)
		}
	}
	if !strings.Contains(out, "https://gw.example.com") || !strings.Contains(out, "[REDACTED]") {
		t.Errorf("record lost the host or the redaction mark: %s", out)
	}
}

func TestSlogObserver_NilLoggerUsesTheDefault(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(old)
	observe.NewSlogObserver(nil)(resilience.Event{Type: resilience.EventBulkheadRejected, Pipeline: "openai"})
	if !strings.Contains(buf.String(), "bulkhead for openai full") {
		t.Errorf("default logger got %q", buf.String())
	}
}
