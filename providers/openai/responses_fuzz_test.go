package openai_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
)

// fuzzResponses is a Responses-API provider whose every exchange is answered, in memory, by
// status, content type and body.
func fuzzResponses(t *testing.T, status int, contentType string, body []byte) *openai.Provider {
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Body != nil {
			_, _ = io.Copy(io.Discard, r.Body)
			_ = r.Body.Close()
		}
		h := http.Header{"Content-Type": {contentType}, "X-Request-Id": {"req-" + sentinel}}
		return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(bytes.NewReader(body)), Request: r}, nil
	})
	p, err := openai.New(openai.Config{API: openai.Responses, BaseURL: "http://127.0.0.1:1/v1", APIKey: sentinel, Model: "m",
		HTTPClient: &http.Client{Transport: rt}, Limits: providers.Limits{MaxResponseBytes: 1 << 16, MaxEventBytes: 1 << 12}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// FuzzResponsesBody: whatever status and body a server sends to a Responses request, the
// answer is an answer or a typed error, never a panic, a leak or an empty success.
func FuzzResponsesBody(f *testing.F) {
	f.Add(200, "application/json", []byte(`{"id":"resp_1","object":"response","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"hi"}]}],"usage":{"input_tokens":1,"output_tokens":1}}`))
	f.Add(200, "application/json", []byte(`{"object":"response","status":"failed","error":{"code":"server_error","message":"`+sentinel+`"}}`))
	f.Add(200, "application/json", []byte(`{"object":"response","status":"incomplete","incomplete_details":{"reason":"content_filter"},"output":[{"type":"web_search_call","content":7}]}`))
	f.Add(200, "application/json", []byte(`{"error":{"message":"slow","type":"requests","code":"rate_limit_exceeded"}}`))
	f.Add(429, "application/json", []byte(`{"error":{"message":"`+sentinel+`","code":429}}`))
	f.Add(200, "application/json", []byte(`{}`))
	f.Fuzz(func(t *testing.T, status int, contentType string, body []byte) {
		if status < 100 || status > 999 {
			status = 200 + (status%800+800)%800
		}
		resp, err := fuzzResponses(t, status, contentType, body).Chat(context.Background(), ask("hi"))
		checkError(t, err)
		if err == nil && (resp == nil || resp.Provider == "") {
			t.Fatal("an empty success")
		}
	})
}

// FuzzResponsesStream: whatever a 200 event stream holds, Recv yields deltas and ends with
// Done, io.EOF or a typed error — never a panic, a leak or a stream that does not end.
func FuzzResponsesStream(f *testing.F) {
	f.Add([]byte("event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"hi\"}\n\n" +
		"data: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\"}}\n\n"))
	f.Add([]byte("data: {\"type\":\"response.output_item.added\",\"output_index\":3,\"item\":{\"type\":\"function_call\",\"call_id\":\"c\",\"name\":\"f\"}}\n\n" +
		"data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":3,\"delta\":\"{\"}\n\n"))
	f.Add([]byte("data: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"" + sentinel + "\"}\n\n"))
	f.Add([]byte("data: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"" + sentinel + "\"}}}\n\n"))
	f.Add([]byte("data: {\"type\":\"response.completed\",\"response\":null}\n\n"))
	f.Add([]byte("data: {\"type\":\"response.refusal.delta\",\"delta\":\"no\"}\n\ndata: {\"type\":\"response.incomplete\",\"response\":{\"status\":\"incomplete\"}}\n\n"))
	f.Add([]byte("data: {\"type\":\"response.output_item.done\",\"item\":{\"type\":\"reasoning\",\"summary\":\"x\"}}\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		p := fuzzResponses(t, 200, "text/event-stream", body)
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
				if _, err := st.Recv(); err != io.EOF {
					t.Fatalf("after Done: %v", err)
				}
				return
			}
		}
		t.Fatal("the stream did not end")
	})
}
