package tiktoken_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
	"github.com/steadyllm/steady/tokens"
	_ "github.com/steadyllm/steady/tokens/tiktoken"
)

// The client's estimates checked against the real tokenizers: with the encodings linked, an
// OpenAI route's estimate is the tokenizer's count in the chat format; a route whose server
// counts its own way with a tokenizer the client does not know learns it.

func openAIClient(t *testing.T, baseURL, model string, o resilience.Options, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(append([]client.Option{client.WithProvider("p", o, func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{Name: "p", BaseURL: baseURL, APIKey: "sk-test", HTTPClient: hc, Model: model})
	})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// An OpenAI route estimates every corpus prompt by its model's own encoding: o200k_base for
// gpt-4o, gpt-4.1 and gpt-5, cl100k_base for gpt-4 — exactly what the tokenizer counts in the
// chat format, with nothing sent.
func TestClient_OpenAIRoutesEstimateWithTheirTokenizer(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	for _, tc := range []struct{ model, enc string }{{"gpt-4o", tokens.O200kBase}, {"gpt-4.1-mini", tokens.O200kBase},
		{"gpt-5", tokens.O200kBase}, {"gpt-4", tokens.Cl100kBase}} {
		enc, ok := tokens.Lookup(tc.enc)
		if !ok {
			t.Fatalf("%s is not registered", tc.enc)
		}
		c := openAIClient(t, s.OpenAIBaseURL(), tc.model, resilience.DefaultOptions())
		for _, cc := range readCorpus(t, corpusPath) {
			e, err := c.EstimateTokens(&cc.req)
			if err != nil {
				t.Fatal(err)
			}
			if want := tokens.CountChatAs(enc, tc.model, &cc.req); e.Input != want || e.Method != client.EstimateTokenizer ||
				e.Encoding != tc.enc || e.Model != tc.model {
				t.Fatalf("%s on %s: %+v, want %d by %s", cc.name, tc.model, e, want, tc.enc)
			}
		}
	}
	if s.Journal().Len() != 0 {
		t.Fatalf("estimating sent %d requests", s.Journal().Len())
	}
}

// ownWay is an OpenAI-compatible server that bills prompts its own way, with a real tokenizer
// the client does not know it uses (cl100k_base) and a chat format of its own: each message's
// text, tool calls and the tool definitions' JSON, 5 tokens a message and 2 for the reply.
func ownWay(t *testing.T) *httptest.Server {
	t.Helper()
	enc, _ := tokens.Lookup(tokens.Cl100kBase)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Content   json.RawMessage `json:"content"`
				ToolCalls []struct {
					Function struct{ Name, Arguments string } `json:"function"`
				} `json:"tool_calls"`
			} `json:"messages"`
			Tools json.RawMessage `json:"tools"`
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 4<<20))
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		billed := 2 + enc.Count(string(req.Tools))
		for _, m := range req.Messages {
			billed += 5
			var text string
			if json.Unmarshal(m.Content, &text) != nil {
				var parts []struct{ Text string }
				_ = json.Unmarshal(m.Content, &parts)
				for _, p := range parts {
					text += p.Text
				}
			}
			billed += enc.Count(text)
			for _, c := range m.ToolCalls {
				billed += enc.Count(c.Function.Name) + enc.Count(c.Function.Arguments)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"x","object":"chat.completion","created":1,"model":"llama-3.1-70b","choices":[{"index":0,`+
			`"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":%d,"completion_tokens":1,"total_tokens":%d}}`,
			billed, billed+1)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A route whose server counts its own way, with a tokenizer and a chat format the client does
// not know, is learnt: after 20 answered calls, the estimate of each next corpus prompt is
// within 5 % of what the server bills at the median. (Its first estimates — the heuristic's
// alone — are reported for comparison.)
func TestClient_ARouteLearnsAServerThatCountsItsOwnWay(t *testing.T) {
	srv := ownWay(t)
	o := resilience.DefaultOptions()
	o.PaceTokensPerMinute = 100_000_000 // a tokens-per-minute limit: every try estimates, and learns
	c := openAIClient(t, srv.URL+"/v1", "llama-3.1-70b", o)
	cases := readCorpus(t, corpusPath)
	// In an order no category leads: a route's traffic mixes them.
	rand.New(rand.NewPCG(33, 20)).Shuffle(len(cases), func(i, j int) { cases[i], cases[j] = cases[j], cases[i] })
	var before, after []float64
	off := func(est, billed int) float64 { return math.Abs(float64(est-billed)) / float64(billed) }
	for i, cc := range cases {
		e, err := c.EstimateTokens(&cc.req)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Chat(context.Background(), &cc.req)
		if err != nil {
			t.Fatal(err)
		}
		billed := resp.Usage.InputTokens
		switch {
		case i < 20:
			before = append(before, off(client.EstimateInputTokens(&cc.req), billed))
		default:
			if e.Method != client.EstimateLearnt || e.Learnt.Samples != i {
				t.Fatalf("%s: %+v, want an estimate learnt from %d answers", cc.name, e, i)
			}
			after = append(after, off(e.Input, billed))
		}
	}
	slices.Sort(before)
	slices.Sort(after)
	t.Logf("heuristic alone, first 20 prompts: %.1f%% median, %.1f%% worst; learnt after 20 answers, the other %d: %.1f%% median, %.1f%% worst",
		100*before[len(before)/2], 100*before[len(before)-1], len(after), 100*after[len(after)/2], 100*after[len(after)-1])
	if m := after[len(after)/2]; m > 0.05 {
		t.Errorf("median error after 20 answers %.1f%%, want at most 5%%", 100*m)
	}
}

// A budget driven by the estimates overspends by at most the estimate error of the call that
// crossed it: calls admitted one after another against a server that counts its own way, the
// last admitted call's bill minus its estimate bounds the overspend.
func TestClient_ABudgetOverspendsByAtMostOneEstimatesError(t *testing.T) {
	srv := ownWay(t)
	prices, err := cost.NewPrices("USD", []cost.Entry{{Provider: "p", Model: "llama-3.1-70b", Price: cost.PerMillion(1000, 1000)}})
	if err != nil {
		t.Fatal(err)
	}
	cases := readCorpus(t, corpusPath)
	limit := 20 * providers.Unit // $20 at $0.001 a token: a few dozen prompts
	c := openAIClient(t, srv.URL+"/v1", "llama-3.1-70b", resilience.DefaultOptions(), client.WithPrices(prices),
		client.WithBudgets(cost.LedgerOptions{}, cost.Budget{Name: "all", Window: cost.Day, Limit: limit}))
	perToken := providers.Unit / 1000 // $0.001 a token
	var lastErr providers.Money
	admitted := 0
	for i := 0; ; i++ {
		cc := cases[i%len(cases)]
		req := cc.req
		req.MaxTokens = 1
		e, err := c.EstimateTokens(&req)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Chat(context.Background(), &req)
		if providers.KindOf(err) == providers.KindBudgetExhausted {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		admitted++
		lastErr = providers.Money(resp.Usage.Total()-e.Total()) * perToken
	}
	sp, _ := c.Ledger().Spend("all", "")
	spent := sp.Spent
	t.Logf("%d calls admitted; spent %s of %s; the last admitted call's bill exceeded its estimate by %s", admitted, spent, limit, lastErr)
	if admitted < 10 || spent > limit+max(lastErr, 0) {
		t.Fatalf("spent %s of %s after %d calls: more than the last call's estimate error %s over", spent, limit, admitted, lastErr)
	}
}
