package interop

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	openaioption "github.com/openai/openai-go/v3/option"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	steadyanthropic "github.com/steadyllm/steady/providers/anthropic"
	steadyopenai "github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

// The code of docs/official-sdks.md, run against the fake server.

// openai-go over the pipeline of a provider steady's client built: its calls share that
// provider's circuit, bulkhead and retry budget, and the pipeline retries the 503.
func TestGuide_OpenAISDKOverTheClientsPipeline(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.Status(http.StatusServiceUnavailable), mocks.Reply("through the pipeline")))
	policy := resilience.DefaultOptions()
	policy.RetryBaseDelaySeconds = 0.001
	c, err := client.New(client.WithProvider("openai", policy, func(hc *http.Client) (providers.Provider, error) {
		return steadyopenai.New(steadyopenai.Config{Name: "openai", BaseURL: s.OpenAIBaseURL(), APIKey: "sk-test", HTTPClient: hc, Model: "gpt-4o-mini"})
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// docs:begin openai-go
	hc := &http.Client{Transport: c.Pipeline("openai").Wrap(http.DefaultTransport)} // the client's own pipeline for openai
	oc := openai.NewClient(openaioption.WithBaseURL(s.OpenAIBaseURL()), openaioption.WithAPIKey("sk-test"),
		openaioption.WithHTTPClient(hc), openaioption.WithMaxRetries(0)) // the pipeline is the one retry layer
	completion, err := oc.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")},
	})
	// docs:end openai-go
	if err != nil {
		t.Fatal(err)
	}
	if got := completion.Choices[0].Message.Content; got != "through the pipeline" || s.Journal().Len() != 2 {
		t.Fatalf("answer %q after %d requests, want the pipeline's retry to serve it", got, s.Journal().Len())
	}
}

// anthropic-sdk-go over the *http.Client of the Anthropic provider steady's client built; once
// the circuit is open the SDK's call returns at once with the pipeline's rejection, which
// resilience.Rejection gives back — even with the SDK's default retries on.
func TestGuide_AnthropicSDKOverAProvidersHTTPClientAndItsRejection(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.Overloaded().Always()))
	opts := resilience.DefaultOptions()
	opts.RetryCount, opts.CircuitBreakerThreshold = 0, 1
	c, err := client.New(client.WithProvider("claude", opts, func(hc *http.Client) (providers.Provider, error) {
		return steadyanthropic.New(steadyanthropic.Config{Name: "claude", BaseURL: s.AnthropicBaseURL(), APIKey: "sk-ant-test", HTTPClient: hc, Model: "claude-haiku-4-5"})
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p := c.Pipeline("claude")

	// docs:begin anthropic-sdk-go
	hc := c.Provider("claude").(*steadyanthropic.Provider).HTTPClient() // on the provider's pipeline, redirects refused
	ac := anthropic.NewClient(anthropicoption.WithBaseURL(s.AnthropicBaseURL()), anthropicoption.WithAPIKey("sk-ant-test"),
		anthropicoption.WithHTTPClient(hc), anthropicoption.WithMaxRetries(0))
	// docs:end anthropic-sdk-go

	if _, err := ac.Messages.New(context.Background(), messageParams()); err == nil {
		t.Fatal("the overloaded server's answer was a success")
	}
	if p.CircuitState() != resilience.CircuitOpen {
		t.Fatalf("circuit %v after the threshold of failures", p.CircuitState())
	}
	before := s.Journal().Len()
	withDefaults := anthropic.NewClient(anthropicoption.WithBaseURL(s.AnthropicBaseURL()), anthropicoption.WithAPIKey("sk-ant-test"),
		anthropicoption.WithHTTPClient(hc)) // the SDK's two retries on: they must not undo the fail-fast
	_, err = withDefaults.Messages.New(context.Background(), messageParams())
	// docs:begin rejection
	var apiErr *anthropic.Error
	if errors.As(err, &apiErr) && errors.Is(resilience.Rejection(apiErr.Response), resilience.ErrCircuitOpen) {
		// the pipeline turned the call away without sending it: fall back, or tell the caller
	}
	// docs:end rejection
	if !errors.As(err, &apiErr) || !errors.Is(resilience.Rejection(apiErr.Response), resilience.ErrCircuitOpen) {
		t.Fatalf("got %v, want the circuit's rejection", err)
	}
	if s.Journal().Len() != before {
		t.Fatalf("%d requests sent through an open circuit", s.Journal().Len()-before)
	}
}
