// Command failures plays, against the embedded fake LLM server, the failures
// docs/failures.md explains — and what steady does with each:
//
//   - a stream cut after its fifth word, continued by another provider (rescue "continue");
//   - a prompt too long for one model, answered by a provider that declares a larger window;
//   - a refusal, sent to another provider because LLM.FallbackOn says so;
//   - a chain where every provider fails, and the error that explains it.
//
// It needs no API key and nothing installed:
//
//	go run ./examples/failures
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "failures:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) error {
	for _, scenario := range []func(context.Context, io.Writer) error{rescue, contextWindow, refusal, chain} {
		if err := scenario(ctx, out); err != nil {
			return err
		}
	}
	return nil
}

// policy is the default policy with short backoffs, so the example runs in milliseconds.
func policy() resilience.Options {
	o := resilience.DefaultOptions()
	o.RetryBaseDelaySeconds = 0.01
	return o
}

// openAIAt is a provider option for an OpenAI-wire provider on the fake server s.
func openAIAt(name string, s *mocks.Server, model string) client.Option {
	return client.WithProvider(name, policy(), func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{Name: name, BaseURL: s.OpenAIBaseURL(), APIKey: "sk-example", HTTPClient: hc, Model: model})
	})
}

// claudeAt is a provider option for an Anthropic-wire provider on the fake server s.
func claudeAt(name string, s *mocks.Server) client.Option {
	return client.WithProvider(name, policy(), func(hc *http.Client) (providers.Provider, error) {
		return anthropic.New(anthropic.Config{Name: name, BaseURL: s.AnthropicBaseURL(), APIKey: "sk-ant-example", HTTPClient: hc, Model: "claude-haiku-4-5"})
	})
}

func ask(text string) *providers.ChatRequest {
	return &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: text}}, MaxTokens: 100}
}

// rescue: OpenAI's stream is cut after five words; Claude, which takes a prefill, is sent
// them and continues the answer (rescue "continue", the default), after a delta marked
// Continued.
func rescue(ctx context.Context, out io.Writer) error {
	const story = "one two three four five six seven eight"
	cut := mocks.NewServer(mocks.WithReply(story), mocks.WithScript(mocks.CutStream(5).CountingContent()))
	defer cut.Close()
	rest := mocks.NewServer(mocks.WithReply(story))
	defer rest.Close()
	c, err := client.New(openAIAt("openai", cut, "gpt-4o-mini"), claudeAt("claude", rest),
		client.WithFallback("openai", "claude"))
	if err != nil {
		return err
	}
	defer c.Close()

	// docs:begin stream
	stream, err := c.ChatStream(ctx, ask("Tell me a story.")) // StreamRescue "continue", the default
	if err != nil {
		return err // nothing streamed yet: every route failed before its first content
	}
	defer stream.Close()
	var text strings.Builder
	for delta, err := range stream.Deltas() {
		if err != nil {
			return err // a *providers.Error whose Partial holds what was delivered
		}
		if delta.Continued { // another route goes on from where the answer stopped: keep it all
			fmt.Fprintf(out, "[continued after %q]\n", text.String())
		}
		text.WriteString(delta.Text)
	}
	acc := stream.Accounting()
	fmt.Fprintf(out, "%q from %s; %d failed attempt(s) before it\n", text.String(), stream.Provider(), acc.FailedAttempts)
	// docs:end stream
	return nil
}

