package mocks_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/steadyllm/steady/mocks"
)

// A test scripts two faults, lets its client retry through them, then checks the journal.
func ExampleNewServer() {
	s := mocks.NewServer(mocks.WithScript(
		mocks.Status(503),
		mocks.RateLimited(50*time.Millisecond),
		mocks.Reply("Hello!"),
	))
	defer s.Close()

	for range 3 {
		req, _ := http.NewRequest(http.MethodPost, s.OpenAIBaseURL()+"/chat/completions",
			strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}]}`))
		req.Header.Set("Authorization", "Bearer sk-test")
		res, err := s.Client().Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		fmt.Println(res.StatusCode, res.Header.Get("Retry-After-Ms"), strings.Contains(string(body), "Hello!"))
	}
	for _, r := range s.Journal().Requests() {
		fmt.Println(r.Seq, r.Path, r.Step, r.Header.Get("Authorization"))
	}
	// Output:
	// 503  false
	// 429 50 false
	// 200  true
	// 1 /v1/chat/completions 503 REDACTED
	// 2 /v1/chat/completions 429 retry-after=50ms REDACTED
	// 3 /v1/chat/completions ok REDACTED
}
