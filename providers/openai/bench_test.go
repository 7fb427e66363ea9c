package openai_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/steadyllm/steady/internal/testkit/providertest"
	"github.com/steadyllm/steady/providers/openai"
)

// benchChunks is how many content chunks the benchmark stream carries, so that the
// allocations per chunk show apart from those per call.
const benchChunks = 64

// benchStream is a whole stream as OpenAI sends it: a role chunk, content chunks, the finish
// chunk, the usage chunk and [DONE].
var benchStream = func() string {
	var b strings.Builder
	head := `{"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[`
	b.WriteString("data: " + head + `{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}` + "\n\n")
	for i := 0; i < benchChunks; i++ {
		fmt.Fprintf(&b, "data: %s{\"index\":0,\"delta\":{\"content\":\" word%d\"},\"finish_reason\":null}],\"usage\":null}\n\n", head, i)
	}
	b.WriteString("data: " + head + `{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}` + "\n\n")
	b.WriteString("data: " + head + `],"usage":{"prompt_tokens":5,"completion_tokens":64,"total_tokens":69}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}()

const benchAnswer = `{"id":"c","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,` +
	`"message":{"role":"assistant","content":"Hello there."},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`

// benchProvider serves the canned answers above over 127.0.0.1.
func benchProvider(b *testing.B) *openai.Provider {
	b.Helper()
	srv := providertest.CannedServer(b, benchAnswer, benchStream)
	p, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: sentinel, Model: "gpt-4o-mini", HTTPClient: srv.Client()})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

func BenchmarkChat(b *testing.B) {
	providertest.BenchChat(b, benchProvider(b), ask("Hi"))
}

// BenchmarkChatStream reads a whole stream of benchChunks content deltas per iteration.
func BenchmarkChatStream(b *testing.B) {
	providertest.BenchChatStream(b, benchProvider(b), ask("Hi"), benchChunks)
}

// benchResponsesStream is the same answer as benchStream over the Responses API: the created
// and in-progress events, the message item and its part opening, content deltas, their done
// events and response.completed with the usage.
var benchResponsesStream = func() string {
	var b strings.Builder
	ev := func(name, data string) { fmt.Fprintf(&b, "event: %s\ndata: {\"type\":%q,%s}\n\n", name, name, data) }
	resp := `"response":{"id":"resp_1","object":"response","status":"%s","model":"gpt-4o-mini","output":[],"usage":%s}`
	ev("response.created", fmt.Sprintf(resp, "in_progress", "null"))
	ev("response.in_progress", fmt.Sprintf(resp, "in_progress", "null"))
	ev("response.output_item.added", `"output_index":0,"item":{"type":"message","id":"msg_1","role":"assistant","content":[]}`)
	ev("response.content_part.added", `"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":""}`)
	for i := 0; i < benchChunks; i++ {
		ev("response.output_text.delta", fmt.Sprintf(`"item_id":"msg_1","output_index":0,"content_index":0,"delta":" word%d","sequence_number":%d`, i, i+4))
	}
	ev("response.output_text.done", `"item_id":"msg_1","output_index":0,"content_index":0,"text":"…"`)
	ev("response.output_item.done", `"output_index":0,"item":{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"…"}]}`)
	ev("response.completed", fmt.Sprintf(resp, "completed", `{"input_tokens":5,"output_tokens":64,"total_tokens":69}`))
	return b.String()
}()

const benchResponsesAnswer = `{"id":"resp_1","object":"response","status":"completed","model":"gpt-4o-mini","output":[` +
	`{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"Hello there.","annotations":[]}]}],` +
	`"usage":{"input_tokens":5,"output_tokens":3,"total_tokens":8}}`

// benchResponsesProvider serves the canned Responses answers above over 127.0.0.1.
func benchResponsesProvider(b *testing.B) *openai.Provider {
	b.Helper()
	srv := providertest.CannedServer(b, benchResponsesAnswer, benchResponsesStream)
	p, err := openai.New(openai.Config{API: openai.Responses, BaseURL: srv.URL + "/v1", APIKey: sentinel, Model: "gpt-4o-mini", HTTPClient: srv.Client()})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkChat_Responses is BenchmarkChat over the Responses API.
func BenchmarkChat_Responses(b *testing.B) {
	providertest.BenchChat(b, benchResponsesProvider(b), ask("Hi"))
}

// BenchmarkChatStream_Responses is BenchmarkChatStream over the Responses API.
func BenchmarkChatStream_Responses(b *testing.B) {
	providertest.BenchChatStream(b, benchResponsesProvider(b), ask("Hi"), benchChunks)
}