// contextWindow: the small model answers that the prompt is too long; the chain skips to the
// provider that declares a larger window.
func contextWindow(ctx context.Context, out io.Writer) error {
	small := mocks.NewServer(mocks.WithContextWindows(map[string]int{"small-model": 1000}))
	defer small.Close()
	large := mocks.NewServer(mocks.WithReply("read it all"))
	defer large.Close()
	// docs:begin windows
	c, err := client.New(
		openAIAt("small", small, "small-model"), // declares no window: tried first, as listed
		claudeAt("large", large),
		client.WithContextWindow("large", 200_000, nil),
		client.WithFallback("small", "large"),
	)
	// docs:end windows
	if err != nil {
		return err
	}
	defer c.Close()
	resp, err := c.Chat(ctx, ask(strings.Repeat("a long document ", 400)))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%q from %s; small saw %d request(s)\n", resp.Message.Content, resp.Provider, small.Journal().Len())

	// A gateway's context-window fallback: a prompt too long for the chain goes to "large",
	// which declares nothing; "other", next in the chain, is not asked.
	other := mocks.NewServer()
	defer other.Close()
	opts := []client.Option{openAIAt("small", small, "small-model"), openAIAt("other", other, "gpt-4o-mini"),
		claudeAt("large", large), client.WithFallback("small", "other")}
	// docs:begin context-window-fallback
	opts = append(opts, client.WithFallbackOn(providers.KindContextTooLong, "large"))
	// docs:end context-window-fallback
	wide, err := client.New(opts...)
	if err != nil {
		return err
	}
	defer wide.Close()
	if resp, err = wide.Chat(ctx, ask(strings.Repeat("a long document ", 400))); err != nil {
		return err
	}
	fmt.Fprintf(out, "FallbackOn context_too_long: %q from %s; other saw %d request(s)\n", resp.Message.Content, resp.Provider,
		other.Journal().Len())
	return nil
}

// refusal: the first provider declines; by default a refusal stops the chain, and
// WithFallbackOn (LLM.FallbackOn) sends it to another provider instead.
func refusal(ctx context.Context, out io.Writer) error {
	strict := mocks.NewServer(mocks.WithScript(mocks.Refusal("I can't help with that.").Always()))
	defer strict.Close()
	other := mocks.NewServer(mocks.WithReply("Here is how."))
	defer other.Close()
	for _, fallbackOn := range []bool{false, true} {
		opts := []client.Option{openAIAt("strict", strict, "gpt-4o-mini"), claudeAt("other", other), client.WithFallback("strict", "other")}
		if fallbackOn {
			// docs:begin fallback-on
			opts = append(opts, client.WithFallbackOn(providers.KindRefused, "other"))
			// docs:end fallback-on
		}
		c, err := client.New(opts...)
		if err != nil {
			return err
		}
		resp, err := c.Chat(ctx, ask("How do I pick a lock?"))
		_ = c.Close()
		var e *providers.Error
		switch {
		case errors.As(err, &e):
			fmt.Fprintf(out, "FallbackOn %v: %s by %s: %q\n", fallbackOn, e.Kind, e.Provider, e.Message)
		case err != nil:
			return err
		default:
			fmt.Fprintf(out, "FallbackOn %v: %q from %s\n", fallbackOn, resp.Message.Content, resp.Provider)
		}
	}
	return nil
}

// chain: every provider fails, each its own way; the error leads with the failure that
// explains the outcome and lists the others.
func chain(ctx context.Context, out io.Writer) error {
	broke := mocks.NewServer(mocks.WithScript(mocks.QuotaExceeded().Always()))
	defer broke.Close()
	busy := mocks.NewServer(mocks.WithScript(mocks.Overloaded().Always()))
	defer busy.Close()
	c, err := client.New(openAIAt("openai", broke, "gpt-4o-mini"), claudeAt("claude", busy),
		client.WithFallback("openai", "claude"))
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Chat(ctx, ask("Hello?"))
	// docs:begin errors
	var e *providers.Error
	if errors.As(err, &e) { // the failure that explains the outcome
		fmt.Fprintf(out, "%s failed: %s (HTTP %d, %d attempts, gave up: %s); try later: %v\n",
			e.Provider, e.Kind, e.StatusCode, e.Attempts, e.GaveUp, e.Temporary())
	}
	var chain *client.ChainError
	if errors.As(err, &chain) { // every provider's failure, in chain order
		for _, f := range chain.Failures {
			fmt.Fprintf(out, "  %s: %s\n", f.Provider, f.Kind)
		}
	}
	// docs:end errors
	return nil
}
