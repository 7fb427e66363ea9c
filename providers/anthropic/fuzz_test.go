package anthropic_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
)

const fuzzKey = "Q7FUZZSENTINEL0f3c9a8e7d6b5a4c3e2"

type fuzzTransport struct {
	status      int
	contentType string
	body        []byte
}

func (f fuzzTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	h := http.Header{"Content-Type": {f.contentType}, "Request-Id": {fuzzKey}}
	return &http.Response{StatusCode: f.status, Header: h, Body: io.NopCloser(bytes.NewReader(f.body)), Request: r}, nil
}

func fuzzProvider(t *testing.T, ft fuzzTransport) *anthropic.Provider {
	p, err := anthropic.New(anthropic.Config{BaseURL: "http://127.0.0.1:1", APIKey: fuzzKey, Model: "m",
		HTTPClient: &http.Client{Transport: ft}, Limits: providers.Limits{MaxResponseBytes: 1 << 16, MaxEventBytes: 1 << 12}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func checkFuzzError(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var e *providers.Error
	if !errors.As(err, &e) || e.Kind == "" || len(e.Message) > 1100 {
		t.Fatalf("error %T %v", err, err)
	}
	for _, s := range []string{e.Error(), e.GoString(), e.Type, e.Code, e.RequestID} {
		if strings.Contains(s, fuzzKey[:12]) {
			t.Fatalf("the key leaked: %q", s)
		}
	}
}

func userMessage() *providers.ChatRequest {
	return &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: "hi"}}}
}

// FuzzErrorBody: whatever status and body the server sends, Chat returns an answer or a typed
// error, never a panic, a leak or an empty success.
func FuzzErrorBody(f *testing.F) {
	f.Add(529, "application/json", []byte(`{"type":"error","error":{"type":"overloaded_error","message":"busy"}}`))
	f.Add(200, "application/json", []byte(`{"type":"error","error":{"type":"rate_limit_error","message":"`+fuzzKey+`"}}`))
	f.Add(200, "application/json", []byte(`null`))
	f.Add(402, "application/json", []byte(`{"type":"error","error":{"type":"billing_error"}}`))
	f.Add(502, "text/html", []byte(`<html>bad gateway</html>`))
	f.Add(200, "application/json", []byte(`{"type":"message","content":[{"type":"text","text":"a"},{"type":"server_tool_use","id":"s","input":{}},`+
		`{"type":"future","text":5,"data":{}},{"type":""}],"stop_reason":"end_turn"}`))
	f.Add(200, "application/json", []byte(`{"input_tokens":12}`))
	f.Fuzz(func(t *testing.T, status int, contentType string, body []byte) {
		if status < 100 || status > 999 {
			status = 200 + (status%800+800)%800
		}
		p := fuzzProvider(t, fuzzTransport{status, contentType, body})
		resp, err := p.Chat(context.Background(), userMessage())
		checkFuzzError(t, err)
		if err == nil && (resp == nil || resp.Provider == "") {
			t.Fatal("an empty success")
		}
		if err == nil {
			checkSendsBack(t, resp.Message)
		}
		n, err := p.CountTokens(context.Background(), userMessage())
		checkFuzzError(t, err)
		if err == nil && n < 0 {
			t.Fatalf("count %d", n)
		}
	})
}

// checkSendsBack fails unless answer, as the caller keeps it, is a valid turn to send back:
// whatever the server sent, the blocks kept verbatim are JSON objects of their type.
func checkSendsBack(t *testing.T, answer providers.Message) {
	t.Helper()
	req := userMessage()
	req.Messages = append(req.Messages, answer, providers.Message{Role: providers.RoleUser, Content: "more"})
	if err := req.Validate(); err != nil && len(answer.ProviderBlocks) > 0 {
		t.Fatalf("the answer's provider blocks cannot go back: %v", err)
	}
}

// FuzzStream: whatever a 200 event stream holds, Recv ends with Done, io.EOF or a typed
// error, never a panic or a leak.
func FuzzStream(f *testing.F) {
	f.Add([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\nevent: message_stop\ndata: {}\n\n"))
	f.Add([]byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"" + fuzzKey + "\"}}\n\n"))
	f.Add([]byte(": ping\n\n\r\ndata: {\n"))
	f.Add([]byte("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"server_tool_use\",\"id\":\"s\",\"input\":{}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"q\\\":1}\"}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"x\",\"text\":5}}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}}\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		p := fuzzProvider(t, fuzzTransport{200, "text/event-stream", body})
		st, err := p.ChatStream(context.Background(), userMessage())
		if err != nil {
			checkFuzzError(t, err)
			return
		}
		defer st.Close()
		for i := 0; i < len(body)+2; i++ {
			d, err := st.Recv()
			if err != nil {
				if err != io.EOF {
					checkFuzzError(t, err)
				}
				return
			}
			if d.Done {
				checkSendsBack(t, providers.Message{Role: providers.RoleAssistant, Content: "x", ProviderBlocks: d.ProviderBlocks})
				return
			}
		}
		t.Fatal("the stream did not end")
	})
}
