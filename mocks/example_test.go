package mocks_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
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

// A primary model that goes down for a minute and comes back, while another model serves
// throughout; the test moves the fake's clock instead of waiting.
func ExampleWithOutage() {
	var elapsed atomic.Int64
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := mocks.NewServer(
		mocks.WithClock(func() time.Time { return start.Add(time.Duration(elapsed.Load())) }),
		mocks.WithOutage(mocks.Outage{Start: 30 * time.Second, Duration: time.Minute, Model: "gpt-4o",
			Step: mocks.Status(503)}),
	)
	defer s.Close()

	status := func(model string) int {
		req, _ := http.NewRequest(http.MethodPost, s.OpenAIBaseURL()+"/chat/completions",
			strings.NewReader(`{"model":"`+model+`","messages":[{"role":"user","content":"Hi"}]}`))
		req.Header.Set("Authorization", "Bearer sk-test")
		res, err := s.Client().Do(req)
		if err != nil {
			return 0
		}
		res.Body.Close()
		return res.StatusCode
	}
	for _, at := range []time.Duration{0, 30 * time.Second, 89 * time.Second, 90 * time.Second} {
		elapsed.Store(int64(at))
		fmt.Println(at, status("gpt-4o"), status("gpt-4o-mini"))
	}
	// Output:
	// 0s 200 200
	// 30s 503 200
	// 1m29s 503 200
	// 1m30s 200 200
}

// Two deployments of one model behind one fake, told apart by their API keys: the east one
// answers its first token in 2ms but every third request straggles for 20ms; the west one
// answers in 4ms. A benchmark of hedged requests counts the stragglers in the journal.
func ExampleWithKeyLatency() {
	s := mocks.NewServer(
		mocks.WithKeyLatency("sk-east", mocks.LatencyProfile{FirstToken: 2 * time.Millisecond,
			Straggler: 20 * time.Millisecond, StragglerEvery: 3}),
		mocks.WithKeyLatency("sk-west", mocks.LatencyProfile{FirstToken: 4 * time.Millisecond}),
	)
	defer s.Close()

	call := func(key string) {
		req, _ := http.NewRequest(http.MethodPost, s.OpenAIBaseURL()+"/chat/completions",
			strings.NewReader(`{"model":"gpt-4o","messages":[{"role":"user","content":"Hi"}]}`))
		req.Header.Set("Authorization", "Bearer "+key)
		if res, err := s.Client().Do(req); err == nil {
			res.Body.Close()
		}
	}
	for range 6 {
		call("sk-east")
	}
	call("sk-west")
	for _, r := range s.Journal().Requests() {
		fmt.Println(r.Seq, r.FirstTokenDelay, r.Straggler)
	}
	fmt.Println("stragglers:", s.Journal().Stats().Stragglers)
	// Output:
	// 1 2ms false
	// 2 2ms false
	// 3 20ms true
	// 4 2ms false
	// 5 2ms false
	// 6 20ms true
	// 7 4ms false
	// stragglers: 2
}

// A test steers a fake server it did not start — here one of this process, reached over HTTP
// as a fakellm command would be — through its admin API: the chat route fails, then recovers.
func ExampleAdmin() {
	s := mocks.NewServer()
	defer s.Close()
	ctx := context.Background()
	status := func() int { // one chat call, as the code under test would make it
		req, _ := http.NewRequest(http.MethodPost, s.OpenAIBaseURL()+"/chat/completions",
			strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}]}`))
		req.Header.Set("Authorization", "Bearer sk-test")
		res, err := s.Client().Do(req)
		if err != nil {
			return 0
		}
		res.Body.Close()
		return res.StatusCode
	}

	// docs:begin admin
	admin := mocks.Admin(s.URL()) // the URL fakellm printed (its admin URL works too)
	fmt.Println("before:", status())
	if err := admin.RouteScript(ctx, mocks.RouteChat, mocks.Status(503).Always()); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("down:", status(), status())
	if err := admin.ResetRoute(ctx, mocks.RouteChat); err != nil { // as the server started
		fmt.Println(err)
		return
	}
	fmt.Println("back:", status())
	view, err := admin.Journal(ctx, 10) // how each request was answered; no headers, no bodies
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range view.Requests {
		fmt.Println(r.Seq, r.Path, r.Step)
	}

	// A bad value changes nothing and is refused, naming it.
	err = admin.SetConcurrencyLimit(ctx, -1)
	var ae *mocks.AdminError
	if errors.As(err, &ae) {
		fmt.Println(ae.StatusCode, ae.Problems[0].Field, ae.Problems[0].Allowed)
	}
	// docs:end admin

	// Output:
	// before: 200
	// down: 503 503
	// back: 200
	// 1 /v1/chat/completions ok
	// 2 /v1/chat/completions 503
	// 3 /v1/chat/completions 503
	// 4 /v1/chat/completions ok
	// 400 max out of range [0, 1000000] (0: no limit)
}
