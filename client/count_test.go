package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/internal/testkit/backend"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
	"github.com/steadyllm/steady/resilience"
)

// Pre-flight token countLog feeding pacing, outside the pipeline; raw tools routing the chain.

const countModel = "claude-haiku-4-5"

// tokenBudget is the tokens-per-minute limit of the counting tests, on a clock that stands
// still: what a call debits stays debited.
const tokenBudget = 100_000

// countingClaude adds an Anthropic provider named name over s whose config edit changes.
func countingClaude(name string, s *mocks.Server, o resilience.Options, edit func(*anthropic.Config)) client.Option {
	return client.WithProvider(name, o, func(hc *http.Client) (providers.Provider, error) {
		cfg := anthropic.Config{Name: name, BaseURL: s.AnthropicBaseURL(), APIKey: sentinelKey, HTTPClient: hc, Model: countModel,
			CountTokens: true}
		if edit != nil {
			edit(&cfg)
		}
		return anthropic.New(cfg)
	})
}

// pacedPolicy is a policy with a known tokens-per-minute limit. The fake's answers state what remains of
// it, which the pacer then takes as the truth: no unused estimate is credited back, so the
// budget moves only by what calls debit.
func pacedPolicy() resilience.Options {
	o := policy()
	o.PaceTokensPerMinute = tokenBudget
	return o
}

// debited returns the tokens debited so far from the budget of provider name's route for model.
func debited(t *testing.T, c *client.Client, name string) int {
	t.Helper()
	for _, r := range c.Deployments(name)[0].Routes {
		if r.Model == countModel {
			return int(math.Round(tokenBudget * (1 - r.Headroom.Tokens)))
		}
	}
	t.Fatalf("no route %s of %s", countModel, name)
	return 0
}

// bigRequest is a request whose estimate is far from its count: a long tool description the
// fake's count does not see.
func bigRequest() *providers.ChatRequest {
	return &providers.ChatRequest{MaxTokens: 100, Messages: []providers.Message{
		{Role: providers.RoleSystem, Content: "You are terse."},
		{Role: providers.RoleUser, Content: "How many tokens is this question, exactly?"}},
		Tools: []providers.Tool{{Name: "f", Description: strings.Repeat("described at length ", 200)}}}
}

// paths lists the paths of the requests s received, in order.
func paths(s *mocks.Server) []string {
	var out []string
	for _, r := range s.Journal().Requests() {
		out = append(out, r.Path)
	}
	return out
}

// countLog records the pre-flight countLog the client reports (client.CountTracker).
type countLog struct {
	mu  sync.Mutex
	got []client.TokenCount
}

func (c *countLog) StartCall(ctx context.Context, _ client.CallStart) (context.Context, client.CallTracker) {
	return ctx, countTracker{c}
}
func (c *countLog) PipelineEvent(resilience.Event) {}

func (c *countLog) all() []client.TokenCount {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]client.TokenCount(nil), c.got...)
}

type countTracker struct{ c *countLog }

func (countTracker) TryDone(client.TryResult) {}
func (countTracker) End(error)                {}
func (t countTracker) TokensCounted(r client.TokenCount) {
	t.c.mu.Lock()
	t.c.got = append(t.c.got, r)
	t.c.mu.Unlock()
}

func TestPreflightCount_PacingDebitsTheCountedPrompt(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	tel := &countLog{}
	c := newClient(t, client.WithClock(backend.NewManualClock()), client.WithTelemetry(tel),
		countingClaude("claude", s, pacedPolicy(), nil))
	req := bigRequest()
	counted, err := c.CountTokens(context.Background(), req)
	if err != nil || counted.Method != client.EstimateProvider {
		t.Fatal(counted, err)
	}
	want := counted.Input
	resp, err := c.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	estimate := client.EstimateTokens(req)
	if want != resp.Usage.InputTokens || estimate-req.MaxTokens <= want+100 {
		t.Fatalf("count %d, billed %d, estimate %d: the test needs an estimate far from the count", want, resp.Usage.InputTokens, estimate)
	}
	if got := debited(t, c, "claude"); got != want+req.MaxTokens {
		t.Fatalf("debited %d, want the count %d + max_tokens %d (the estimate was %d)", got, want, req.MaxTokens, estimate)
	}
	if p := paths(s); strings.Join(p, " ") != "/v1/messages/count_tokens /v1/messages/count_tokens /v1/messages" {
		t.Fatalf("requests %v", p)
	}
	got := tel.all()
	if len(got) != 1 || got[0].Counted != want || got[0].Estimate != estimate-req.MaxTokens || got[0].Err != nil ||
		got[0].Provider != "claude" || got[0].Model != countModel {
		t.Fatalf("countLog reported %+v", got)
	}

	// A stream debits the count too.
	st, err := c.ChatStream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := st.Recv(); err == nil; _, err = st.Recv() {
	}
	_ = st.Close()
	if got := debited(t, c, "claude"); got != 2*(want+req.MaxTokens) {
		t.Fatalf("after a stream, debited %d, want %d", got, 2*(want+req.MaxTokens))
	}
}

