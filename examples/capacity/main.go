// Command capacity shows, against the embedded fake LLM server, how steady spends the capacity
// docs/capacity.md describes:
//
//   - two OpenAI keys as deployments of one provider, from appsettings.json: a conversation
//     stays on its deployment (sticky key), the calls spread by headroom, and once both keys'
//     per-minute limits are spent the calls go to Anthropic instead of meeting 429s;
//   - a hedged call: the first deployment is slow to its first token, a hedge to the second
//     answers first;
//   - priorities: with one slot, an interactive call that arrives after a batch call is
//     served before it.
//
// It needs no API key and nothing installed:
//
//	go run ./examples/capacity
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	steady "github.com/steadyllm/steady"
	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/config"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

func main() {
	if err := run(context.Background(), os.Stdout, "examples/capacity/appsettings.json"); err != nil {
		fmt.Fprintln(os.Stderr, "capacity:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer, configFile string) error {
	if err := deployments(ctx, out, configFile); err != nil {
		return err
	}
	if err := hedge(ctx, out); err != nil {
		return err
	}
	return priorities(ctx, out)
}

func ask(text string) *providers.ChatRequest {
	return &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: text}}, MaxTokens: 50}
}

// deployments loads appsettings.json with its endpoints pointed at the fake server and each
// key's budget lowered to 3 requests a minute, so a minute's budget runs out in a few calls.
func deployments(ctx context.Context, out io.Writer, configFile string) error {
	// The fake enforces the same limit on each key, answering 429 beyond it, as OpenAI does.
	limit := mocks.RateLimits{RequestsPerMinute: 3}
	fake := mocks.NewServer(mocks.WithKeyRateLimits("sk-east", limit), mocks.WithKeyRateLimits("sk-west", limit))
	defer fake.Close()
	cfg, err := config.LoadWithEnv([]string{
		"OPENAI_KEY_EAST=sk-east", "OPENAI_KEY_WEST=sk-west", "ANTHROPIC_API_KEY=sk-ant-example",
		"LLM__Providers__openai-east__BaseURL=" + fake.OpenAIBaseURL(),
		"LLM__Providers__openai-west__BaseURL=" + fake.OpenAIBaseURL(),
		"LLM__Providers__anthropic__BaseURL=" + fake.AnthropicBaseURL(),
		"LLM__Providers__openai-east__RequestsPerMinute=3",
		"LLM__Providers__openai-west__RequestsPerMinute=3",
	}, configFile)
	if err != nil {
		return err
	}
	c, err := steady.FromConfig(cfg)
	if err != nil {
		return err
	}
	defer c.Close()

	// docs:begin sticky
	var home []string
	for turn := 1; turn <= 2; turn++ {
		resp, err := c.Chat(ctx, ask("Next turn of conversation 42"), client.WithStickyKey("conversation-42"))
		if err != nil {
			return err
		}
		home = append(home, resp.Deployment) // the same deployment every turn: its prompt cache stays warm
	}
	// docs:end sticky
	fmt.Fprintf(out, "conversation-42: both turns on %s\n", strings.Join(dedupe(home), ", "))

	served := map[string]int{}
	for range 6 {
		resp, err := c.Chat(ctx, ask("Summarise this."), client.WithPolicy("interactive"))
		if err != nil {
			return err
		}
		served[resp.Deployment]++
	}
	fmt.Fprintf(out, "6 more calls: %s; the fake answered 429 %d times\n", counts(served), refused(fake))
	// docs:begin headroom
	for _, d := range c.Deployments("openai") {
		for _, r := range d.Routes { // one per model: limits are per model
			fmt.Fprintf(out, "%s (%s): %.0f%% of %d requests a minute left\n",
				d.Name, r.Model, 100*r.Headroom.Requests, r.Headroom.RequestsPerMinute)
		}
	}
	// docs:end headroom
	return nil
}

