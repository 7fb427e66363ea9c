package client_test

import (
	"context"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
	"github.com/steadyllm/steady/resilience"
	"github.com/steadyllm/steady/tokens"
)

// nano returns the Money of a decimal amount.
func nano(t testing.TB, s string) providers.Money {
	t.Helper()
	m, err := providers.ParseMoney(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// testPrices prices gpt-4o-mini at openai (and any provider's gpt-4o-mini) and
// claude-haiku-4-5 at claude, with distinct prices for every kind of token.
func testPrices(t testing.TB) *cost.Prices {
	t.Helper()
	p, err := cost.NewPrices("USD", []cost.Entry{
		{Provider: "*", Model: "gpt-4o-mini", Price: cost.Price{Input: nano(t, "0.15"), CachedInput: nano(t, "0.075"),
			CacheWrite: nano(t, "0.15"), Output: nano(t, "0.6"), Reasoning: nano(t, "0.6")}},
		{Provider: "claude", Model: "claude-haiku-4-5", Price: cost.Price{Input: nano(t, "1"), CachedInput: nano(t, "0.1"),
			CacheWrite: nano(t, "1.25"), Output: nano(t, "5"), Reasoning: nano(t, "7")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// events collects cost events.
type events struct {
	mu  sync.Mutex
	all []cost.Event
}

func (e *events) observe(ev cost.Event) {
	e.mu.Lock()
	e.all = append(e.all, ev)
	e.mu.Unlock()
}

func (e *events) of(typ cost.EventType) []cost.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []cost.Event
	for _, ev := range e.all {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

func TestCost_ChatReportsTheServingAttemptFromItsUsage(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("four words of reply"))
	defer s.Close()
	c := newClient(t, openAIProvider("openai", s, policy()), client.WithPrices(testPrices(t)))
	resp, err := c.Chat(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	// The fake counts a token per four bytes: "hello there" is 3, "four words of reply" 5.
	// 3 × 0.15 + 5 × 0.6 = 3.45 per million.
	want := providers.CallCost{Currency: "USD", Serving: nano(t, "0.00000345")}
	if resp.Usage.InputTokens != 3 || resp.Usage.OutputTokens != 5 || resp.Cost != want {
		t.Fatalf("usage %+v cost %+v, want %+v", resp.Usage, resp.Cost, want)
	}
	if resp.Cost.Total() != want.Serving || resp.Cost.Known() != want.Serving {
		t.Fatalf("total %s known %s", resp.Cost.Total(), resp.Cost.Known())
	}

	plain := newClient(t, openAIProvider("openai", s, policy()))
	if resp, err := plain.Chat(context.Background(), hello()); err != nil || resp.Cost != (providers.CallCost{}) {
		t.Fatalf("a client without prices reports %+v, %v", resp.Cost, err)
	}
}

func TestCost_CachedWrittenAndReasoningTokensHaveTheirOwnPrices(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("done"))
	defer s.Close()
	c := newClient(t, anthropicProvider("claude", s, policy()), client.WithPrices(testPrices(t)))
	prompt := strings.Repeat("cacheable context ", 40) // 720 bytes: 180 tokens
	req := func() *providers.ChatRequest {
		return &providers.ChatRequest{MaxTokens: 2048, Reasoning: &providers.Reasoning{BudgetTokens: 1024},
			Messages: []providers.Message{{Role: providers.RoleUser, Content: prompt, Cache: providers.Cache5m}}}
	}
	first, err := c.Chat(context.Background(), req())
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.Chat(context.Background(), req())
	if err != nil {
		t.Fatal(err)
	}
	u1, u2 := first.Usage, second.Usage
	if u1.CacheWriteInputTokens != 180 || u2.CachedInputTokens != 180 || u1.ReasoningTokens == 0 || u1.OutputTokens <= u1.ReasoningTokens {
		t.Fatalf("the fake's usage: %+v then %+v", u1, u2)
	}
	// Written: 180 × 1.25; read: 180 × 0.1; reasoning at 7, the rest of the answer at 5.
	answer1 := u1.OutputTokens - u1.ReasoningTokens
	w1 := providers.Money(180*1250 + u1.ReasoningTokens*7000 + answer1*5000)
	if first.Cost.Serving != w1 {
		t.Fatalf("first call %s, want %s (usage %+v)", first.Cost.Serving, w1, u1)
	}
	answer2 := u2.OutputTokens - u2.ReasoningTokens
	w2 := providers.Money(180*100 + u2.ReasoningTokens*7000 + answer2*5000)
	if second.Cost.Serving != w2 {
		t.Fatalf("second call %s, want %s (usage %+v)", second.Cost.Serving, w2, u2)
	}
}

func TestCost_AStreamCutAfterItsUsageIsAbandonedKnownAndTheRescueServes(t *testing.T) {
	claude := mocks.NewServer(mocks.WithReply(words("w", 30)), mocks.WithScript(mocks.TruncateStream(6)))
	defer claude.Close()
	gpt := mocks.NewServer(mocks.WithReply("rescued answer"))
	defer gpt.Close()
	o := policy()
	o.RetryCount = 0
	o.StreamRescue = resilience.RescueRestart
	c := newClient(t, anthropicProvider("claude", claude, o), openAIProvider("openai", gpt, policy()),
		client.WithFallback("claude", "openai"), client.WithPrices(testPrices(t)))
	st, err := c.ChatStream(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := readAll(st)
	if r.err != nil || r.restarts != 1 || r.after != "rescued answer" || st.Provider() != "openai" {
		t.Fatalf("read %+v from %s", r, st.Provider())
	}
	got := st.Cost()
	acct := st.Accounting()
	u := acct.AbandonedUsage
	if u.InputTokens != 3 {
		t.Fatalf("abandoned usage %+v: the message_start's input tokens were reported", u)
	}
	// Known: what claude's events counted; estimated: the text delivered beyond that count.
	known := providers.Money(u.InputTokens*1000 + u.OutputTokens*5000)
	delivered := tokens.Heuristic.Count(strings.TrimSuffix(r.all, "rescued answer")) // the partial answer's text
	extra := providers.Money((delivered - u.OutputTokens) * 5000)
	serving := providers.Money(3*150 + 4*600) // "rescued answer": 4 tokens
	want := providers.CallCost{Currency: "USD", Serving: serving, Abandoned: known, Estimated: extra}
	if got != want || extra <= 0 {
		t.Fatalf("cost %+v, want %+v (abandoned usage %+v, delivered %d tokens)", got, want, u, delivered)
	}
	if acct.Cost.Abandoned != known || acct.Cost.Serving != 0 {
		t.Fatalf("accounting %+v", acct.Cost)
	}
}

func TestCost_AStreamCutBeforeAnyUsageIsEstimatedFromItsPromptAndText(t *testing.T) {
	first := mocks.NewServer(mocks.WithReply(words("w", 30)), mocks.WithScript(mocks.CutStream(5).CountingContent()))
	defer first.Close()
	second := mocks.NewServer(mocks.WithReply("ok"))
	defer second.Close()
	o := policy()
	o.RetryCount = 0
	o.StreamRescue = resilience.RescueRestart
	c := newClient(t, openAIProvider("a", first, o), openAIProvider("b", second, policy()),
		client.WithFallback("a", "b"), client.WithPrices(testPrices(t)))
	st, err := c.ChatStream(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := readAll(st)
	if r.err != nil || r.restarts != 1 {
		t.Fatalf("read %+v", r)
	}
	cut := strings.TrimSuffix(r.all, "ok")
	// The prompt as tokens.Heuristic estimates it in the chat format, and the partial text.
	est := providers.Money(client.EstimateInputTokens(hello())*150 + tokens.Heuristic.Count(cut)*600)
	want := providers.CallCost{Currency: "USD", Serving: providers.Money(3*150 + 1*600), Estimated: est}
	if got := st.Cost(); got != want {
		t.Fatalf("cost %+v, want %+v (cut after %q)", got, want, cut)
	}
}

func TestCost_AStreamClosedBeforeItsEndIsEstimated(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply(words("w", 50)))
	defer s.Close()
	c := newClient(t, openAIProvider("openai", s, policy()), client.WithPrices(testPrices(t)))
	st, err := c.ChatStream(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for range 3 {
		d, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		got.WriteString(d.Text)
	}
	if before := st.Cost(); before.Total() != 0 {
		t.Fatalf("cost before the end: %+v", before)
	}
	_ = st.Close()
	want := providers.CallCost{Currency: "USD", Estimated: providers.Money(client.EstimateInputTokens(hello())*150 + (got.Len()+3)/4*600)}
	if c := st.Cost(); c != want {
		t.Fatalf("closed after %q: %+v, want %+v", got.String(), c, want)
	}
	_ = st.Close()
	if c := st.Cost(); c != want {
		t.Fatalf("a second Close changed the cost: %+v", c)
	}
}

func TestCost_AStreamReadToItsEndIsPricedFromItsUsage(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("one two three four"))
	defer s.Close()
	c := newClient(t, openAIProvider("openai", s, policy()), client.WithPrices(testPrices(t)))
	st, err := c.ChatStream(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, last, err := collect(t, st)
	if err != nil {
		t.Fatal(err)
	}
	want := providers.CallCost{Currency: "USD", Serving: providers.Money(last.Usage.InputTokens*150 + last.Usage.OutputTokens*600)}
	if got := st.Cost(); got != want || want.Serving == 0 {
		t.Fatalf("cost %+v, want %+v", got, want)
	}
}

func TestCost_AModelWithoutAPriceIsCountedAndReportedOnce(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	ev := &events{}
	c := newClient(t, openAIProvider("openai", s, policy()), client.WithPrices(testPrices(t)), client.WithCostObserver(ev.observe))
	for range 3 {
		req := hello()
		req.Model = "gpt-unpriced"
		resp, err := c.Chat(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Cost != (providers.CallCost{Currency: "USD", Unpriced: 1}) {
			t.Fatalf("cost %+v", resp.Cost)
		}
	}
	got := ev.of(cost.EventUnpriced)
	if len(got) != 1 || got[0].Provider != "openai" || got[0].Model != "gpt-unpriced" || got[0].Currency != "USD" {
		t.Fatalf("unpriced events %+v", got)
	}
	if _, err := c.Chat(context.Background(), hello()); err != nil || len(ev.of(cost.EventUnpriced)) != 1 {
		t.Fatalf("a priced call reported something: %v %+v", err, ev.all)
	}
}

// The fake counts tokens its own way (four bytes a token, with nothing for the chat format),
// which the heuristic does not know: a route learns it from the usage the answers report. After
// 20 answers per route, the pre-flight estimate of each next call's prompt (what a budget
// prices) is within 5 % of what the fake bills for it at the median, on both wires, over
// prompts of many shapes: long and short messages, and chats of many short turns.
func TestCost_PreflightEstimateLearnsTheServersCount(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("ok"))
	defer s.Close()
	prices := testPrices(t)
	c := newClient(t, openAIProvider("openai", s, policy()), anthropicProvider("claude", s, policy()),
		client.WithFallback("openai", "claude"), client.WithPrices(prices),
		client.WithBudgets(cost.LedgerOptions{}, cost.Budget{Name: "all", Window: cost.Day, Limit: 1000 * providers.Unit}))
	rng := rand.New(rand.NewPCG(28, 5))
	const vocabulary = "the a budget tenant spend window price token model call answer prompt 🙂 ünïcode"
	vocab := strings.Fields(vocabulary)
	offs := map[string][]float64{}
	for i := range 120 {
		req := &providers.ChatRequest{}
		if rng.IntN(2) == 0 {
			req.Messages = append(req.Messages, providers.Message{Role: providers.RoleSystem, Content: sentence(rng, vocab, 1+rng.IntN(40))})
		}
		turns, longest := 1+rng.IntN(6), 200
		if i%3 == 0 {
			turns, longest = 5+rng.IntN(16), 3 // a chat of short turns ("ok", "yes, go on")
		}
		for j := range turns {
			role := providers.RoleUser
			if j%2 == 1 {
				role = providers.RoleAssistant
			}
			req.Messages = append(req.Messages, providers.Message{Role: role, Content: sentence(rng, vocab, 1+rng.IntN(longest))})
		}
		req.Messages[len(req.Messages)-1].Role = providers.RoleUser
		provider := []string{"openai", "claude"}[i%2]
		est, err := c.EstimateTokens(req, client.WithProviders(provider))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Chat(context.Background(), req, client.WithProviders(provider))
		if err != nil {
			t.Fatal(err)
		}
		if i < 40 { // 20 answers per route to learn from
			continue
		}
		if est.Method != client.EstimateLearnt || est.Learnt.Samples < 20 {
			t.Fatalf("%s's estimate %+v: want one learnt from 20 answers at least", provider, est)
		}
		offs[provider] = append(offs[provider], math.Abs(float64(est.Input-resp.Usage.InputTokens))/float64(resp.Usage.InputTokens))
	}
	for provider, o := range offs {
		slices.Sort(o)
		median, worst := o[len(o)/2], o[len(o)-1]
		t.Logf("%s: pre-flight estimate off the billed input by %.1f%% at the median, %.1f%% at worst, over %d prompts",
			provider, median*100, worst*100, len(o))
		if median > 0.05 {
			t.Errorf("%s: median error %.1f%%, want at most 5%%", provider, median*100)
		}
	}
}

func sentence(rng *rand.Rand, vocab []string, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = vocab[rng.IntN(len(vocab))]
	}
	return strings.Join(ws, " ")
}

// Pricing calls costs no allocation: a client with prices allocates exactly what one without
// does on a call.
func TestCost_PricingACallAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("under -race, sync.Pool drops objects at random: a whole call's allocations vary (TestCost_TheCallPathAllocatesNothingWithoutBudgets counts the cost steps alone)")
	}
	factory := func(hc *http.Client) (providers.Provider, error) {
		return anthropic.New(anthropic.Config{Name: "llm", BaseURL: "http://127.0.0.1:1", APIKey: "sk-bench", HTTPClient: hc, Model: "claude-haiku-4-5"})
	}
	prices, err := cost.NewPrices("USD", []cost.Entry{{Provider: "llm", Model: "claude-haiku-4-5", Price: cost.PerMillion(1, 5)}})
	if err != nil {
		t.Fatal(err)
	}
	allocs := func(opts ...client.Option) float64 {
		c := newClient(t, append(opts, client.WithProvider("llm", benchPolicy(), factory),
			client.WithBaseTransport(memTransport{[]byte(anthropicAnswer)}))...)
		req := &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: "hello there"}}}
		var resp *providers.ChatResponse
		n := testing.AllocsPerRun(200, func() {
			resp, err = c.Chat(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
		})
		t.Logf("%d options: %v allocations, cost %+v", len(opts), n, resp.Cost)
		return n
	}
	plain, priced := allocs(), allocs(client.WithPrices(prices))
	if priced != plain {
		t.Fatalf("a priced call allocates %v, an unpriced one %v", priced, plain)
	}
}
