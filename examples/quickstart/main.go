// Command quickstart shows steady at work with no API key: it starts the embedded fake LLM
// server, scripts it to answer 429 (with Retry-After) and then 503 before succeeding, and asks
// it a question through steady's client, printing every attempt, every wait and the answer.
//
//	go run ./examples/quickstart
//
// With -live it calls the real API instead: OpenAI when OPENAI_API_KEY is set, else Anthropic
// when ANTHROPIC_API_KEY is set.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

func main() {
	live := flag.Bool("live", false, "call the real API (needs OPENAI_API_KEY or ANTHROPIC_API_KEY)")
	flag.Parse()
	var err error
	if *live {
		err = runLive(context.Background(), os.Stdout, os.Getenv)
	} else {
		err = run(context.Background(), os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// run calls the embedded fake server.
func run(ctx context.Context, out io.Writer) error {
	fake := mocks.NewServer(
		mocks.WithReply("Hello from the fake LLM server!"),
		mocks.WithScript(
			mocks.Status(http.StatusTooManyRequests).WithHeader("Retry-After", "1"),
			mocks.Status(http.StatusServiceUnavailable),
			mocks.OK(),
		),
	)
	defer fake.Close()

	policy := resilience.DefaultOptions()
	policy.RetryBaseDelaySeconds = 0.2 // keep the demo short; the default is 1 s
	fmt.Fprintf(out, "asking %s through bulkhead -> timeout -> circuit breaker -> retry\n", fake.OpenAIBaseURL())
	return ask(ctx, out, policy, func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{Name: "openai", BaseURL: fake.OpenAIBaseURL(), APIKey: "sk-quickstart-not-a-real-key",
			HTTPClient: hc, Model: "gpt-4o-mini"})
	})
}

// runLive calls the real OpenAI or Anthropic API.
func runLive(ctx context.Context, out io.Writer, getenv func(string) string) error {
	policy := resilience.DefaultOptions()
	switch {
	case getenv("OPENAI_API_KEY") != "":
		fmt.Fprintln(out, "asking OpenAI (live)")
		return ask(ctx, out, policy, func(hc *http.Client) (providers.Provider, error) {
			return openai.New(openai.Config{Name: "openai", APIKey: getenv("OPENAI_API_KEY"), HTTPClient: hc, Model: "gpt-4o-mini"})
		})
	case getenv("ANTHROPIC_API_KEY") != "":
		fmt.Fprintln(out, "asking Anthropic (live)")
		return ask(ctx, out, policy, func(hc *http.Client) (providers.Provider, error) {
			return anthropic.New(anthropic.Config{Name: "anthropic", APIKey: getenv("ANTHROPIC_API_KEY"), HTTPClient: hc, Model: "claude-haiku-4-5"})
		})
	}
	return errors.New("-live needs OPENAI_API_KEY or ANTHROPIC_API_KEY")
}

func ask(ctx context.Context, out io.Writer, policy resilience.Options, factory client.ProviderFactory) error {
	start := time.Now()
	c, err := client.New(
		client.WithProvider("llm", policy, factory),
		client.WithObserver(func(e resilience.Event) { report(out, time.Since(start), e) }),
	)
	if err != nil {
		return err
	}
	resp, err := c.Chat(ctx, &providers.ChatRequest{
		Messages:  []providers.Message{{Role: providers.RoleUser, Content: "Say hello in one short sentence."}},
		MaxTokens: 50,
	})
	var pe *providers.Error
	if errors.As(err, &pe) {
		return fmt.Errorf("%s after %d attempts: %w", pe.Kind, pe.Attempts, err)
	} else if err != nil {
		return err
	}
	fmt.Fprintf(out, "answer: %q (%d input + %d output tokens, finish %s)\n",
		resp.Message.Content, resp.Usage.InputTokens, resp.Usage.OutputTokens, resp.FinishReason)
	fmt.Fprintf(out, "done in %s; circuit is %s\n", time.Since(start).Round(time.Millisecond), c.Pipeline("llm").CircuitState())
	return nil
}

// report prints what the pipeline does.
func report(out io.Writer, at time.Duration, e resilience.Event) {
	at = at.Round(time.Millisecond)
	switch e.Type {
	case resilience.EventAttemptFinished:
		result := fmt.Sprintf("%d %s", e.Status, http.StatusText(e.Status))
		if e.Err != nil {
			result = e.Err.Error()
		}
		fmt.Fprintf(out, "%7s  attempt %d of %d -> %s\n", at, e.Attempt, e.MaxAttempts, result)
	case resilience.EventRetryScheduled:
		source := "exponential backoff"
		if e.ServerHint {
			source = "the server's Retry-After"
		}
		fmt.Fprintf(out, "%7s  waiting %s before retrying (%s; from %s)\n", at, e.Delay.Round(time.Millisecond), e.Reason, source)
	case resilience.EventGaveUp:
		fmt.Fprintf(out, "%7s  gave up: %s\n", at, e.Reason)
	}
}
