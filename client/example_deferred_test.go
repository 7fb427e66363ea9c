package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/deferral"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

// A call from a background job runs in deferred mode: it makes one attempt, sleeps through
// nothing, and a failure says when the job should come back — here at the server's hint.
func Example_deferred() {
	s := mocks.NewServer(mocks.WithScript(mocks.RateLimited(40 * time.Second)))
	defer s.Close()
	c, err := client.New(client.WithProvider("openai", resilience.DefaultOptions(), func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{Name: "openai", BaseURL: s.OpenAIBaseURL(), APIKey: "sk-example", HTTPClient: hc, Model: "gpt-4o-mini"})
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	req := &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: "Summarise the report."}}}
	attempt := 1 // the job's attempt number, from 1

	// docs:begin deferred
	_, err = c.Chat(context.Background(), req, client.Deferred(attempt))
	var de *deferral.Error
	if errors.As(err, &de) {
		if !de.Decision.Retry {
			fmt.Println("permanent:", de.Decision.Reason) // a bad request, a refused key, a spent quota…
			return
		}
		wait := de.Decision.Wait(time.Now()) // hand this to the queue: the job comes back then
		fmt.Printf("back in about %s (%s, %s)\n", wait.Round(10*time.Second), de.Decision.Kind, de.Decision.Source)
	}
	// docs:end deferred
	fmt.Println("requests sent:", s.Journal().Len())
	// Output:
	// back in about 40s (rate_limited, server_hint)
	// requests sent: 1
}
