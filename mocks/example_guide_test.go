package mocks_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/steadyllm/steady/mocks"
)

// Any OpenAI or Anthropic client can be pointed at the fake: here go-openai, which does not
// retry, meets the scripted 503, then the rate limit, then the answer; the journal keeps what
// the server received, keys redacted.
func ExampleNewServer_anyClient() {
	// docs:begin any-client
	s := mocks.NewServer(mocks.WithScript(
		mocks.Status(503),
		mocks.RateLimited(150*time.Millisecond), // retry-after-ms, Retry-After, x-ratelimit-* headers
		mocks.Reply("Hello!"),
	))
	defer s.Close()                          // also ends stalls and slow streams
	cfg := goopenai.DefaultConfig("sk-test") // go-openai, or any SDK: point it at the fake
	cfg.BaseURL = s.OpenAIBaseURL()
	cfg.HTTPClient = s.Client()
	oc := goopenai.NewClientWithConfig(cfg)
	req := goopenai.ChatCompletionRequest{Model: "gpt-4o-mini",
		Messages: []goopenai.ChatCompletionMessage{{Role: goopenai.ChatMessageRoleUser, Content: "Hi"}}}
	for range 3 {
		resp, err := oc.CreateChatCompletion(context.Background(), req)
		var apiErr *goopenai.APIError
		switch {
		case errors.As(err, &apiErr):
			fmt.Println("status", apiErr.HTTPStatusCode)
		case err != nil:
			fmt.Println(err)
		default:
			fmt.Println(resp.Choices[0].Message.Content)
		}
	}
	for _, r := range s.Journal().Requests() { // also .Intervals(), .MaxConcurrency(), .Wait(n)
		fmt.Println(r.Seq, r.Path, r.Step, r.Header.Get("Authorization"))
	}
	// docs:end any-client

	// Output:
	// status 503
	// status 429
	// Hello!
	// 1 /v1/chat/completions 503 REDACTED
	// 2 /v1/chat/completions 429 retry-after=150ms REDACTED
	// 3 /v1/chat/completions ok REDACTED
}