// hedge builds a provider of two deployments in code. The first takes ten seconds to its first
// token; the call hedges after 50 ms, and the second deployment's answer wins.
func hedge(ctx context.Context, out io.Writer) error {
	fake := mocks.NewServer(mocks.WithKeyLatency("sk-slow", mocks.LatencyProfile{FirstToken: 10 * time.Second}))
	defer fake.Close()
	openAIWithKey := func(key string) client.ProviderFactory {
		return func(hc *http.Client) (providers.Provider, error) {
			return openai.New(openai.Config{Name: "openai", BaseURL: fake.OpenAIBaseURL(), APIKey: key, HTTPClient: hc, Model: "gpt-4o-mini"})
		}
	}
	// docs:begin deployments-in-code
	c, err := client.New(
		client.WithDeployments("openai", resilience.DefaultOptions(), client.StrategyPriority,
			client.Deployment{Name: "slow", Factory: openAIWithKey("sk-slow"), RequestsPerMinute: 500},
			client.Deployment{Name: "fast", Factory: openAIWithKey("sk-fast"), RequestsPerMinute: 500}),
	)
	if err != nil {
		return err
	}
	defer c.Close()
	resp, err := c.Chat(ctx, ask("Quick!"), client.WithHedge(50*time.Millisecond, 1))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "served by %s; hedges sent %d, a hedge won: %v\n", resp.Deployment, resp.Hedges, resp.HedgeWon)
	// docs:end deployments-in-code
	return nil
}

// priorities gives one provider a single slot, holds it with a call the fake never answers,
// queues a batch call and then an interactive one, and frees the slot.
func priorities(ctx context.Context, out io.Writer) error {
	fake := mocks.NewServer(mocks.WithScript(mocks.Stall(), mocks.OK().Always()))
	defer fake.Close()
	opts := resilience.DefaultOptions()
	opts.BulkheadMaxConcurrency = 1
	c, err := client.New(client.WithProvider("openai", opts, func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{Name: "openai", BaseURL: fake.OpenAIBaseURL(), APIKey: "sk-example", HTTPClient: hc, Model: "gpt-4o-mini"})
	}))
	if err != nil {
		return err
	}
	defer c.Close()

	holdCtx, release := context.WithCancel(ctx)
	held := make(chan error, 1)
	go func() { _, err := c.Chat(holdCtx, ask("hold the slot")); held <- err }()
	waitFor(func() bool { return fake.Journal().Len() == 1 }) // the slot is taken

	done := make(chan error, 2)
	// docs:begin priority
	call := func(class resilience.Priority) {
		_, err := c.Chat(ctx, ask("Summarise for the "+string(class)+" class"), client.WithPriority(class))
		done <- err
	}
	go call(resilience.PriorityBatch)
	// docs:end priority
	waitFor(func() bool { return c.Pipeline("openai").Concurrency().Waiting[2] == 1 })
	go call(resilience.PriorityInteractive)
	waitFor(func() bool { return c.Pipeline("openai").Concurrency().Waiting[0] == 1 })

	release() // the slot frees: the interactive call, queued last, takes it first
	if err := <-held; !errors.Is(err, context.Canceled) {
		return fmt.Errorf("the held call ended with %v", err)
	}
	for range 2 {
		if err := <-done; err != nil {
			return err
		}
	}
	// The order the slot served them in is the order the fake received them (the calls may
	// return in either order: the second is sent as the first's answer ends).
	var order []string
	for _, r := range fake.Journal().Requests()[1:] {
		for _, class := range []resilience.Priority{resilience.PriorityInteractive, resilience.PriorityBatch} {
			if strings.Contains(string(r.Body), "the "+string(class)+" class") {
				order = append(order, string(class))
			}
		}
	}
	if len(order) != 2 {
		return fmt.Errorf("the fake received %v", order)
	}
	fmt.Fprintf(out, "one slot, a batch call queued before an interactive one: served %s, then %s\n", order[0], order[1])
	return nil
}

// waitFor polls cond until it holds: the example waits for the state it needs instead of
// sleeping for a time it guesses.
func waitFor(cond func() bool) {
	for !cond() {
		time.Sleep(time.Millisecond)
	}
}

// refused counts the requests the fake answered 429.
func refused(s *mocks.Server) int {
	n := 0
	for _, r := range s.Journal().Requests() {
		if strings.HasPrefix(r.Step, "429") {
			n++
		}
	}
	return n
}

func dedupe(xs []string) []string {
	var out []string
	for _, x := range xs {
		if len(out) == 0 || out[len(out)-1] != x {
			out = append(out, x)
		}
	}
	return out
}

func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d on %s", m[k], k)
	}
	return strings.Join(parts, ", ")
}
