package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	anthropicsdk "github.com/anthropics/anthropic-sdk-go"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/option"
	openaisdk "github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"
	goopenai "github.com/sashabaranov/go-openai"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

// subject is one client under test, built over an in-memory transport. Every function checks
// what it read, so that a benchmark of a client that misreads the answer fails instead of
// timing nothing.
type subject struct {
	name string
	// chat makes one call and returns the answer's text.
	chat func(ctx context.Context) (string, error)
	// stream makes one streamed call, reads it to the end, and returns the number of content
	// deltas and the bytes of text they carried. afterFirst, when not nil, runs once the first
	// content delta has arrived.
	stream func(ctx context.Context, afterFirst func()) (deltas, text int, err error)
	// open starts a streamed call, reads its first content delta, and returns the open stream's
	// Close.
	open func(ctx context.Context) (close func() error, err error)
}

// wire is an API wire format and the clients that speak it.
type wire struct {
	name     string
	answer   []byte // the JSON answer
	events   []byte // the streamed answer
	head     []byte // what a client has read of events at its first content delta
	chunks   int    // the content deltas of events
	subjects func(rt http.RoundTripper) []subject
}

var wires = []wire{
	{name: "openai", answer: openAIAnswer, events: openAIStream, head: openAIStreamHead, chunks: streamChunks, subjects: openAISubjects},
	{name: "anthropic", answer: anthropicAnswer, events: anthropicStream, head: anthropicStreamHead, chunks: streamChunks, subjects: anthropicSubjects},
	{name: "responses", answer: responsesAnswer, events: responsesStream, head: responsesStreamHead, chunks: responsesChunks, subjects: responsesSubjects},
}

func openAISubjects(rt http.RoundTripper) []subject {
	return []subject{goOpenAI(rt, "go-openai"), goOpenAI(pipelined(rt), "go-openai+pipeline"), steadySubject(rt, openAIFactory), openAIGo(rt)}
}

func anthropicSubjects(rt http.RoundTripper) []subject {
	return []subject{steadySubject(rt, anthropicFactory), anthropicSDK(rt)}
}

// steadyPolicy is the full pipeline as users run it (DefaultOptions), with room for the
// thousands of streams the memory benchmark holds open at once.
func steadyPolicy() resilience.Options {
	o := resilience.DefaultOptions()
	o.BulkheadMaxConcurrency = 4096
	return o
}

func openAIFactory(hc *http.Client) (providers.Provider, error) {
	return openai.New(openai.Config{Name: "openai", BaseURL: "http://127.0.0.1:1/v1", APIKey: "sk-bench",
		HTTPClient: hc, Model: openAIModel})
}

func anthropicFactory(hc *http.Client) (providers.Provider, error) {
	return anthropic.New(anthropic.Config{Name: "anthropic", BaseURL: "http://127.0.0.1:1", APIKey: "sk-ant-bench",
		HTTPClient: hc, Model: anthropicModel})
}

// steadySubject is steady's client (client.New) with one provider behind the full pipeline.
func steadySubject(rt http.RoundTripper, factory client.ProviderFactory) subject {
	c, err := client.New(client.WithProvider("llm", steadyPolicy(), factory), client.WithBaseTransport(rt))
	if err != nil {
		panic(err)
	}
	temp := temperature
	req := &providers.ChatRequest{
		Messages: []providers.Message{
			{Role: providers.RoleSystem, Content: systemPrompt},
			{Role: providers.RoleUser, Content: userPrompt},
		},
		MaxTokens:   maxTokens,
		Temperature: &temp,
	}
	return subject{
		name: "steady",
		chat: func(ctx context.Context) (string, error) {
			resp, err := c.Chat(ctx, req)
			if err != nil {
				return "", err
			}
			return resp.Message.Content, nil
		},
		stream: func(ctx context.Context, afterFirst func()) (int, int, error) {
			s, err := c.ChatStream(ctx, req)
			if err != nil {
				return 0, 0, err
			}
			defer s.Close()
			deltas, text := 0, 0
			for {
				d, err := s.Recv()
				if err == io.EOF {
					return deltas, text, nil
				}
				if err != nil {
					return deltas, text, err
				}
				if d.Text != "" {
					deltas, text = deltas+1, text+len(d.Text)
					if deltas == 1 && afterFirst != nil {
						afterFirst()
					}
				}
			}
		},
		open: func(ctx context.Context) (func() error, error) {
			s, err := c.ChatStream(ctx, req)
			if err != nil {
				return nil, err
			}
			for {
				d, err := s.Recv()
				if err != nil {
					s.Close()
					return nil, err
				}
				if d.Text != "" {
					return s.Close, nil
				}
			}
		},
	}
}

