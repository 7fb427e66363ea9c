// Command quickstart shows steady's resilience pipeline at work with no API key: it starts the
// embedded fake LLM server, scripts it to fail with 503 and then 429 (with retry-after-ms)
// before answering, and calls it with go-openai over the pipeline, printing every step.
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/resilience"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) error {
	// The fake server: first call 503, second 429 asking for 250 ms, then a normal answer.
	fake := mocks.NewServer(
		mocks.WithReply("Hello from the fake LLM server!"),
		mocks.WithScript(mocks.Status(http.StatusServiceUnavailable), mocks.RateLimited(250*time.Millisecond), mocks.OK()),
	)
	defer fake.Close()

	opts := resilience.DefaultOptions()
	opts.RetryBaseDelaySeconds = 0.2 // keep the demo short; the default is 1 s
	start := time.Now()
	pipeline, err := resilience.New(opts, resilience.WithName("openai"), resilience.OnEvent(func(e resilience.Event) {
		at := time.Since(start).Round(time.Millisecond)
		switch e.Kind {
		case resilience.EventAttemptFinished:
			fmt.Fprintf(out, "%7s  attempt %d/%d -> %s\n", at, e.Attempt, e.MaxAttempts, outcome(e))
		case resilience.EventRetryScheduled:
			source := "backoff"
			if e.ServerHint {
				source = "server hint"
			}
			fmt.Fprintf(out, "%7s  retrying after %s (%s, %s)\n", at, e.Delay.Round(time.Millisecond), e.Reason, source)
		case resilience.EventGaveUp:
			fmt.Fprintf(out, "%7s  gave up: %s\n", at, e.Reason)
		}
	}))
	if err != nil {
		return err
	}

	cfg := openai.DefaultConfig("sk-quickstart-not-a-real-key")
	cfg.BaseURL = fake.OpenAIBaseURL()
	cfg.HTTPClient = &http.Client{Transport: pipeline.Wrap(http.DefaultTransport)}
	client := openai.NewClientWithConfig(cfg)

	fmt.Fprintf(out, "calling %s through bulkhead -> timeout -> circuit breaker -> retry\n", fake.OpenAIBaseURL())
	resp, err := client.CreateChatCompletion(ctx, openai.ChatCompletionRequest{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "Say hello."}},
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "answer: %q (%d prompt + %d completion tokens)\n",
		resp.Choices[0].Message.Content, resp.Usage.PromptTokens, resp.Usage.CompletionTokens)
	fmt.Fprintf(out, "survived %d failures in %s; circuit is %s\n",
		fake.Journal().Len()-1, time.Since(start).Round(time.Millisecond), pipeline.CircuitState())
	return nil
}

func outcome(e resilience.Event) string {
	if e.Err != nil {
		return e.Err.Error()
	}
	return fmt.Sprintf("%d %s", e.Status, http.StatusText(e.Status))
}
