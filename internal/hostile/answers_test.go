package hostile_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/steadyllm/steady/providers"
)

// respContent is a Responses stream's content event: the text "hi".
const respContent = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"delta\":\"hi\"}\n\n"

// answer writes a valid answer of kind k to op, with extra headers.
func answer(w http.ResponseWriter, k kind, op string, extra ...string) {
	for i := 0; i+1 < len(extra); i += 2 {
		w.Header().Set(extra[i], extra[i+1])
	}
	switch {
	case op == "stream" && k.isResponses():
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, respContent+"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"object\":\"response\",\"status\":\"completed\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n")
	case op == "stream" && k.isAnthropic():
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"c\",\"usage\":{\"input_tokens\":1}}}\n\n"+
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n"+
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\n"+
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	case op == "stream":
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n"+
			"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	case op == "embed":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2]}],"model":"e","usage":{"prompt_tokens":1,"total_tokens":1}}`)
	case k.isResponses():
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"r","object":"response","status":"completed","model":"g","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hi"}]}],"usage":{"input_tokens":1,"output_tokens":1}}`)
	case k.isAnthropic():
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"m","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`)
	default:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c","object":"chat.completion","model":"g","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`)
	}
}

// Rule 3: a success is never retried. Whatever hint rides on a 2xx, exactly one request goes
// out and the answer is returned.
func TestAnswers_SuccessIsNeverRetried(t *testing.T) {
	for _, hint := range [][]string{
		{"X-Should-Retry", "true"},
		{"X-Should-Retry", "true", "Retry-After", "0"},
		{"Retry-After-Ms", "5", "X-Should-Retry", "TRUE"},
	} {
		for _, k := range kinds {
			for _, op := range ops(k) {
				var hits atomic.Int32
				srv := server(t, func(w http.ResponseWriter, r *http.Request) {
					hits.Add(1)
					answer(w, k, op, hint...)
				})
				c := newClient(t, k, srv.URL, policy(), providers.Limits{})
				if err := run(context.Background(), c, op); err != nil {
					t.Fatalf("%s %s with %v: %v", k.name, op, hint, err)
				}
				if n := hits.Load(); n != 1 {
					t.Fatalf("%s %s with %v: %d requests, want exactly 1", k.name, op, hint, n)
				}
			}
		}
	}
}

// Rule 8: a 200 that is not an answer is a typed error, never an empty success; an error
// envelope is classified like the error it carries.
func TestAnswers_A200ThatIsNotAnAnswerIsAnError(t *testing.T) {
	openaiEnvelope := func(typ, code string) string {
		return fmt.Sprintf(`{"error":{"message":"trouble","type":%q,"code":%q,"param":null}}`, typ, code)
	}
	anthropicEnvelope := func(typ string) string {
		return fmt.Sprintf(`{"type":"error","error":{"type":%q,"message":"trouble"}}`, typ)
	}
	type nonAnswer struct {
		name, openai, anthropic string
		want                    providers.ErrorKind
	}
	for _, na := range []nonAnswer{
		{"empty object", `{}`, `{}`, providers.KindUnavailable},
		{"null", `null`, `null`, providers.KindUnavailable},
		{"empty body", ``, ``, providers.KindUnavailable},
		{"array", `[]`, `[]`, providers.KindUnavailable},
		{"string", `"ok"`, `"ok"`, providers.KindUnavailable},
		{"another object", `{"status":"queued"}`, `{"status":"queued"}`, providers.KindUnavailable},
		{"rate limit envelope", openaiEnvelope("requests", "rate_limit_exceeded"), anthropicEnvelope("rate_limit_error"), providers.KindRateLimited},
		{"overloaded envelope", openaiEnvelope("server_error", "overloaded"), anthropicEnvelope("overloaded_error"), providers.KindOverloaded},
		{"bad request envelope", openaiEnvelope("invalid_request_error", "bad"), anthropicEnvelope("invalid_request_error"), providers.KindBadRequest},
		{"auth envelope", openaiEnvelope("invalid_request_error", "invalid_api_key"), anthropicEnvelope("authentication_error"), providers.KindAuth},
	} {
		for _, k := range kinds {
			body := na.openai
			if k.isAnthropic() {
				body = na.anthropic
			}
			srv := server(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, body)
			})
			o := policy()
			o.RetryCount = 0
			c := newClient(t, k, srv.URL, o, providers.Limits{})
			for _, op := range ops(k) {
				err := run(context.Background(), c, op)
				if err == nil {
					t.Fatalf("%s, %s %s: a 200 %s was taken for an answer", na.name, k.name, op, body)
				}
				e := asError(t, err)
				want := na.want
				if e.Kind != want || e.StatusCode != 200 {
					t.Fatalf("%s, %s %s: %s (HTTP %d): %v; want %s", na.name, k.name, op, e.Kind, e.StatusCode, err, want)
				}
			}
		}
	}
}
