package anthropic_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/steadyllm/steady/internal/testkit/providertest"
	"github.com/steadyllm/steady/providers/anthropic"
)

// benchChunks is how many text deltas the benchmark stream carries, so that the allocations
// per event show apart from those per call.
const benchChunks = 64

// benchStream is a whole Messages stream as the API sends it.
var benchStream = func() string {
	var b strings.Builder
	ev := func(name, data string) { fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", name, data) }
	ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":5,"output_tokens":1}}}`)
	ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	ev("ping", `{"type":"ping"}`)
	for i := 0; i < benchChunks; i++ {
		ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" word%d"}}`, i))
	}
	ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
	ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":64}}`)
	ev("message_stop", `{"type":"message_stop"}`)
	return b.String()
}()

const benchAnswer = `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Hello there."}],` +
	`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":3}}`

// benchProvider serves the canned answers above over 127.0.0.1.
func benchProvider(b *testing.B) *anthropic.Provider {
	b.Helper()
	srv := providertest.CannedServer(b, benchAnswer, benchStream)
	p, err := anthropic.New(anthropic.Config{BaseURL: srv.URL, APIKey: secretKey, Model: model, HTTPClient: srv.Client()})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

func BenchmarkChat(b *testing.B) {
	providertest.BenchChat(b, benchProvider(b), userRequest("Hi"))
}

// BenchmarkChatStream reads a whole stream of benchChunks content deltas per iteration.
func BenchmarkChatStream(b *testing.B) {
	providertest.BenchChatStream(b, benchProvider(b), userRequest("Hi"), benchChunks)
}
