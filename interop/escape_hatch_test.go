package interop

import (
	"context"
	"net/http"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	steadyanthropic "github.com/steadyllm/steady/providers/anthropic"
	"github.com/steadyllm/steady/resilience"
)

// The official SDK, handed the *http.Client of a provider that steady's client built, calls
// through that provider's resilience pipeline: with the SDK's own retries off, the pipeline
// retries the 529 and the SDK sees only the success.
func TestAnthropicSDK_OverTheClientsResilientHTTPClient(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.Overloaded(), mocks.Reply("through the pipeline")))
	policy := resilience.DefaultOptions()
	policy.RetryBaseDelaySeconds = 0.001
	policy.RetryUseJitter = false
	var retries int
	c, err := client.New(
		client.WithProvider("claude", policy, func(hc *http.Client) (providers.Provider, error) {
			return steadyanthropic.New(steadyanthropic.Config{Name: "claude", BaseURL: s.AnthropicBaseURL(), APIKey: "sk-ant-test", HTTPClient: hc, Model: "claude-haiku-4-5"})
		}),
		client.WithObserver(func(e resilience.Event) {
			if e.Type == resilience.EventRetryScheduled {
				retries++
			}
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	hc := c.Provider("claude").(*steadyanthropic.Provider).HTTPClient()
	sdk := anthropic.NewClient(option.WithBaseURL(s.AnthropicBaseURL()), option.WithAPIKey("sk-ant-test"),
		option.WithHTTPClient(hc), option.WithMaxRetries(0))
	msg, err := sdk.Messages.New(context.Background(), messageParams())
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != "through the pipeline" {
		t.Fatalf("content %+v", msg.Content)
	}
	if s.Journal().Len() != 2 || retries != 1 {
		t.Fatalf("server saw %d requests and the pipeline retried %d times, want 2 and 1", s.Journal().Len(), retries)
	}
}
