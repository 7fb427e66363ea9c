// Command wire asks the embedded fake LLM server for what docs/wire.md describes, on the wire
// formats steady speaks:
//
//   - a structured output with an image, on the Anthropic wire, and extended thinking sent
//     back on the next turn;
//   - OpenAI's Responses API: a stored answer continued by the next turn, an answer made
//     in background mode, read until it is complete, a background stream whose answer is
//     gone, a conversation the provider keeps, and a compaction item with what a fallback
//     does with it;
//   - Anthropic's server tools given by their versioned type, and the blocks they leave;
//   - what the rate-limit headers of an answer said.
//
// It needs no API key and nothing installed:
//
//	go run ./examples/wire
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "wire:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) error {
	fake := mocks.NewServer(mocks.WithRateLimits(mocks.RateLimits{RequestsPerMinute: 500, TokensPerMinute: 100_000}))
	defer fake.Close()
	for _, f := range []func(context.Context, io.Writer, *mocks.Server) error{fullRequest, responses, background, gone,
		conversation, compaction, serverTools} {
		if err := f(ctx, out, fake); err != nil {
			return err
		}
	}
	return nil
}

// receipt is the structured output the example asks for.
type receipt struct {
	Shop  string  `json:"shop"`
	Total float64 `json:"total"`
}

var receiptSchema = json.RawMessage(`{"type": "object", "properties": {"shop": {"type": "string"}, "total": {"type": "number"}},
	"required": ["shop", "total"], "additionalProperties": false}`)

// jpeg stands for the bytes of a photo.
var jpeg = []byte{0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0x00}

func fullRequest(ctx context.Context, out io.Writer, fake *mocks.Server) error {
	c, err := client.New(client.WithProvider("claude", resilience.DefaultOptions(), func(hc *http.Client) (providers.Provider, error) {
		return anthropic.New(anthropic.Config{Name: "claude", BaseURL: fake.AnthropicBaseURL(), APIKey: "sk-ant-example",
			HTTPClient: hc, Model: "claude-sonnet-4-5"})
	}))
	if err != nil {
		return err
	}
	defer c.Close()

	// docs:begin full-request
	// An image (bytes or a URL) next to text, a structured output, extended thinking, and a
	// cache breakpoint after the long system prompt.
	req := &providers.ChatRequest{
		Messages: []providers.Message{
			{Role: providers.RoleSystem, Content: "You read receipts. (A long, stable prompt.)", Cache: providers.CacheDefault},
			{Role: providers.RoleUser, Parts: []providers.Part{
				providers.TextPart("What is on this receipt?"),
				providers.ImagePart(providers.Image{Data: jpeg, MediaType: "image/jpeg"}),
			}},
		},
		Schema:    &providers.JSONSchema{Name: "receipt", Schema: receiptSchema, Strict: true},
		Reasoning: &providers.Reasoning{BudgetTokens: 2048},
		MaxTokens: 4096,
	}
	resp, err := c.Chat(ctx, req)
	if err != nil {
		return err
	}
	var r receipt
	if err := resp.DecodeJSON(&r); err != nil { // resp.JSON holds the answer when it is valid JSON
		return err
	}
	fmt.Fprintf(out, "receipt: %+v; thought %d block(s); cache written %d tokens, read %d\n",
		r, len(resp.Message.Thinking), resp.Usage.CacheWriteInputTokens, resp.Usage.CachedInputTokens)
	if rl := resp.RateLimit; rl != nil { // also on errors, and on Stream.RateLimit()
		fmt.Fprintf(out, "rate limit: %d of %d requests left this minute\n", rl.Requests.Remaining, rl.Requests.Limit)
	}

	// The next turn: append the answer as it is; its signed thinking goes back with it.
	req.Messages = append(req.Messages, resp.Message,
		providers.Message{Role: providers.RoleUser, Content: "And the date?"})
	req.Schema = nil
	if _, err := c.Chat(ctx, req); err != nil {
		return err
	}
	// docs:end full-request
	return nil
}

// responsesClient is a client whose OpenAI provider speaks the Responses API.
func responsesClient(fake *mocks.Server) (*client.Client, error) {
	return client.New(client.WithProvider("openai", resilience.DefaultOptions(), func(hc *http.Client) (providers.Provider, error) {
		// docs:begin responses-provider
		return openai.New(openai.Config{Name: "openai", API: openai.Responses, BaseURL: fake.OpenAIBaseURL(),
			APIKey: "sk-example", HTTPClient: hc, Model: "gpt-5"})
		// docs:end responses-provider
	}))
}

func responses(ctx context.Context, out io.Writer, fake *mocks.Server) error {
	c, err := responsesClient(fake)
	if err != nil {
		return err
	}
	defer c.Close()
	resp, err := c.Chat(ctx, &providers.ChatRequest{Messages: []providers.Message{
		{Role: providers.RoleUser, Content: "Name a colour."}}})
	if err != nil {
		return err
	}
	// docs:begin previous
	// With store on (OpenAI's default), the answer is kept: the next turn sends only the
	// new message, and only the route that stored the answer is asked.
	next := &providers.ChatRequest{Previous: resp.Stored, Messages: []providers.Message{
		{Role: providers.RoleUser, Content: "And in French?"}}}
	resp2, err := c.Chat(ctx, next)
	// docs:end previous
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "responses: stored %v, the next turn served by %s (%s)\n", resp.Stored != nil, resp2.Provider, resp2.Status)
	return nil
}

func background(ctx context.Context, out io.Writer, fake *mocks.Server) error {
	c, err := responsesClient(fake)
	if err != nil {
		return err
	}
	defer c.Close()
	msgs := []providers.Message{{Role: providers.RoleUser, Content: "Write a long report."}}
	var seen []providers.ResponseStatus
	// docs:begin background
	resp, err := c.Chat(ctx, &providers.ChatRequest{Background: true, Messages: msgs})
	for err == nil && resp.Status.Pending() { // queued, in_progress: no answer yet
		seen = append(seen, resp.Status)
		// … wait as the caller sees fit (a job queue, a timer) …
		resp, err = c.Retrieve(ctx, *resp.Stored) // GET /responses/{id}, on the route that stored it
	}
	// c.Cancel(ctx, *resp.Stored) would stop it: POST /responses/{id}/cancel
	// docs:end background
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "background: %v, then %s: %q\n", seen, resp.Status, resp.Message.Content)
	return nil
}
