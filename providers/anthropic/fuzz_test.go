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
	})
}

// FuzzStream: whatever a 200 event stream holds, Recv ends with Done, io.EOF or a typed
// error, never a panic or a leak.
func FuzzStream(f *testing.F) {
	f.Add([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\nevent: message_stop\ndata: {}\n\n"))
	f.Add([]byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"" + fuzzKey + "\"}}\n\n"))
	f.Add([]byte(": ping\n\n\r\ndata: {\n"))
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
				return
			}
		}
		t.Fatal("the stream did not end")
	})
}
