package mocks_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
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

// Stored answers for a test of code that waits for background answers: the reads get a
// script of their own, and an answer can be made gone, as after its retention ended.
func ExampleWithRouteScript_storedResponses() {
	// docs:begin stored
	s := mocks.NewServer(mocks.WithRouteScript(mocks.RouteStoredResponses,
		mocks.Status(503),                       // the first read of a stored answer: a 503
		mocks.Step{RetryAfter: 5 * time.Second}, // the next: as it stands, with a Retry-After
	))
	defer s.Close()
	c, err := client.New(client.WithProvider("openai", resilience.DefaultOptions(), func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{API: openai.Responses, BaseURL: s.OpenAIBaseURL(), APIKey: "sk-test", HTTPClient: hc, Model: "gpt-5"})
	}))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	ctx := context.Background()
	resp, err := c.Chat(ctx, &providers.ChatRequest{Background: true,
		Messages: []providers.Message{{Role: providers.RoleUser, Content: "A long report."}}})
	if err != nil {
		panic(err)
	}
	for range 2 {
		got, err := c.Retrieve(ctx, *resp.Stored, client.Deferred(1)) // deferred: tried once, no backoff
		if err != nil {
			fmt.Println("read:", providers.KindOf(err))
			continue
		}
		fmt.Println("read:", got.Status, "come back in", got.RetryAfter)
	}
	s.Forget(resp.Stored.ID) // its retention ended (or Step{Expire: true} on the call that started it)
	_, err = c.Retrieve(ctx, *resp.Stored)
	fmt.Println("read:", errors.Is(err, providers.ErrResponseGone))
	// docs:end stored

	// Output:
	// read: overloaded
	// read: in_progress come back in 5s
	// read: true
}

// A fake that counts prompts with a tokenizer of its own — here 1.3 tokens a word — for a
// test of a client that estimates prompt tokens and learns from the usage it is billed.
func ExampleWithTokenizer() {
	// docs:begin tokenizer
	words := func(text string) int { return (len(strings.Fields(text))*13 + 9) / 10 }
	s := mocks.NewServer(mocks.WithTokenizer(words)) // must be safe for concurrent use
	defer s.Close()
	cfg := goopenai.DefaultConfig("sk-test")
	cfg.BaseURL, cfg.HTTPClient = s.OpenAIBaseURL(), s.Client()
	oc := goopenai.NewClientWithConfig(cfg)
	prompt := "Count these five words please"
	resp, err := oc.CreateChatCompletion(context.Background(), goopenai.ChatCompletionRequest{Model: "gpt-4o",
		Messages: []goopenai.ChatCompletionMessage{{Role: goopenai.ChatMessageRoleUser, Content: prompt}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Usage.PromptTokens, "by the tokenizer;", mocks.Tokens(prompt), "by default")
	// docs:end tokenizer

	// Output:
	// 7 by the tokenizer; 8 by default
}
