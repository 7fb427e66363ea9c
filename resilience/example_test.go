package resilience_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"github.com/steadyllm/steady/resilience"
)

// Wrap any client's transport: here a server fails twice with 503 before answering.
func ExamplePipeline_Wrap() {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) <= 2 {
			w.Header().Set("retry-after-ms", "10")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "hello")
	}))
	defer srv.Close()

	// docs:begin wrap
	p, err := resilience.New(resilience.DefaultOptions(), resilience.WithName("example"),
		resilience.OnEvent(func(e resilience.Event) {
			if e.Type == resilience.EventRetryScheduled {
				fmt.Printf("retry after attempt %d: %s, waiting %s (server hint: %v)\n", e.Attempt, e.Reason, e.Delay, e.ServerHint)
			}
		}))
	if err != nil {
		panic(err)
	}
	httpClient := &http.Client{Transport: p.Wrap(http.DefaultTransport)}
	// docs:end wrap

	resp, err := httpClient.Get(srv.URL)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body), "circuit:", p.CircuitState())
	// Output:
	// retry after attempt 1: status 503, waiting 10ms (server hint: true)
	// retry after attempt 2: status 503, waiting 10ms (server hint: true)
	// 200 hello circuit: closed
}

// Validate reports every problem at once.
func ExampleOptions_Validate() {
	o := resilience.DefaultOptions()
	o.RetryCount = 50
	o.BulkheadMaxConcurrency = 0
	fmt.Println(o.Validate())
	// Output:
	// resilience: invalid options: RetryCount = 50: must be between 0 and 20; BulkheadMaxConcurrency = 0: must be between 1 and 100000
}

// One call runs under its own policy — no retries, a short deadline — through any http.Client
// over the pipeline (go-openai, openai-go: pass the context to the SDK's call), while the
// pipeline's other calls keep its own policy and share its circuit and bulkhead.
func ExampleWithPolicy() {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()

	o := resilience.DefaultOptions()
	o.RetryBaseDelaySeconds = 0.001
	p, _ := resilience.New(o)
	httpClient := &http.Client{Transport: p.Wrap(http.DefaultTransport)}

	interactive := o
	interactive.RetryCount = 0
	interactive.TimeoutSeconds = 2
	// docs:begin policy
	pol, err := resilience.NewPolicy("interactive", interactive)
	if err != nil {
		panic(err)
	}
	req, _ := http.NewRequestWithContext(resilience.WithPolicy(context.Background(), pol), http.MethodGet, srv.URL, nil)
	// docs:end policy
	resp, err := httpClient.Do(req)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, "after", calls.Load(), "attempt")

	calls.Store(0)
	resp, _ = httpClient.Get(srv.URL) // the pipeline's own policy: 3 retries
	resp.Body.Close()
	fmt.Println(resp.StatusCode, "after", calls.Load(), "attempts")
	// Output:
	// 503 after 1 attempt
	// 503 after 4 attempts
}
