package mocks_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/mocks"
)

const streamChat = `{"model":"m","stream":true,"messages":[{"role":"user","content":"one two three four"}]}`
const streamMessages = `{"model":"m","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"one two three four"}]}`

func TestStatus_InEachProvidersEnvelope(t *testing.T) {
	cases := []struct {
		status         int
		openAI, claude string
	}{
		{400, "invalid_request_error", "invalid_request_error"},
		{401, "invalid_request_error", "authentication_error"},
		{403, "invalid_request_error", "permission_error"},
		{404, "invalid_request_error", "not_found_error"},
		{429, "requests", "rate_limit_error"},
		{500, "server_error", "api_error"},
		{502, "server_error", "api_error"},
		{503, "server_error", "api_error"},
		{504, "server_error", "timeout_error"},
		{529, "server_error", "overloaded_error"},
	}
	s := newServer(t)
	for _, tc := range cases {
		s.Script(mocks.Status(tc.status), mocks.Status(tc.status))
		res, b := mustDo(t, s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), chatBody)
		if v := decode(t, b); res.StatusCode != tc.status || path(v, "error", "type") != tc.openAI || path(v, "error", "message") == "" {
			t.Errorf("openai %d: got %d %s", tc.status, res.StatusCode, b)
		}
		res, b = mustDo(t, s, http.MethodPost, "/v1/messages", anthropicHeaders(), messagesBody)
		if v := decode(t, b); res.StatusCode != tc.status || path(v, "type") != "error" || path(v, "error", "type") != tc.claude {
			t.Errorf("anthropic %d: got %d %s", tc.status, res.StatusCode, b)
		}
	}
}

func TestRateLimited_SendsHintsAndEmptyBucket(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.RateLimited(150*time.Millisecond), mocks.RateLimited(1500*time.Millisecond)))
	res, b := mustDo(t, s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), chatBody)
	if res.StatusCode != 429 || path(decode(t, b), "error", "code") != "rate_limit_exceeded" {
		t.Fatalf("got %d %s", res.StatusCode, b)
	}
	want := map[string]string{"Retry-After-Ms": "150", "Retry-After": "1", "X-Ratelimit-Remaining-Requests": "0", "X-Ratelimit-Reset-Requests": "150ms"}
	for k, v := range want {
		if got := res.Header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	res, _ = mustDo(t, s, http.MethodPost, "/v1/messages", anthropicHeaders(), messagesBody)
	if res.Header.Get("Retry-After") != "2" || res.Header.Get("Anthropic-Ratelimit-Requests-Remaining") != "0" {
		t.Errorf("anthropic headers: %v", res.Header)
	}
	if _, err := time.Parse(time.RFC3339, res.Header.Get("Anthropic-Ratelimit-Requests-Reset")); err != nil {
		t.Errorf("reset header: %v", err)
	}
}

func TestQuotaExceeded_IsPermanentInBothDialects(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.QuotaExceeded().Times(2)))
	res, b := mustDo(t, s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), chatBody)
	if v := decode(t, b); res.StatusCode != 429 || path(v, "error", "code") != "insufficient_quota" || path(v, "error", "type") != "insufficient_quota" {
		t.Errorf("openai: %d %s", res.StatusCode, b)
	}
	if res.Header.Get("Retry-After") != "" {
		t.Errorf("quota error carries Retry-After")
	}
	res, b = mustDo(t, s, http.MethodPost, "/v1/messages", anthropicHeaders(), messagesBody)
	if v := decode(t, b); res.StatusCode != 429 || path(v, "error", "details", "error_code") != "enforced_spend_limit_reached" {
		t.Errorf("anthropic: %d %s", res.StatusCode, b)
	}
}

func TestShouldRetryAndCustomHeaders(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.Status(503).WithShouldRetry(false).WithHeader("X-Extra", "1"),
		mocks.Error(400, "invalid_request_error", "try again").WithShouldRetry(true)))
	res, _ := mustDo(t, s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), chatBody)
	if res.Header.Get("X-Should-Retry") != "false" || res.Header.Get("X-Extra") != "1" {
		t.Errorf("headers: %v", res.Header)
	}
	res, b := mustDo(t, s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), chatBody)
	if res.Header.Get("X-Should-Retry") != "true" || path(decode(t, b), "error", "message") != "try again" {
		t.Errorf("second: %v %s", res.Header, b)
	}
}

func TestLatency_HoldsHeadersBack(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.Latency(100*time.Millisecond)))
	start := time.Now()
	res, _ := mustDo(t, s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), chatBody)
	if el := time.Since(start); res.StatusCode != 200 || el < 90*time.Millisecond {
		t.Errorf("status %d after %v", res.StatusCode, el)
	}
}

func TestStall_EndsWhenTheClientGivesUp(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.Stall()))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		res, err := do(t, ctx, s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), chatBody)
		if err == nil {
			res.Body.Close()
		}
		errc <- err
	}()
	if err := s.Journal().Wait(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
	waitIdle(t, s)
}

func TestStall_EndsWhenTheServerCloses(t *testing.T) {
	s := mocks.NewServer(mocks.WithScript(mocks.Stall()))
	errc := make(chan error, 1)
	go func() {
		res, err := do(t, context.Background(), s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), chatBody)
		if err == nil {
			res.Body.Close()
		}
		errc <- err
	}()
	if err := s.Journal().Wait(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	s.Close() // must not hang
	if err := <-errc; err == nil {
		t.Error("stalled call got a response after Close")
	}
}

