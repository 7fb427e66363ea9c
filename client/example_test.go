package client_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

// A chain of two providers with different wire formats: OpenAI is down, so after its retries
// the call falls back to Anthropic, asked for its own model.
func Example_fallback() {
	down := mocks.NewServer(mocks.WithScript(mocks.Status(http.StatusServiceUnavailable).Always()))
	defer down.Close()
	claude := mocks.NewServer(mocks.WithReply("Claude answers."))
	defer claude.Close()

	policy := resilience.DefaultOptions()
	policy.RetryBaseDelaySeconds = 0.001
	// docs:begin in-code
	c, err := client.New(
		client.WithProvider("openai", policy, func(hc *http.Client) (providers.Provider, error) {
			return openai.New(openai.Config{Name: "openai", BaseURL: down.OpenAIBaseURL(), APIKey: "sk-example", HTTPClient: hc, Model: "gpt-4o-mini"})
		}),
		client.WithProvider("claude", policy, func(hc *http.Client) (providers.Provider, error) {
			return anthropic.New(anthropic.Config{Name: "claude", BaseURL: claude.AnthropicBaseURL(), APIKey: "sk-ant-example", HTTPClient: hc, Model: "claude-haiku-4-5"})
		}),
		client.WithFallback("openai", "claude"),
	)
	// docs:end in-code
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := c.Chat(context.Background(), &providers.ChatRequest{
		Messages: []providers.Message{{Role: providers.RoleUser, Content: "Who is there?"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%q from %s (%s); openai was tried %d times\n", resp.Message.Content, resp.Provider, resp.Model, down.Journal().Len())
	// Output: "Claude answers." from claude (claude-haiku-4-5); openai was tried 4 times
}

// Every failure is a *providers.Error with a Kind a program can act on.
func Example_errors() {
	s := mocks.NewServer(mocks.WithScript(mocks.QuotaExceeded()))
	defer s.Close()
	c, err := client.New(client.WithProvider("openai", resilience.DefaultOptions(), func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{Name: "openai", BaseURL: s.OpenAIBaseURL(), APIKey: "sk-example", HTTPClient: hc, Model: "gpt-4o-mini"})
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = c.Chat(context.Background(), &providers.ChatRequest{
		Messages: []providers.Message{{Role: providers.RoleUser, Content: "Hello"}},
	})
	var e *providers.Error
	if errors.As(err, &e) {
		fmt.Println(e.Provider, e.Kind, e.StatusCode, "attempts:", e.Attempts, "temporary:", e.Temporary())
	}
	// Output: openai quota_exhausted 429 attempts: 1 temporary: false
}

// Routing by latency: of two deployments, the one whose first token comes late gets only its
// small exploration share once it has been measured; what each route measured is in
// Deployments (and in the health check).
func Example_strategyLatency() {
	slow := mocks.NewServer(mocks.WithScript(mocks.SlowFirstToken(50 * time.Millisecond).Always()))
	defer slow.Close()
	fast := mocks.NewServer()
	defer fast.Close()
	on := func(s *mocks.Server) client.ProviderFactory {
		return func(hc *http.Client) (providers.Provider, error) {
			return openai.New(openai.Config{Name: "openai", BaseURL: s.OpenAIBaseURL(), APIKey: "sk-example", HTTPClient: hc, Model: "gpt-4o-mini"})
		}
	}
	c, err := client.New(
		client.WithDeployments("openai", resilience.DefaultOptions(), client.StrategyLatency,
			client.Deployment{Name: "slow", Factory: on(slow)}, client.Deployment{Name: "fast", Factory: on(fast)}),
		client.WithRandomSource(rand.NewPCG(1, 2))) // reproducible draws; leave it out in production
	if err != nil {
		fmt.Println(err)
		return
	}
	served := map[string]int{}
	for range 40 {
		st, err := c.ChatStream(context.Background(), &providers.ChatRequest{
			Messages: []providers.Message{{Role: providers.RoleUser, Content: "Hello"}},
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		served[st.Deployment()]++
		for _, err := range st.Deltas() {
			if err != nil {
				fmt.Println(err)
			}
		}
		_ = st.Close()
	}
	l := c.Deployments("openai")[0].Routes[0].Latency
	fmt.Println("most calls went to the fast one:", served["openai/fast"] > 30)
	fmt.Println("the slow one's first token, as measured, took at least 50ms:", l.FirstToken >= 50*time.Millisecond)
	// Output:
	// most calls went to the fast one: true
	// the slow one's first token, as measured, took at least 50ms: true
}

// Pacing by exact counts: with CountTokens on, each call's prompt is counted by Anthropic's
// counting endpoint before it is sent, and the route's tokens-per-minute limit is debited the
// count (plus the answer's MaxTokens) instead of an estimate. A count that fails leaves the
// estimate; the call goes on.
func ExampleClient_CountTokens() {
	s := mocks.NewServer()
	defer s.Close()
	// docs:begin count-tokens
	policy := resilience.DefaultOptions()
	policy.PaceTokensPerMinute = 400_000 // a tokens-per-minute limit: only a paced route is counted
	c, err := client.New(client.WithProvider("claude", policy, func(hc *http.Client) (providers.Provider, error) {
		return anthropic.New(anthropic.Config{Name: "claude", BaseURL: s.AnthropicBaseURL(), APIKey: "sk-ant-example", HTTPClient: hc,
			Model: "claude-haiku-4-5", CountTokens: true}) // CountTimeout: 0, the default 2 s
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	req := &providers.ChatRequest{MaxTokens: 100, Messages: []providers.Message{{Role: providers.RoleUser, Content: "How long is this prompt?"}}}
	n, err := c.CountTokens(context.Background(), req) // a count on demand, as the chain would send it
	fmt.Println("counted:", n.Input, n.Method, err)
	if _, err := c.Chat(context.Background(), req); err != nil { // counted first, then debited n + 100
		fmt.Println(err)
		return
	}
	// docs:end count-tokens
	for _, r := range s.Journal().Requests() {
		fmt.Println(r.Path)
	}

	// Output:
	// counted: 6 provider <nil>
	// /v1/messages/count_tokens
	// /v1/messages/count_tokens
	// /v1/messages
}

// A route's token estimate, and how it learns: here the fake counts four bytes a token and
// nothing for the chat format, which the heuristic's first estimate does not know; after a few
// answers the route estimates what the fake bills. (A budget, a context window or a
// tokens-per-minute limit makes the client estimate, and so learn; this client's limit is
// one a budget-minded service would set.)
func ExampleClient_EstimateTokens() {
	s := mocks.NewServer()
	defer s.Close()
	policy := resilience.DefaultOptions()
	policy.PaceTokensPerMinute = 1_000_000
	c, err := client.New(client.WithProvider("claude", policy, func(hc *http.Client) (providers.Provider, error) {
		return anthropic.New(anthropic.Config{Name: "claude", BaseURL: s.AnthropicBaseURL(), APIKey: "sk-ant-example", HTTPClient: hc,
			Model: "claude-haiku-4-5"})
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	// docs:begin estimate-tokens
	req := &providers.ChatRequest{MaxTokens: 100, Messages: []providers.Message{{Role: providers.RoleUser, Content: "How long is this prompt?"}}}
	e, err := c.EstimateTokens(req) // nothing is sent
	fmt.Println(e.Input, e.Answer, e.Method, e.Provider, e.Model, err)
	for range 5 { // each answer's usage teaches the route
		if _, err := c.Chat(context.Background(), req); err != nil {
			fmt.Println(err)
			return
		}
	}
	e, _ = c.EstimateTokens(req)
	fmt.Println(e.Input, e.Method, e.Learnt.Samples)
	// docs:end estimate-tokens
	fmt.Println("billed:", mocks.Tokens(req.Messages[0].Content))

	// Output:
	// 13 100 heuristic claude claude-haiku-4-5 <nil>
	// 6 learnt 5
	// billed: 6
}

// A whole-call deadline: the provider asks to be retried in 30 s, which the policy would wait
// for, but the call has 2 s in all, so it fails at once with kind timeout, keeping what the
// server said.
func ExampleWithCallTimeout() {
	s := mocks.NewServer(mocks.WithScript(mocks.RateLimited(30 * time.Second)))
	defer s.Close()
	policy := resilience.DefaultOptions()
	policy.RetryMaxDelaySeconds = 60 // the policy would wait 30 s for a retry
	c, err := client.New(client.WithProvider("openai", policy, func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{Name: "openai", BaseURL: s.OpenAIBaseURL(), APIKey: "sk-example", HTTPClient: hc, Model: "gpt-4o-mini"})
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	// docs:begin call-timeout
	_, err = c.Chat(context.Background(), &providers.ChatRequest{
		Messages: []providers.Message{{Role: providers.RoleUser, Content: "Hello"}},
	}, client.WithCallTimeout(2*time.Second)) // this call, every try and fallback: 2 s at most
	var e *providers.Error
	if errors.As(err, &e) { // the server asked for 30 s: the call gave up at once, keeping its hint
		fmt.Println(e.Kind, e.GaveUp, e.StatusCode, e.RetryAfter, errors.Is(err, context.DeadlineExceeded))
	}
	// docs:end call-timeout

	// Output: timeout deadline 429 30s true
}