func TestPreflightCount_OffOrWithoutABudgetSendsNoCount(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	// Counting off: the estimate is debited.
	off := newClient(t, client.WithClock(backend.NewManualClock()),
		countingClaude("claude", s, pacedPolicy(), func(c *anthropic.Config) { c.CountTokens = false }))
	req := bigRequest()
	if _, err := off.Chat(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if got := debited(t, off, "claude"); got != client.EstimateTokens(req) {
		t.Fatalf("debited %d, want the estimate %d", got, client.EstimateTokens(req))
	}
	// Counting on, but no tokens-per-minute limit to feed.
	o := policy()
	o.PaceFromHeaders = false
	unpaced := newClient(t, countingClaude("claude", s, o, nil))
	if _, err := unpaced.Chat(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	for _, p := range paths(s) {
		if p != "/v1/messages" {
			t.Fatalf("requests %v", paths(s))
		}
	}
}

func TestPreflightCount_AFailingCountNeverFailsTheCallNorTouchesTheCircuit(t *testing.T) {
	for _, tc := range []struct {
		name string
		step mocks.Step
	}{
		{"server error", mocks.Status(500).Always()},
		{"overloaded", mocks.Overloaded().Always()},
		{"stall past the count timeout", mocks.Stall().Always()},
		{"not a count", mocks.Malformed().Always()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mocks.NewServer(mocks.WithRouteScript(mocks.RouteCountTokens, tc.step))
			defer s.Close()
			o := pacedPolicy()
			o.RetryCount, o.CircuitBreakerThreshold = 3, 1 // one failure would open it
			tel := &countLog{}
			c := newClient(t, client.WithClock(backend.NewManualClock()), client.WithTelemetry(tel),
				countingClaude("claude", s, o, func(c *anthropic.Config) { c.CountTimeout = 100 * time.Millisecond }))
			req := bigRequest()
			for i := range 3 {
				if _, err := c.Chat(context.Background(), req); err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
			}
			if got, want := debited(t, c, "claude"), 3*client.EstimateTokens(req); got != want {
				t.Fatalf("debited %d, want three estimates, %d", got, want)
			}
			if st := c.Deployments("claude")[0].Circuit.State; st != resilience.CircuitClosed {
				t.Fatalf("circuit %s", st)
			}
			// Never retried: one count per call.
			n := 0
			for _, p := range paths(s) {
				if p == "/v1/messages/count_tokens" {
					n++
				}
			}
			got := tel.all()
			if n != 3 || len(got) != 3 || got[0].Err == nil || got[0].Counted != 0 || got[0].Estimate == 0 {
				t.Fatalf("%d countLog sent, reported %+v", n, got)
			}
		})
	}
}

func TestPreflightCount_SendsTheCallsHeadersButNotItsExtraFields(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	c := newClient(t, client.WithClock(backend.NewManualClock()), countingClaude("claude", s, pacedPolicy(), nil))
	_, err := c.Chat(context.Background(), hello(), client.WithHeader("X-Team", "search"), client.WithRequestID("req-7"),
		client.WithExtraFields("claude", map[string]any{"metadata": map[string]any{"user_id": "u1"}}))
	if err != nil {
		t.Fatal(err) // the fake refuses a count with metadata, as the API does
	}
	reqs := s.Journal().Requests()
	count, chat := reqs[0], reqs[1]
	if count.Path != "/v1/messages/count_tokens" || count.Header.Get("X-Team") != "search" || count.Header.Get(client.RequestIDHeader) != "req-7" ||
		strings.Contains(string(count.Body), "metadata") || !strings.Contains(string(chat.Body), "metadata") {
		t.Fatalf("count %s %v %s; chat %s", count.Path, count.Header, count.Body, chat.Body)
	}
}

func TestCountTokens_AsksTheFirstProviderThatCounts(t *testing.T) {
	claude := mocks.NewServer()
	defer claude.Close()
	gpt := mocks.NewServer()
	defer gpt.Close()
	c := newClient(t, openAIProvider("openai", gpt, policy()),
		countingClaude("claude", claude, policy(), func(c *anthropic.Config) { c.CountTokens = false }),
		client.WithFallback("openai", "claude"))
	n, err := c.CountTokens(context.Background(), hello())
	if err != nil || n.Input != mocks.Tokens("hello there") || gpt.Journal().Len() != 0 {
		t.Fatalf("%+v, %v; openai asked %d times", n, err, gpt.Journal().Len())
	}
	if n.Method != client.EstimateProvider || n.Provider != "claude" || n.Deployment != "claude" || n.Model != "claude-haiku-4-5" ||
		n.Answer != client.DefaultAnswerTokens || n.Learnt.Samples != 1 {
		t.Fatalf("count %+v: want the provider's, on claude's route, which learnt from it", n)
	}
	only := newClient(t, openAIProvider("openai", gpt, policy()))
	_, err = only.CountTokens(context.Background(), hello())
	if e := providers.KindOf(err); e != providers.KindBadRequest || !strings.Contains(err.Error(), "openai") {
		t.Fatalf("%v", err)
	}
	// Its failure is the provider's, as it failed.
	claude.RouteScript(mocks.RouteCountTokens, mocks.Status(500))
	if _, err := c.CountTokens(context.Background(), hello()); providers.KindOf(err) != providers.KindUnavailable {
		t.Fatalf("%v", err)
	}
}

// webSearchTool is an Anthropic server tool, given in the API's shape.
var webSearchTool = providers.Tool{System: providers.SystemAnthropic, Raw: json.RawMessage(`{"type":"web_search_20250305","name":"web_search"}`)}

func TestRawTools_OnlyProvidersOfTheirSystemServeTheCall(t *testing.T) {
	claude := mocks.NewServer()
	defer claude.Close()
	gpt := mocks.NewServer()
	defer gpt.Close()
	req := hello()
	req.Tools = []providers.Tool{webSearchTool}
	c := newClient(t, openAIProvider("openai", gpt, policy()), anthropicProvider("claude", claude, policy()),
		client.WithFallback("openai", "claude"))
	resp, err := c.Chat(context.Background(), req)
	if err != nil || resp.Provider != "claude" || gpt.Journal().Len() != 0 || len(resp.Message.ProviderBlocks) != 2 {
		t.Fatalf("%+v, %v; openai asked %d times", resp, err, gpt.Journal().Len())
	}
	// Streamed through the client, the blocks come on the Done delta.
	st, err := c.ChatStream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var done providers.Delta
	for d, err := st.Recv(); err == nil; d, err = st.Recv() {
		if d.Done {
			done = d
		}
	}
	_ = st.Close()
	if len(done.ProviderBlocks) != 2 || done.ProviderBlocks[0].Type != "server_tool_use" {
		t.Fatalf("Done delta %+v", done)
	}
	only := newClient(t, openAIProvider("openai", gpt, policy()))
	_, err = only.Chat(context.Background(), req)
	if providers.KindOf(err) != providers.KindBadRequest || !strings.Contains(err.Error(), "openai (takes no anthropic tools)") || gpt.Journal().Len() != 0 {
		t.Fatalf("%v", err)
	}
}

// A fallback to another provider sends the answer's text, never the blocks only the first
// provider can read.
func TestProviderBlocks_AFallbackDropsThem(t *testing.T) {
	claude := mocks.NewServer()
	defer claude.Close()
	gpt := mocks.NewServer()
	defer gpt.Close()
	c := newClient(t, anthropicProvider("claude", claude, policy()), openAIProvider("openai", gpt, policy()),
		client.WithFallback("claude", "openai"))
	first := hello()
	first.Tools = []providers.Tool{webSearchTool}
	resp, err := c.Chat(context.Background(), first)
	if err != nil || len(resp.Message.ProviderBlocks) == 0 {
		t.Fatalf("%+v %v", resp, err)
	}
	claude.Script(mocks.Status(503).Always())
	next := &providers.ChatRequest{Messages: append(append(first.Messages, resp.Message), providers.Message{Role: providers.RoleUser, Content: "thanks"})}
	resp2, err := c.Chat(context.Background(), next)
	if err != nil || resp2.Provider != "openai" {
		t.Fatalf("%+v %v", resp2, err)
	}
	last, _ := gpt.Journal().Last()
	if body := string(last.Body); strings.Contains(body, "srvtoolu") || strings.Contains(body, "encrypted_content") ||
		!strings.Contains(body, resp.Message.Content) {
		t.Fatalf("openai was sent %s", body)
	}
}

// A refusal part way through an Anthropic stream is the refused outcome: the text so far in
// Partial, no fallback (another model would refuse too), and nothing against the circuit.
func TestChatStream_AnthropicRefusalMidStreamIsRefused(t *testing.T) {
	claude := mocks.NewServer(mocks.WithScript(mocks.RefuseAfter(2, "Declined part way.").WithRefusalCategory("cyber").WithText("one two three").Times(3)))
	defer claude.Close()
	gpt := mocks.NewServer()
	defer gpt.Close()
	o := policy()
	o.CircuitBreakerThreshold = 1
	c := newClient(t, anthropicProvider("claude", claude, o), openAIProvider("openai", gpt, policy()), client.WithFallback("claude", "openai"))
	for range 2 {
		st, err := c.ChatStream(context.Background(), hello())
		if err != nil {
			t.Fatal(err)
		}
		var text string
		for {
			d, err := st.Recv()
			if err != nil {
				var pe *providers.Error
				if !errors.As(err, &pe) || pe.Kind != providers.KindRefused || pe.Code != "cyber" || pe.Message != "Declined part way." ||
					pe.Partial != "one two" || text != "one two" {
					t.Fatalf("text %q, %v", text, err)
				}
				break
			}
			text += d.Text
		}
		_ = st.Close()
	}
	if gpt.Journal().Len() != 0 || c.Deployments("claude")[0].Circuit.State != resilience.CircuitClosed {
		t.Fatalf("openai asked %d times, circuit %s", gpt.Journal().Len(), c.Deployments("claude")[0].Circuit.State)
	}
}

// A hedge counts for its own route, on its own goroutine.
func TestPreflightCount_AHedgeCountsForItsRoute(t *testing.T) {
	slow := mocks.NewServer(mocks.WithRouteScript(mocks.RouteMessages, mocks.Reply("slow").WithDelay(time.Minute).Always()))
	defer slow.Close()
	fast := mocks.NewServer(mocks.WithReply("fast"))
	defer fast.Close()
	o := pacedPolicy()
	o.HedgeAfterSeconds = 0.02
	o.RetryBudgetPercent, o.RetryBudgetFloor = 100, 10
	tel := &countLog{}
	clk := newArmClock(20 * time.Millisecond)
	c := newClient(t, client.WithClock(clk), client.WithTelemetry(tel), countingClaude("primary", slow, o, nil), countingClaude("backup", fast, pacedPolicy(), nil),
		client.WithFallback("primary", "backup"))
	type result struct {
		resp *providers.ChatResponse
		err  error
	}
	done := make(chan result, 1)
	go func() { resp, err := c.Chat(context.Background(), hello()); done <- result{resp, err} }()
	// The hedge goes out only once the primary counted and sent its call: its count is then
	// reported, on its own goroutine, before the call can return.
	waitFor(t, "the primary to count and send", func() bool { return len(tel.all()) == 1 && slow.Journal().Len() == 2 })
	<-clk.armed
	clk.Advance(20 * time.Millisecond)
	r := <-done
	resp, err := r.resp, r.err
	if err != nil || !resp.HedgeWon || resp.Provider != "backup" {
		t.Fatalf("%+v %v", resp, err)
	}
	got := map[string]bool{}
	for _, r := range tel.all() {
		got[r.Provider] = r.Err == nil && r.Counted > 0
	}
	if !got["primary"] || !got["backup"] {
		t.Fatalf("counts %+v", tel.all())
	}
}

// A count the call's own end cuts short — the caller gave up, the call's deadline passed, a
// hedge lost — did not fail: it is not reported (no failed count, no warning), for pacing or
// for budgets.
func TestPreflightCount_ACountTheCallEndedIsNotAFailure(t *testing.T) {
	for _, budgeted := range []bool{false, true} {
		s := mocks.NewServer(mocks.WithRouteScript(mocks.RouteCountTokens, mocks.Stall().Always()))
		defer s.Close()
		tel := &countLog{}
		opts := []client.Option{client.WithTelemetry(tel),
			countingClaude("claude", s, pacedPolicy(), func(c *anthropic.Config) { c.CountTimeout = 30 * time.Second })}
		if budgeted {
			prices, err := cost.NewPrices("USD", []cost.Entry{{Provider: "claude", Model: countModel, Price: cost.PerMillion(1, 5)}})
			if err != nil {
				t.Fatal(err)
			}
			opts = append(opts, client.WithPrices(prices), client.WithBudgets(cost.LedgerOptions{},
				cost.Budget{Name: "day", Window: cost.Day, Limit: cost.MaxLimit}))
		}
		c := newClient(t, append(opts, client.WithClock(backend.NewManualClock()))...)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { _, err := c.Chat(ctx, hello()); done <- err }()
		waitFor(t, "the count to reach the server", func() bool { return s.Journal().Len() == 1 })
		cancel()
		if err := <-done; providers.KindOf(err) != providers.KindCanceled {
			t.Fatalf("budgeted %v: %v", budgeted, err)
		}
		if got := tel.all(); len(got) != 0 || s.Journal().Len() != 1 {
			t.Fatalf("budgeted %v: counts reported %+v; %d requests", budgeted, got, s.Journal().Len())
		}
	}
}