// waitIdle waits until no handler is running, so the test's goroutines are gone.
func waitIdle(t *testing.T, s *mocks.Server) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); s.Journal().InFlight() > 0; {
		if time.Now().After(deadline) {
			t.Fatal("handlers still running")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestResetConnection_FailsWithoutAResponse(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.ResetConnection()))
	res, err := do(t, context.Background(), s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), chatBody)
	if err == nil {
		res.Body.Close()
		t.Fatalf("got a response: %d", res.StatusCode)
	}
	if r, ok := s.Journal().Last(); !ok || r.Step != "reset" {
		t.Errorf("journal: %+v", r)
	}
	// The next call works.
	if res, _ := mustDo(t, s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), chatBody); res.StatusCode != 200 {
		t.Errorf("next call: %d", res.StatusCode)
	}
}

func TestCutStream_DropsTheConnectionAfterNEvents(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.CutStream(2), mocks.CutStream(3)))
	res, evs, err := stream(t, s, "/v1/chat/completions", openAIHeaders(), streamChat)
	if res.StatusCode != 200 || len(evs) != 2 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("openai: status %d, %d events, err %v", res.StatusCode, len(evs), err)
	}
	_, evs, err = stream(t, s, "/v1/messages", anthropicHeaders(), streamMessages)
	if len(evs) != 3 || evs[2].name != "ping" || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("anthropic: %d events, err %v", len(evs), err)
	}
}

func TestCutStream_JSONReplyIsCutHalfway(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.CutStream(0)))
	res, err := do(t, context.Background(), s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), chatBody)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if _, err := io.ReadAll(res.Body); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("read err = %v", err)
	}
}

func TestTruncateStream_EndsCleanlyWithoutTerminalEvent(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.TruncateStream(3).Times(2)))
	_, evs, err := stream(t, s, "/v1/chat/completions", openAIHeaders(), streamChat)
	if err != nil || len(evs) != 3 || strings.Contains(evs[2].data, "finish_reason\":\"stop") {
		t.Errorf("openai: %d events, err %v", len(evs), err)
	}
	_, evs, err = stream(t, s, "/v1/messages", anthropicHeaders(), streamMessages)
	if err != nil || len(evs) != 3 {
		t.Errorf("anthropic: %d events, err %v", len(evs), err)
	}
}

func TestStreamError_InsideA200Stream(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.StreamError(2, "overloaded_error").Times(2)))
	res, evs, err := stream(t, s, "/v1/messages", anthropicHeaders(), streamMessages)
	if err != nil || res.StatusCode != 200 || len(evs) != 3 {
		t.Fatalf("anthropic: %d, %d events, %v", res.StatusCode, len(evs), err)
	}
	if last := evs[2]; last.name != "error" || path(decode(t, []byte(last.data)), "error", "type") != "overloaded_error" {
		t.Errorf("anthropic error event: %+v", last)
	}
	_, evs, err = stream(t, s, "/v1/chat/completions", openAIHeaders(), streamChat)
	if err != nil || len(evs) != 3 || path(decode(t, []byte(evs[2].data)), "error", "type") != "overloaded_error" {
		t.Errorf("openai: %d events %v %v", len(evs), evs, err)
	}
}

func TestStreamError_NonStreamingCallGetsTheHTTPError(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.StreamError(0, "overloaded_error")))
	res, b := mustDo(t, s, http.MethodPost, "/v1/messages", anthropicHeaders(), messagesBody)
	if res.StatusCode != 529 || path(decode(t, b), "error", "type") != "overloaded_error" {
		t.Errorf("got %d %s", res.StatusCode, b)
	}
}

func TestMalformed_JSONAndStream(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.Malformed().Times(3)))
	res, b := mustDo(t, s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), chatBody)
	if res.StatusCode != 200 || len(b) == 0 {
		t.Fatalf("got %d %q", res.StatusCode, b)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err == nil {
		t.Errorf("body parses: %s", b)
	}
	_, evs, _ := stream(t, s, "/v1/chat/completions", openAIHeaders(), streamChat)
	if len(evs) != 1 || json.Unmarshal([]byte(evs[0].data), &v) == nil {
		t.Errorf("openai stream: %v", evs)
	}
	_, evs, _ = stream(t, s, "/v1/messages", anthropicHeaders(), streamMessages)
	if len(evs) != 1 || evs[0].name != "message_start" || json.Unmarshal([]byte(evs[0].data), &v) == nil {
		t.Errorf("anthropic stream: %v", evs)
	}
}

func TestSlowStream_SpacesEvents(t *testing.T) {
	const gap = 30 * time.Millisecond
	s := newServer(t, mocks.WithScript(mocks.SlowStream(gap)), mocks.WithReply("a b"))
	start := time.Now()
	_, evs, err := stream(t, s, "/v1/chat/completions", openAIHeaders(), streamChat)
	if err != nil || len(evs) != 5 {
		t.Fatalf("%d events, %v", len(evs), err)
	}
	if el := time.Since(start); el < time.Duration(len(evs)-1)*gap {
		t.Errorf("stream took %v, want at least %v", el, time.Duration(len(evs)-1)*gap)
	}
}

func TestSlowStream_EndsWhenTheServerCloses(t *testing.T) {
	s := mocks.NewServer(mocks.WithScript(mocks.SlowStream(time.Hour)))
	res, err := do(t, context.Background(), s, http.MethodPost, "/v1/chat/completions", openAIHeaders(), streamChat)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	buf := make([]byte, 1)
	if _, err := res.Body.Read(buf); err != nil { // the first event arrives at once
		t.Fatal(err)
	}
	s.Close()
	if _, err := io.ReadAll(res.Body); err == nil {
		t.Error("stream ended cleanly after Close")
	}
}