// pipelined returns rt behind steady's pipeline (steadyPolicy), as the client puts it.
func pipelined(rt http.RoundTripper) http.RoundTripper {
	p, err := resilience.New(steadyPolicy(), resilience.WithName("openai"))
	if err != nil {
		panic(err)
	}
	return p.Wrap(rt)
}

// goOpenAI is sashabaranov/go-openai called directly: the library steady's OpenAI provider
// runs on. Over the bare transport it is the floor of an OpenAI call; over pipelined(rt) it
// shows what the pipeline alone adds.
func goOpenAI(rt http.RoundTripper, name string) subject {
	cfg := goopenai.DefaultConfig("sk-bench")
	cfg.BaseURL = "http://127.0.0.1:1/v1"
	cfg.HTTPClient = &http.Client{Transport: rt}
	c := goopenai.NewClientWithConfig(cfg)
	req := goopenai.ChatCompletionRequest{
		Model: openAIModel,
		Messages: []goopenai.ChatCompletionMessage{
			{Role: goopenai.ChatMessageRoleSystem, Content: systemPrompt},
			{Role: goopenai.ChatMessageRoleUser, Content: userPrompt},
		},
		MaxCompletionTokens: maxTokens,
		Temperature:         temperature,
	}
	streamReq := req
	streamReq.Stream = true
	streamReq.StreamOptions = &goopenai.StreamOptions{IncludeUsage: true}
	return subject{
		name: name,
		chat: func(ctx context.Context) (string, error) {
			resp, err := c.CreateChatCompletion(ctx, req)
			if err != nil {
				return "", err
			}
			return resp.Choices[0].Message.Content, nil
		},
		stream: func(ctx context.Context, afterFirst func()) (int, int, error) {
			s, err := c.CreateChatCompletionStream(ctx, streamReq)
			if err != nil {
				return 0, 0, err
			}
			defer s.Close()
			deltas, text := 0, 0
			for {
				chunk, err := s.Recv()
				if errors.Is(err, io.EOF) {
					return deltas, text, nil
				}
				if err != nil {
					return deltas, text, err
				}
				if len(chunk.Choices) > 0 && chunk.Choices[0].Delta.Content != "" {
					deltas, text = deltas+1, text+len(chunk.Choices[0].Delta.Content)
					if deltas == 1 && afterFirst != nil {
						afterFirst()
					}
				}
			}
		},
		open: func(ctx context.Context) (func() error, error) {
			s, err := c.CreateChatCompletionStream(ctx, streamReq)
			if err != nil {
				return nil, err
			}
			for {
				chunk, err := s.Recv()
				if err != nil {
					s.Close()
					return nil, err
				}
				if len(chunk.Choices) > 0 && chunk.Choices[0].Delta.Content != "" {
					return s.Close, nil
				}
			}
		},
	}
}

