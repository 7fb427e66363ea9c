package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
	"github.com/steadyllm/steady/tokens"
)

// The package-level estimate is the heuristic's count of the prompt in the chat format, with
// the reasoning sent back, plus the answer's share.
func TestEstimateTokens_IsTheHeuristicInTheChatFormat(t *testing.T) {
	req := &providers.ChatRequest{Messages: []providers.Message{
		{Role: providers.RoleSystem, Content: strings.Repeat("s", 40)},
		{Role: providers.RoleUser, Parts: []providers.Part{providers.TextPart(strings.Repeat("u", 40)),
			providers.ImagePart(providers.Image{URL: "https://example.com/a.png"})}},
	}, Tools: []providers.Tool{{Name: "abcd", Parameters: json.RawMessage(`{"type":"object"}`)}}}
	chat := tokens.CountChat(tokens.Heuristic, req)
	if got := client.EstimateInputTokens(req); got != chat || chat <= 2*tokens.Heuristic.Count(strings.Repeat("s", 40)) {
		t.Fatalf("estimate %d, chat format %d", got, chat)
	}
	if got, want := client.EstimateTokens(req), chat+client.DefaultAnswerTokens; got != want {
		t.Fatalf("estimate %d, want %d", got, want)
	}
	req.MaxTokens = 10
	if got := client.EstimateTokens(req); got != chat+10 {
		t.Fatalf("with MaxTokens: %d", got)
	}
	// Reasoning and provider blocks sent back are billed, so they count.
	req.Messages = append(req.Messages, providers.Message{Role: providers.RoleAssistant, Content: "ok",
		Thinking: []providers.ThinkingBlock{{Text: strings.Repeat("think ", 50)}}})
	with := client.EstimateInputTokens(req)
	if extra := with - tokens.CountChat(tokens.Heuristic, req); extra != tokens.Heuristic.Count(strings.Repeat("think ", 50)) {
		t.Fatalf("the thinking added %d tokens", extra)
	}
	if client.EstimateTokens(nil) != 0 || client.EstimateInputTokens(nil) != 0 {
		t.Fatal("nil request")
	}
}

// wordEncoding is an encoding of the test's own: a token a word.
type wordEncoding struct{ name string }

func (w wordEncoding) Name() string          { return w.name }
func (w wordEncoding) Count(text string) int { return len(strings.Fields(text)) }

func init() { tokens.Register(wordEncoding{name: "test_words"}) }

// A route counts with the encoding WithTokenEncoding names (for every model, or the models
// named), by the method EstimateTokens reports; an encoding nobody registered is New's error,
// naming the import that links OpenAI's; "none" estimates.
func TestEstimateTokens_ARouteCountsWithTheEncodingItIsGiven(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	req := &providers.ChatRequest{MaxTokens: 7, Messages: []providers.Message{{Role: providers.RoleUser, Content: "one two three four five"}}}
	words := tokens.CountChatAs(wordEncoding{name: "test_words"}, "gpt-4o-mini", req)

	c := newClient(t, openAIProvider("openai", s, policy()), client.WithTokenEncoding("openai", "test_words"))
	e, err := c.EstimateTokens(req)
	if err != nil {
		t.Fatal(err)
	}
	if e.Input != words || e.Answer != 7 || e.Total() != words+7 || e.Method != client.EstimateTokenizer || e.Encoding != "test_words" ||
		e.Provider != "openai" || e.Deployment != "openai" || e.Model != "gpt-4o-mini" {
		t.Fatalf("estimate %+v, want %d input tokens by test_words on openai's gpt-4o-mini", e, words)
	}
	exact, err := c.CountTokens(context.Background(), req)
	if err != nil || exact.Input != words || exact.Method != client.EstimateTokenizer || s.Journal().Len() != 0 {
		t.Fatalf("count %+v %v: want the tokenizer's, and nothing sent (%d requests)", exact, err, s.Journal().Len())
	}

	// Only the models named; the others follow the table (no encoding is linked here).
	c = newClient(t, openAIProvider("openai", s, policy()), client.WithTokenEncoding("openai", "test_words", "gpt-4.1"))
	if e, _ := c.EstimateTokens(req); e.Method != client.EstimateHeuristic || e.Input != client.EstimateInputTokens(req) {
		t.Fatalf("gpt-4o-mini, not named: %+v", e)
	}
	r41 := *req
	r41.Model = "gpt-4.1"
	if e, _ := c.EstimateTokens(&r41); e.Method != client.EstimateTokenizer || e.Model != "gpt-4.1" {
		t.Fatalf("gpt-4.1, named: %+v", e)
	}
	if _, err := c.CountTokens(context.Background(), req); providers.KindOf(err) != providers.KindBadRequest ||
		!strings.Contains(err.Error(), "openai") {
		t.Fatalf("a count where nothing counts exactly: %v", err)
	}

	_, err = client.New(openAIProvider("openai", s, policy()), client.WithTokenEncoding("openai", tokens.O200kBase, "gpt-4o"))
	if err == nil || !strings.Contains(err.Error(), `model "gpt-4o": encoding "o200k_base" is not registered`) ||
		!strings.Contains(err.Error(), `import _ "github.com/steadyllm/steady/tokens/tiktoken"`) {
		t.Fatalf("an unlinked encoding: %v", err)
	}
	_, err = client.New(openAIProvider("openai", s, policy()), client.WithTokenEncoding("openai", "p51k"))
	if err == nil || !strings.Contains(err.Error(), `encoding "p51k" is not registered (register it with tokens.Register)`) {
		t.Fatalf("an unknown encoding: %v", err)
	}
	if _, err := client.New(openAIProvider("openai", s, policy()), client.WithTokenEncoding("claude", "none")); err == nil ||
		!strings.Contains(err.Error(), `unknown provider "claude"`) {
		t.Fatalf("an unknown provider: %v", err)
	}
	c = newClient(t, openAIProvider("openai", s, policy()), client.WithTokenEncoding("openai", "test_words"),
		client.WithTokenEncoding("openai", client.TokenEncodingNone, "gpt-4o-mini"))
	if e, _ := c.EstimateTokens(req); e.Method != client.EstimateHeuristic {
		t.Fatalf("none: %+v", e)
	}
	if _, err := c.EstimateTokens(&providers.ChatRequest{}); providers.KindOf(err) != providers.KindBadRequest {
		t.Fatalf("an invalid request: %v", err)
	}
}

