package client_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

// The benchmarks below measure what the client adds to a call — encoding the neutral request,
// decoding and classifying the answer, the fallback loop — over an in-memory transport, so
// that no network or server time hides it. Compare:
//
//	BenchmarkGoOpenAI_Direct            go-openai alone: the floor for an OpenAI call
//	BenchmarkGoOpenAI_WithPipeline      go-openai over the resilience pipeline
//	BenchmarkClientChat_OpenAI          client.Chat: neutral types, pipeline, classification
//	BenchmarkClientChat_Anthropic       the same through the hand-written Anthropic provider
//
// client.Chat minus go-openai over the pipeline is the client's own overhead. The bench side
// module (bench/) compares the same with the official SDKs, with realistic prompts and
// streams, in interleaved rounds (go run ./cmd/benchreport there).

const (
	openAIAnswer = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello from memory."},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}}`
	anthropicAnswer = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5",` +
		`"content":[{"type":"text","text":"Hello from memory."}],"stop_reason":"end_turn",` +
		`"usage":{"input_tokens":9,"output_tokens":4}}`
)

// memTransport answers every request with a canned JSON body, after reading the request body
// as a server would.
type memTransport struct{ body []byte }

func (m memTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{
		StatusCode:    http.StatusOK,
		Status:        "200 OK",
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(m.body)),
		ContentLength: int64(len(m.body)),
		Request:       r,
	}, nil
}

func benchPolicy() resilience.Options {
	o := resilience.DefaultOptions()
	o.RetryBudgetPercent = 0
	return o
}

func BenchmarkGoOpenAI_Direct(b *testing.B) {
	benchGoOpenAI(b, memTransport{[]byte(openAIAnswer)})
}

func BenchmarkGoOpenAI_WithPipeline(b *testing.B) {
	p, err := resilience.New(benchPolicy(), resilience.WithName("openai"))
	if err != nil {
		b.Fatal(err)
	}
	benchGoOpenAI(b, p.Wrap(memTransport{[]byte(openAIAnswer)}))
}

func benchGoOpenAI(b *testing.B, rt http.RoundTripper) {
	cfg := goopenai.DefaultConfig("sk-bench")
	cfg.BaseURL = "http://127.0.0.1:1/v1"
	cfg.HTTPClient = &http.Client{Transport: rt}
	c := goopenai.NewClientWithConfig(cfg)
	req := goopenai.ChatCompletionRequest{
		Model:    "gpt-4o-mini",
		Messages: []goopenai.ChatCompletionMessage{{Role: goopenai.ChatMessageRoleUser, Content: "hello there"}},
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := c.CreateChatCompletion(ctx, req)
		if err != nil || resp.Choices[0].Message.Content != "Hello from memory." {
			b.Fatal(resp, err)
		}
	}
}

func BenchmarkClientChat_OpenAI(b *testing.B) {
	benchClient(b, benchPolicy(), openAIAnswer, func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{Name: "llm", BaseURL: "http://127.0.0.1:1/v1", APIKey: "sk-bench", HTTPClient: hc, Model: "gpt-4o-mini"})
	})
}

func BenchmarkClientChat_Anthropic(b *testing.B) {
	benchClient(b, benchPolicy(), anthropicAnswer, func(hc *http.Client) (providers.Provider, error) {
		return anthropic.New(anthropic.Config{Name: "llm", BaseURL: "http://127.0.0.1:1", APIKey: "sk-bench", HTTPClient: hc, Model: "claude-haiku-4-5"})
	})
}

// benchClient times Chat calls of a client whose one provider, built by factory under policy o,
// is answered answer from memory.
func benchClient(b *testing.B, o resilience.Options, answer string, factory client.ProviderFactory) {
	c, err := client.New(client.WithProvider("llm", o, factory),
		client.WithBaseTransport(memTransport{[]byte(answer)}))
	if err != nil {
		b.Fatal(err)
	}
	req := &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: "hello there"}}}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := c.Chat(ctx, req)
		if err != nil || resp.Message.Content != "Hello from memory." {
			b.Fatal(resp, err)
		}
	}
}

// BenchmarkClientChat_CallTimeout is BenchmarkClientChat_OpenAI under a whole-call deadline
// (CallTimeoutSeconds): what the deadline's context and timer add to a call that succeeds.
func BenchmarkClientChat_CallTimeout(b *testing.B) {
	o := benchPolicy()
	o.CallTimeoutSeconds = 30
	benchClient(b, o, openAIAnswer, func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{Name: "llm", BaseURL: "http://127.0.0.1:1/v1", APIKey: "sk-bench", HTTPClient: hc, Model: "gpt-4o-mini"})
	})
}
