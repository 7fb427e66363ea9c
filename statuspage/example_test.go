package statuspage_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
	"github.com/steadyllm/steady/statuspage"
)

// The page is a handler the application mounts beside its other debug endpoints; it shows
// the client's providers as they are at each request, and keeps itself up to date in the
// browser. Close it when the application shuts down (http.Server.RegisterOnShutdown does it
// as shutdown begins, so that an open page does not hold Shutdown up).
func Example() {
	fake := mocks.NewServer() // the provider, here the fake server on 127.0.0.1
	defer fake.Close()
	c, err := client.New(client.WithProvider("openai", resilience.DefaultOptions(),
		func(hc *http.Client) (providers.Provider, error) {
			return openai.New(openai.Config{Name: "openai", BaseURL: fake.OpenAIBaseURL(), APIKey: "sk-example-key",
				HTTPClient: hc, Model: "gpt-4o-mini"})
		}))
	if err != nil {
		panic(err)
	}
	defer c.Close()

	page, err := statuspage.New(c)
	if err != nil {
		panic(err)
	}
	defer page.Close()
	mux := http.NewServeMux()
	mux.Handle("/debug/steady", page) // behind the access control of the other debug endpoints

	// What a browser gets, and what the page shows once the provider is taken out by hand.
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/steady", nil))
	fmt.Println(rec.Code, rec.Header().Get("Content-Type"))
	c.Pipeline("openai").Isolate()
	s := page.Snapshot()
	fmt.Println(s.Status, s.Providers[0].Deployments[0].Circuit, "·", s.Events[0].Type, s.Events[0].Detail)
	// Output:
	// 200 text/html; charset=utf-8
	// fail isolated · breaker_state_changed closed → isolated
}

// A bare pipeline — an application's own http.Client wrapped by resilience — goes on the page
// under a name of its choosing.
func ExampleWithPipeline() {
	p, err := resilience.New(resilience.DefaultOptions(), resilience.WithName("upstream"))
	if err != nil {
		panic(err)
	}
	page, err := statuspage.New(nil, statuspage.WithPipeline("upstream", p))
	if err != nil {
		panic(err)
	}
	defer page.Close()
	p.Isolate()
	s := page.Snapshot()
	fmt.Println(s.Providers[0].Name, s.Providers[0].Deployments[0].Circuit, s.Status)
	// Output: upstream isolated fail
}