// billingServer is an OpenAI-compatible server whose answers bill what input says for each
// request it is sent (by its order), with the request's count.
func billingServer(t *testing.T, input func(n int, body []byte) int) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body [1 << 16]byte
		k, _ := r.Body.Read(body[:])
		i := int(n.Add(1))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c%d","object":"chat.completion","created":1,"model":"local-model","choices":[{"index":0,`+
			`"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":%d,"completion_tokens":1,"total_tokens":%d}}`,
			i, input(i, body[:k]), input(i, body[:k])+1)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func compatible(name string, srv *httptest.Server, o resilience.Options) client.Option {
	return client.WithProvider(name, o, func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{Name: name, BaseURL: srv.URL + "/v1", APIKey: sentinelKey, HTTPClient: hc, Model: "local-model"})
	})
}

// routeTokens returns the token info of provider name's route for model.
func routeTokens(t *testing.T, c *client.Client, name, model string) client.TokenInfo {
	t.Helper()
	for _, r := range c.Deployments(name)[0].Routes {
		if r.Model == model {
			return r.Tokens
		}
	}
	t.Fatalf("%s has no route for %s", name, model)
	return client.TokenInfo{}
}

// A route whose tokenizer is unknown learns, from the usage its answers report, the ratio of
// billed input to the heuristic's count, and its next estimates carry it: here the server
// bills 1.5 times the heuristic, which the route learns from its first answer. A client that
// needs no estimate (no budgets, windows or token limits) counts and learns nothing.
func TestEstimateTokens_ARouteLearnsFromTheUsageItsAnswersReport(t *testing.T) {
	req := &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: strings.Repeat("estimate this prompt ", 30)}}}
	base := client.EstimateInputTokens(req)
	srv, _ := billingServer(t, func(int, []byte) int { return base * 3 / 2 })
	o := policy()
	o.PaceTokensPerMinute = 1_000_000 // a token limit: every try estimates
	c := newClient(t, compatible("local", srv, o))
	e, err := c.EstimateTokens(req)
	if err != nil || e.Method != client.EstimateHeuristic || e.Input != base || e.Learnt != (resilience.TokenModel{Text: 1, Frame: 1}) {
		t.Fatalf("before any answer: %+v %v", e, err)
	}
	for range 3 {
		if _, err := c.Chat(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	e, _ = c.EstimateTokens(req)
	ratio := float64(base*3/2) / float64(base)
	if e.Method != client.EstimateLearnt || e.Learnt.Samples != 3 || math.Abs(e.Learnt.Text-ratio) > 1e-6 ||
		math.Abs(e.Learnt.Frame-ratio) > 1e-6 || e.Input != base*3/2 {
		t.Fatalf("after 3 answers: %+v, want %d tokens, by the ratio %v of one shape of prompt", e, base*3/2, ratio)
	}
	if ti := routeTokens(t, c, "local", "local-model"); ti.Method != client.EstimateLearnt || ti.Learnt != e.Learnt {
		t.Fatalf("Deployments: %+v", ti)
	}

	idle := newClient(t, compatible("local", srv, policy()))
	if _, err := idle.Chat(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if ti := routeTokens(t, idle, "local", "local-model"); ti.Method != client.EstimateHeuristic || ti.Learnt.Samples != 0 {
		t.Fatalf("a client that needs no estimate learnt: %+v", ti)
	}
}

// A server's usage is input steady did not write: zero, absurd and hostile counts are never
// learnt, and whatever a server reports, the learnt ratio stays within its clamp.
func TestEstimateTokens_HostileUsageNeverMovesTheRatioOutOfItsClamp(t *testing.T) {
	req := &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: strings.Repeat("how many tokens ", 20)}}}
	base := client.EstimateInputTokens(req)
	low := (base + 14) / 15 // a fifteenth, rounded up: within what one sample may say
	hostile := []int{0, -5, 1, base * 17, 1 << 40, math.MaxInt32, base * 15, base * 15, base * 15, base * 15, base * 15,
		low, low, low, low, low, low, low, low, low, low,
		low, low, low, low, low, low, low, low, low, low}
	srv, _ := billingServer(t, func(i int, _ []byte) int { return hostile[(i-1)%len(hostile)] })
	// A declared context window: the client estimates every try (a token limit would too, but
	// a hostile usage spends it).
	c := newClient(t, compatible("local", srv, policy()), client.WithContextWindow("local", 1_000_000, nil))
	var seen []float64
	for range hostile {
		if _, err := c.Chat(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		m := routeTokens(t, c, "local", "local-model").Learnt
		if m.Text < resilience.MinTokenRatio || m.Text > resilience.MaxTokenRatio || m.Frame < 0 || m.Frame > resilience.MaxTokenRatio {
			t.Fatalf("learnt %+v after %d answers", m, len(seen)+1)
		}
		e, _ := c.EstimateTokens(req)
		if e.Input < int(resilience.MinTokenRatio*float64(base)) || e.Input > int(resilience.MaxTokenRatio*float64(base)) {
			t.Fatalf("estimate %d of a prompt the heuristic counts %d", e.Input, base)
		}
		seen = append(seen, m.Text)
	}
	// 0, negative, 1 token (1/base < 1/16), 17× and beyond were dropped: the first sample
	// learnt is 15×, clamped to 4; a fifteenth pulls it down to the floor of 1/4 at most.
	if seen[5] != 1 || seen[6] != resilience.MaxTokenRatio || slices.Min(seen) < resilience.MinTokenRatio {
		t.Fatalf("text weights %v", seen)
	}
	if m := routeTokens(t, c, "local", "local-model").Learnt; m.Samples != len(hostile)-6 {
		t.Fatalf("learnt from %d answers, want %d", m.Samples, len(hostile)-6)
	}
}

