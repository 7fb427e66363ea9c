// Command streaming streams an answer through steady's client from the embedded fake server.
// The first attempt is refused with 529 (overloaded) and retried before any text reaches the
// caller; the second streams the answer word by word.
//
//	go run ./examples/streaming
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "streaming:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) error {
	fake := mocks.NewServer(
		mocks.WithReply("Streams survive the real world when every layer plays its part."),
		mocks.WithScript(mocks.Overloaded(), mocks.SlowStream(30*time.Millisecond)),
	)
	defer fake.Close()

	policy := resilience.DefaultOptions()
	policy.RetryBaseDelaySeconds = 0.1
	c, err := client.New(
		client.WithProvider("openai", policy, func(hc *http.Client) (providers.Provider, error) {
			return openai.New(openai.Config{Name: "openai", BaseURL: fake.OpenAIBaseURL(), APIKey: "sk-demo", HTTPClient: hc, Model: "gpt-4o-mini"})
		}),
		client.WithObserver(func(e resilience.Event) {
			if e.Type == resilience.EventRetryScheduled {
				fmt.Fprintf(out, "[%s: %s, retrying in %s]\n", e.Pipeline, e.Reason, e.Delay.Round(time.Millisecond))
			}
		}),
	)
	if err != nil {
		return err
	}
	stream, err := c.ChatStream(ctx, &providers.ChatRequest{
		Messages: []providers.Message{{Role: providers.RoleUser, Content: "Tell me about streams."}},
	})
	if err != nil {
		return err
	}
	defer stream.Close()
	start := time.Now()
	for delta, err := range stream.Deltas() {
		if err != nil {
			return err // a *providers.Error; its Partial field holds the text received so far
		}
		fmt.Fprint(out, delta.Text)
		if delta.Done {
			fmt.Fprintf(out, "\n[done from %s in %s: %s, %d+%d tokens]\n", stream.Provider(),
				time.Since(start).Round(10*time.Millisecond), delta.FinishReason, delta.Usage.InputTokens, delta.Usage.OutputTokens)
		}
	}
	return nil
}
