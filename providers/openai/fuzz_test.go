package openai_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
)

// fuzzProvider is a provider whose every exchange is answered, in memory, by status,
// content type and body.
func fuzzProvider(t *testing.T, status int, contentType string, body []byte) *openai.Provider {
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Body != nil {
			_, _ = io.Copy(io.Discard, r.Body)
			_ = r.Body.Close()
		}
		h := http.Header{"Content-Type": {contentType}, "X-Request-Id": {"req-" + sentinel}}
		return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(bytes.NewReader(body)), Request: r}, nil
	})
	p, err := openai.New(openai.Config{BaseURL: "http://127.0.0.1:1/v1", APIKey: sentinel, Model: "m",
		HTTPClient: &http.Client{Transport: rt}, Limits: providers.Limits{MaxResponseBytes: 1 << 16, MaxEventBytes: 1 << 12}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// checkError holds for every error a hostile body can produce: a *providers.Error with a
// kind, no key anywhere, a bounded message.
func checkError(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	e := asError(t, err)
	if e.Kind == "" || len(e.Message) > 1100 || len(e.RequestID) > 200 {
		t.Fatalf("error %#v", e)
	}
	for _, s := range []string{e.Error(), e.GoString(), e.Type, e.Code, e.RequestID} {
		if strings.Contains(s, sentinel[:12]) {
			t.Fatalf("the key leaked: %q", s)
		}
	}
}

// FuzzErrorBody: whatever status and body a server sends to a chat or an embedding request,
// the answer is an answer or a typed error, never a panic, a leak or an empty success.
func FuzzErrorBody(f *testing.F) {
	f.Add(429, "application/json", []byte(`{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`))
	f.Add(200, "application/json", []byte(`{"error":{"message":"`+sentinel+`","type":"server_error","code":null}}`))
	f.Add(500, "text/html", []byte(`<html>oops</html>`))
	f.Add(200, "application/json", []byte(`{}`))
	f.Add(401, "application/json", []byte(`{"error":{"message":["a","b"],"code":401}}`))
	f.Add(400, "text/plain", []byte(strings.Repeat("x", 195)+sentinel))
	f.Fuzz(func(t *testing.T, status int, contentType string, body []byte) {
		if status < 100 || status > 999 {
			status = 200 + (status%800+800)%800
		}
		p := fuzzProvider(t, status, contentType, body)
		resp, err := p.Chat(context.Background(), ask("hi"))
		checkError(t, err)
		if err == nil && resp == nil {
			t.Fatal("no answer and no error")
		}
		_, err = p.Embed(context.Background(), &providers.EmbedRequest{Inputs: []string{"a"}})
		checkError(t, err)
	})
}

// FuzzStream: whatever a 200 event stream holds, Recv yields deltas and ends with Done, io.EOF
// or a typed error — never a panic or a leak.
func FuzzStream(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n"))
	f.Add([]byte(": keep-alive\n\ndata: {\"error\":{\"message\":\"" + sentinel + "\"}}\n\n"))
	f.Add([]byte("data: {not json\n\n"))
	f.Add([]byte("data: [DONE]"))
	f.Fuzz(func(t *testing.T, body []byte) {
		p := fuzzProvider(t, 200, "text/event-stream", body)
		st, err := p.ChatStream(context.Background(), ask("hi"))
		if err != nil {
			checkError(t, err)
			return
		}
		defer st.Close()
		for i := 0; i < len(body)+2; i++ {
			d, err := st.Recv()
			if err != nil {
				if err != io.EOF {
					checkError(t, err)
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