// openAIGo is the official OpenAI SDK (openai/openai-go) with its retries off.
func openAIGo(rt http.RoundTripper) subject {
	c := openaisdk.NewClient(
		openaiopt.WithBaseURL("http://127.0.0.1:1/v1"),
		openaiopt.WithAPIKey("sk-bench"),
		openaiopt.WithHTTPClient(&http.Client{Transport: rt}),
		openaiopt.WithMaxRetries(0),
	)
	params := openaisdk.ChatCompletionNewParams{
		Model: openAIModel,
		Messages: []openaisdk.ChatCompletionMessageParamUnion{
			openaisdk.SystemMessage(systemPrompt),
			openaisdk.UserMessage(userPrompt),
		},
		MaxCompletionTokens: openaisdk.Int(maxTokens),
		Temperature:         openaisdk.Float(temperature),
	}
	streamParams := params
	streamParams.StreamOptions = openaisdk.ChatCompletionStreamOptionsParam{IncludeUsage: openaisdk.Bool(true)}
	return subject{
		name: "openai-go",
		chat: func(ctx context.Context) (string, error) {
			resp, err := c.Chat.Completions.New(ctx, params)
			if err != nil {
				return "", err
			}
			return resp.Choices[0].Message.Content, nil
		},
		stream: func(ctx context.Context, afterFirst func()) (int, int, error) {
			s := c.Chat.Completions.NewStreaming(ctx, streamParams)
			defer s.Close()
			deltas, text := 0, 0
			for s.Next() {
				chunk := s.Current()
				if len(chunk.Choices) > 0 && chunk.Choices[0].Delta.Content != "" {
					deltas, text = deltas+1, text+len(chunk.Choices[0].Delta.Content)
					if deltas == 1 && afterFirst != nil {
						afterFirst()
					}
				}
			}
			return deltas, text, s.Err()
		},
		open: func(ctx context.Context) (func() error, error) {
			s := c.Chat.Completions.NewStreaming(ctx, streamParams)
			for s.Next() {
				chunk := s.Current()
				if len(chunk.Choices) > 0 && chunk.Choices[0].Delta.Content != "" {
					return s.Close, nil
				}
			}
			s.Close()
			return nil, fmt.Errorf("openai-go: stream ended before content: %v", s.Err())
		},
	}
}

// anthropicSDK is the official Anthropic SDK (anthropics/anthropic-sdk-go) with its retries off.
func anthropicSDK(rt http.RoundTripper) subject {
	c := anthropicsdk.NewClient(
		anthropicopt.WithBaseURL("http://127.0.0.1:1"),
		anthropicopt.WithAPIKey("sk-ant-bench"),
		anthropicopt.WithHTTPClient(&http.Client{Transport: rt}),
		anthropicopt.WithMaxRetries(0),
	)
	params := anthropicsdk.MessageNewParams{
		Model:       anthropicModel,
		MaxTokens:   maxTokens,
		Temperature: anthropicsdk.Float(temperature),
		System:      []anthropicsdk.TextBlockParam{{Text: systemPrompt}},
		Messages:    []anthropicsdk.MessageParam{anthropicsdk.NewUserMessage(anthropicsdk.NewTextBlock(userPrompt))},
	}
	textOf := func(ev anthropicsdk.MessageStreamEventUnion) string {
		if ev.Type == "content_block_delta" && ev.Delta.Type == "text_delta" {
			return ev.Delta.Text
		}
		return ""
	}
	return subject{
		name: "anthropic-sdk-go",
		chat: func(ctx context.Context) (string, error) {
			msg, err := c.Messages.New(ctx, params)
			if err != nil {
				return "", err
			}
			if len(msg.Content) == 0 {
				return "", errors.New("anthropic-sdk-go: no content")
			}
			return msg.Content[0].Text, nil
		},
		stream: func(ctx context.Context, afterFirst func()) (int, int, error) {
			s := c.Messages.NewStreaming(ctx, params)
			defer s.Close()
			deltas, text := 0, 0
			for s.Next() {
				if t := textOf(s.Current()); t != "" {
					deltas, text = deltas+1, text+len(t)
					if deltas == 1 && afterFirst != nil {
						afterFirst()
					}
				}
			}
			return deltas, text, s.Err()
		},
		open: func(ctx context.Context) (func() error, error) {
			s := c.Messages.NewStreaming(ctx, params)
			for s.Next() {
				if textOf(s.Current()) != "" {
					return s.Close, nil
				}
			}
			s.Close()
			return nil, fmt.Errorf("anthropic-sdk-go: stream ended before content: %v", s.Err())
		},
	}
}
