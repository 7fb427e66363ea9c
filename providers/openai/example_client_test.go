package openai_test

import (
	"context"
	"fmt"
	"net/http"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

// The go-openai client under a provider stays reachable, already on the provider's resilient
// transport, for what the neutral API lacks: here the pipeline retries a 503 for it.
func ExampleProvider_Client() {
	s := mocks.NewServer(mocks.WithScript(mocks.Status(http.StatusServiceUnavailable), mocks.Reply("from go-openai")))
	defer s.Close()
	policy := resilience.DefaultOptions()
	policy.RetryBaseDelaySeconds = 0.001
	c, err := client.New(client.WithProvider("openai", policy, func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{Name: "openai", BaseURL: s.OpenAIBaseURL(), APIKey: "sk-example", HTTPClient: hc, Model: "gpt-4o-mini"})
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	// docs:begin go-openai
	goc := c.Provider("openai").(*openai.Provider).Client() // a *goopenai.Client over the pipeline
	resp, err := goc.CreateChatCompletion(context.Background(), goopenai.ChatCompletionRequest{
		Model:    "gpt-4o-mini",
		Messages: []goopenai.ChatCompletionMessage{{Role: goopenai.ChatMessageRoleUser, Content: "Hello"}},
	})
	// docs:end go-openai
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Choices[0].Message.Content, "after", s.Journal().Len(), "requests")
	// Output: from go-openai after 2 requests
}