// Budgets estimate on the chain's first route, as it estimates: once the route has learnt how
// its server counts, a call's pre-flight price is its bill, and the budget refuses the call
// that would cross it, not one before.
func TestEstimateTokens_BudgetsPriceTheRoutesLearntEstimate(t *testing.T) {
	req := &providers.ChatRequest{MaxTokens: 1, Messages: []providers.Message{{Role: providers.RoleUser, Content: strings.Repeat("budget ", 100)}}}
	billed := client.EstimateInputTokens(req) * 2 // the server bills twice the heuristic
	srv, n := billingServer(t, func(int, []byte) int { return billed })
	prices, err := cost.NewPrices("USD", []cost.Entry{{Provider: "local", Model: "local-model", Price: cost.PerMillion(100_000, 100_000)}})
	if err != nil {
		t.Fatal(err)
	}
	// Ten cents a token: each call costs billed+1 dimes; the budget holds 5.75 calls. Priced
	// at the heuristic's half, the sixth call would fit; at what the route learnt, it does not.
	limit := providers.Money(float64(billed+1) * 5.75 * float64(providers.Unit) / 10)
	c := newClient(t, compatible("local", srv, policy()), client.WithPrices(prices),
		client.WithBudgets(cost.LedgerOptions{}, cost.Budget{Name: "all", Window: cost.Day, Limit: limit}))
	for i := range 6 {
		_, err := c.Chat(context.Background(), req)
		if i < 5 && err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
		if i == 5 && providers.KindOf(err) != providers.KindBudgetExhausted {
			t.Fatalf("the sixth call, which would cross the budget: %v", err)
		}
	}
	if n.Load() != 5 {
		t.Fatalf("%d calls sent", n.Load())
	}
	if m := routeTokens(t, c, "local", "local-model").Learnt; m.Samples != 5 || m.Text != 2 || m.Frame != 2 {
		t.Fatalf("a budgeted client's route learnt %+v", m)
	}
}
