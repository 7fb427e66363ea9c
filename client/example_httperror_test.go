package client_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

// A service's handler answers its own caller for a failed call with WriteError: here the
// provider is rate limiting and asks for 2.5 s, so the caller gets a 429 with Retry-After: 3
// and steady's words for the kind, not the provider's message.
func ExampleWriteError() {
	s := mocks.NewServer(mocks.WithScript(mocks.RateLimited(2500 * time.Millisecond).Always()))
	defer s.Close()
	policy := resilience.DefaultOptions()
	policy.RetryCount = 0 // a person is waiting: hand the hint to them
	c, err := client.New(client.WithProvider("openai", policy, func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{Name: "openai", BaseURL: s.OpenAIBaseURL(), APIKey: "sk-example", HTTPClient: hc, Model: "gpt-4o-mini"})
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	chat := func(w http.ResponseWriter, r *http.Request) {
		resp, err := c.Chat(r.Context(), &providers.ChatRequest{
			Messages: []providers.Message{{Role: providers.RoleUser, Content: r.URL.Query().Get("q")}},
		})
		if err != nil {
			client.WriteError(w, err) // the status, Retry-After and a JSON body, for any error of the client
			return
		}
		fmt.Fprintln(w, resp.Message.Content)
	}

	rec := httptest.NewRecorder()
	chat(rec, httptest.NewRequest(http.MethodGet, "/chat?q=hello", nil))
	fmt.Println(rec.Code, rec.Header().Get("Retry-After"))
	fmt.Print(rec.Body.String())
	// Output:
	// 429 3
	// {"error":{"kind":"rate_limited","message":"the language model is rate limiting this service: try again later"}}
}
