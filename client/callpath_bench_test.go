package client_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

// BenchmarkCallPath measures what each way through the client's call path allocates, over an
// in-memory transport (no network, no server): a plain Chat, ChatStream read to its end and
// Embed; Chat with call options, under a hedging policy that never fires, with a whole-call
// deadline, priced and budgeted; and a chain of two providers whose first is skipped. The
// cancellable-caller rows make their calls under a context that can be cancelled (as a server
// handler's), the others under context.Background(). Its
// allocs/op are the guard of a change to the call path: they must not grow.
func BenchmarkCallPath(b *testing.B) {
	// caller is a context that can be cancelled, as a server handler's: a call under it pays
	// for what propagates its cancellation.
	caller, cancel := context.WithCancel(context.Background())
	defer cancel()
	chatIn := func(ctx context.Context, opts ...client.CallOption) func(*client.Client) error {
		return func(c *client.Client) error {
			resp, err := c.Chat(ctx, benchHello(), opts...)
			if err == nil && resp.Message.Content != "Hello from memory." {
				b.Fatalf("%+v", resp)
			}
			return err
		}
	}
	chat := func(opts ...client.CallOption) func(*client.Client) error {
		return chatIn(context.Background(), opts...)
	}
	streamIn := func(ctx context.Context) func(*client.Client) error {
		return func(c *client.Client) error {
			st, err := c.ChatStream(ctx, benchHello())
			if err != nil {
				return err
			}
			defer st.Close()
			for _, err := range st.Deltas() {
				if err != nil {
					return err
				}
			}
			return nil
		}
	}
	stream := func(c *client.Client) error {
		st, err := c.ChatStream(context.Background(), benchHello())
		if err != nil {
			return err
		}
		defer st.Close()
		for _, err := range st.Deltas() {
			if err != nil {
				return err
			}
		}
		return nil
	}
	embed := func(c *client.Client) error {
		_, err := c.Embed(context.Background(), &providers.EmbedRequest{Model: "text-embedding-3-small", Inputs: []string{"hello there"}})
		return err
	}
	prices, err := cost.NewPrices("USD", []cost.Entry{{Provider: "llm", Model: "gpt-4o-mini", Price: cost.PerMillion(1, 5)},
		{Provider: "llm", Model: "text-embedding-3-small", Price: cost.PerMillion(1, 0)}})
	if err != nil {
		b.Fatal(err)
	}
	hedged := benchPolicy()
	hedged.HedgeAfterSeconds = 10
	deadline := benchPolicy()
	deadline.CallTimeoutSeconds = 30
	for _, tc := range []struct {
		name string
		o    resilience.Options
		opts []client.Option
		run  func(*client.Client) error
	}{
		{"Chat", benchPolicy(), nil, chat()},
		{"ChatStream", benchPolicy(), nil, stream},
		{"Embed", benchPolicy(), nil, embed},
		{"Chat/options", benchPolicy(), nil, chat(client.WithRequestID("req-1"), client.WithPolicy("fast"))},
		{"Chat/hedging-armed", hedged, nil, chat()},
		{"ChatStream/hedging-armed", hedged, nil, stream},
		{"Chat/hedging-armed/without-hedge", hedged, nil, chat(client.WithoutHedge())},
		{"Chat/cancellable-caller", benchPolicy(), nil, chatIn(caller)},
		{"ChatStream/cancellable-caller", benchPolicy(), nil, streamIn(caller)},
		{"Chat/hedging-armed/cancellable-caller", hedged, nil, chatIn(caller)},
		{"ChatStream/hedging-armed/cancellable-caller", hedged, nil, streamIn(caller)},
		{"Chat/call-timeout", deadline, nil, chat()},
		{"Chat/priced", benchPolicy(), []client.Option{client.WithPrices(prices)}, chat()},
		{"Chat/budgeted", benchPolicy(), []client.Option{client.WithPrices(prices), client.WithBudgets(cost.LedgerOptions{},
			cost.Budget{Name: "t", Per: client.TenantDimension, Window: cost.Day, Limit: cost.MaxLimit})}, chat(client.WithTenant("acme"))},
		{"Embed/budgeted", benchPolicy(), []client.Option{client.WithPrices(prices), client.WithBudgets(cost.LedgerOptions{},
			cost.Budget{Name: "t", Per: client.TenantDimension, Window: cost.Day, Limit: cost.MaxLimit})}, func(c *client.Client) error {
			_, err := c.Embed(context.Background(), &providers.EmbedRequest{Model: "text-embedding-3-small", Inputs: []string{"hello there"}},
				client.WithTenant("acme"))
			return err
		}},
		{"Chat/skips-a-provider", benchPolicy(), []client.Option{client.WithProvider("embedder", benchPolicy(),
			func(hc *http.Client) (providers.Provider, error) { return embedOnly{}, nil }), client.WithFallback("embedder", "llm")}, chat()},
	} {
		b.Run(tc.name, func(b *testing.B) {
			opts := append([]client.Option{client.WithProvider("llm", tc.o, func(hc *http.Client) (providers.Provider, error) {
				return openai.New(openai.Config{Name: "llm", BaseURL: "http://127.0.0.1:1/v1", APIKey: "sk-bench", HTTPClient: hc,
					Model: "gpt-4o-mini"})
			}), client.WithBaseTransport(pathTransport{}), client.WithPolicies(map[string]resilience.Options{"fast": benchPolicy()})},
				tc.opts...)
			c, err := client.New(opts...)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := tc.run(c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func benchHello() *providers.ChatRequest {
	return &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: "hello there"}}}
}

// embedOnly is a provider that can do embeddings alone, which a chat call skips.
type embedOnly struct{}

func (embedOnly) Name() string { return "embedder" }
func (embedOnly) Chat(context.Context, *providers.ChatRequest) (*providers.ChatResponse, error) {
	return nil, io.ErrUnexpectedEOF
}
func (embedOnly) ChatStream(context.Context, *providers.ChatRequest) (providers.Stream, error) {
	return nil, io.ErrUnexpectedEOF
}
func (embedOnly) Embed(context.Context, *providers.EmbedRequest) (*providers.EmbedResponse, error) {
	return &providers.EmbedResponse{Embeddings: [][]float32{{1}}}, nil
}
func (embedOnly) Describe() providers.Description {
	return providers.Description{System: "custom", Capabilities: providers.CapEmbeddings}
}

const (
	pathStream = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hello\"}}]}\n\n" +
		"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" from memory.\"},\"finish_reason\":\"stop\"}]}\n\n" +
		"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o-mini\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":4,\"total_tokens\":13}}\n\n" +
		"data: [DONE]\n\n"
	pathEmbed = `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2]}],"model":"text-embedding-3-small","usage":{"prompt_tokens":3,"total_tokens":3}}`
)

// pathTransport answers chat, streamed chat and embeddings from memory.
type pathTransport struct{}

func (pathTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	body, ctype := openAIAnswer, "application/json"
	var in []byte
	if r.Body != nil {
		in, _ = io.ReadAll(r.Body)
		_ = r.Body.Close()
	}
	switch {
	case strings.HasSuffix(r.URL.Path, "/embeddings"):
		body = pathEmbed
	case bytes.Contains(in, []byte(`"stream":true`)):
		body, ctype = pathStream, "text/event-stream"
	}
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Header: http.Header{"Content-Type": {ctype}},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r}, nil
}
