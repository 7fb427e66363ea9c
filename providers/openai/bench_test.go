package openai_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/steadyllm/steady/internal/providertest"
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
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, benchStream)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, benchAnswer)
	}))
	b.Cleanup(srv.Close)
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
