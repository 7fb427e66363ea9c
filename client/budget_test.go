package client_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/deferral"
	"github.com/steadyllm/steady/internal/testkit/backend"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
	"github.com/steadyllm/steady/resilience"
)

// budgetPrices prices a dear model and a cheap one at openai, and claude's model.
func budgetPrices(t testing.TB) *cost.Prices {
	t.Helper()
	p, err := cost.NewPrices("USD", []cost.Entry{
		{Provider: "openai", Model: "gpt-4o", Price: cost.PerMillion(2.5, 10)},
		{Provider: "openai", Model: "gpt-4o-mini", Price: cost.PerMillion(0.15, 0.6)},
		{Provider: "claude", Model: "claude-haiku-4-5", Price: cost.PerMillion(1, 5)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// priced is a call for model with prompt, answering at most maxTokens.
func priced(model, prompt string, maxTokens int) *providers.ChatRequest {
	return &providers.ChatRequest{Model: model, MaxTokens: maxTokens,
		Messages: []providers.Message{{Role: providers.RoleUser, Content: prompt}}}
}

// modelAsked returns the model the server was asked for in its last request.
func modelAsked(t *testing.T, s *mocks.Server) string {
	t.Helper()
	last, ok := s.Journal().Last()
	if !ok {
		t.Fatal("no request")
	}
	for _, m := range []string{"gpt-4o-mini", "gpt-4o", "claude-haiku-4-5"} {
		if strings.Contains(string(last.Body), `"model":"`+m+`"`) {
			return m
		}
	}
	t.Fatalf("no known model in %s", last.Body)
	return ""
}

// A tenant's calls go to the budget's downgrade from the call after the one whose cost took
// the spend past the downgrade tier — that call itself went as asked.
func TestBudget_DowngradeTakesEffectOnTheNextCallAfterTheTierIsCrossed(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("ok"))
	defer s.Close()
	ev := &events{}
	// A call of "hello there" (3 tokens) answered "ok" (1 token) costs 3 × 2.5 + 1 × 10 =
	// 17.5 per million on gpt-4o: 0.0000175. The tier is at half of 0.0001: crossed by the
	// third call.
	budget := cost.Budget{Name: "tenants", Per: "tenant", Window: cost.Day, Limit: nano(t, "0.0001"),
		DowngradeAt: 0.5, Downgrade: cost.Downgrade{Model: "gpt-4o-mini"}}
	c := newClient(t, openAIProvider("openai", s, policy()), client.WithPrices(budgetPrices(t)),
		client.WithBudgets(cost.LedgerOptions{}, budget), client.WithCostObserver(ev.observe))
	var models []string
	for range 5 {
		resp, err := c.Chat(context.Background(), priced("gpt-4o", "hello there", 1), client.WithTenant("acme"))
		if err != nil {
			t.Fatal(err)
		}
		models = append(models, modelAsked(t, s))
		if resp.Model != models[len(models)-1] {
			t.Fatalf("the response names %s, the server was asked for %s", resp.Model, models[len(models)-1])
		}
	}
	want := []string{"gpt-4o", "gpt-4o", "gpt-4o", "gpt-4o-mini", "gpt-4o-mini"}
	if fmt.Sprint(models) != fmt.Sprint(want) {
		t.Fatalf("models %v, want %v", models, want)
	}
	if e := ev.of(cost.EventDowngrade); len(e) != 1 || e[0].Key != "acme" || e[0].Spent != 3*17500 {
		t.Fatalf("downgrade events %+v", e)
	}
	sp, _ := c.Ledger().Spend("tenants", "acme")
	if want := providers.Money(3*17500 + 2*(3*150+600)); sp.Spent != want || sp.Reserved != 0 {
		t.Fatalf("spend %+v, want %s", sp, want)
	}
	// Another tenant is not downgraded.
	if _, err := c.Chat(context.Background(), priced("gpt-4o", "hello there", 1), client.WithTenant("beta")); err != nil || modelAsked(t, s) != "gpt-4o" {
		t.Fatalf("beta: %v, asked %s", err, modelAsked(t, s))
	}
}

// A call whose pre-flight estimate would cross the limit is refused before anything is sent,
// with the time until the window ends; it is the application's refusal, not a provider's.
func TestBudget_RefusesBeforeSendingUntilTheWindowEnds(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("ok"))
	defer s.Close()
	clock := backend.NewManualClock() // 2027-01-15 08:00:00 UTC
	budget := cost.Budget{Name: "hourly", Window: cost.Hour, Limit: nano(t, "0.001")}
	c := newClient(t, openAIProvider("openai", s, policy()), openAIProvider("spare", s, policy()), client.WithFallback("openai", "spare"),
		client.WithPrices(budgetPrices(t)), client.WithBudgets(cost.LedgerOptions{}, budget), client.WithClock(clock))
	clock.Advance(20 * time.Minute)
	// 3 prompt tokens and up to 100 answer tokens at gpt-4o: 0.0010075, past the limit.
	_, err := c.Chat(context.Background(), priced("gpt-4o", "hello there", 100))
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Kind != providers.KindBudgetExhausted || pe.RetryAfter != 40*time.Minute || pe.Provider != "" ||
		!pe.Temporary() || pe.Kind.FallsBack() {
		t.Fatalf("got %v", err)
	}
	var chain *client.ChainError
	if errors.As(err, &chain) || s.Journal().Len() != 0 {
		t.Fatalf("the refusal went to the providers: %v, %d requests", err, s.Journal().Len())
	}
	// A smaller call fits.
	if _, err := c.Chat(context.Background(), priced("gpt-4o", "hello there", 10)); err != nil {
		t.Fatalf("a call that fits: %v", err)
	}
	// The same streamed.
	if _, err := c.ChatStream(context.Background(), priced("gpt-4o", "hello there", 100)); !errors.As(err, &pe) || pe.Kind != providers.KindBudgetExhausted {
		t.Fatalf("stream: %v", err)
	}
}

func TestBudget_KeysAreCheckedBeforeAnythingIsSent(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	plain := newClient(t, openAIProvider("openai", s, policy()), client.WithPrices(budgetPrices(t)))
	budgeted := newClient(t, openAIProvider("openai", s, policy()), client.WithPrices(budgetPrices(t)),
		client.WithBudgets(cost.LedgerOptions{}, cost.Budget{Name: "t", Per: "tenant", Window: cost.Day, Limit: cost.MaxLimit}))
	for _, tc := range []struct {
		c    *client.Client
		opt  client.CallOption
		want string
	}{
		{plain, client.WithBudgetKey("team", "a"), "the client keeps no budgets"},
		{plain, client.WithTenant("a\x00b"), "control character"},
		{budgeted, client.WithBudgetKey("team", "x"), `no budget is kept per "team"`},
		{budgeted, client.WithTenant("a\r\nb"), "control character"},
		{budgeted, client.WithBudgetKey("tenant", ""), "must not be empty"},
		{plain, client.WithBudgetKey("tenant", ""), "must not be empty"},
	} {
		_, err := tc.c.Chat(context.Background(), hello(), tc.opt)
		var pe *providers.Error
		if !errors.As(err, &pe) || pe.Kind != providers.KindBadRequest || !strings.Contains(pe.Message, tc.want) {
			t.Errorf("got %v, want bad_request %q", err, tc.want)
		}
	}
	if s.Journal().Len() != 0 {
		t.Fatalf("%d requests sent", s.Journal().Len())
	}
	// A tenant is the telemetry's too: a client that keeps no budget per tenant takes it.
	if _, err := plain.Chat(context.Background(), hello(), client.WithTenant("acme")); err != nil {
		t.Fatalf("a tenant for the telemetry alone: %v", err)
	}
}

// An empty tenant is no tenant, so a service can pass a request header through as it comes: a
// client without budgets serves the call and reports no tenant, and budgets kept per tenant
// count it under the key "" shared by the calls that name none. An empty key of
// WithBudgetKey stays a mistake (TestBudget_KeysAreCheckedBeforeAnythingIsSent).
func TestBudget_AnEmptyTenantIsNoTenant(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("ok"))
	defer s.Close()
	tel := &fakeTelemetry{}
	plain := newClient(t, openAIProvider("openai", s, policy()), client.WithTelemetry(tel))
	if _, err := plain.Chat(context.Background(), hello(), client.WithTenant("")); err != nil {
		t.Fatalf("a client without budgets: %v", err)
	}
	if _, err := plain.Embed(context.Background(), &providers.EmbedRequest{Model: "text-embedding-3-small", Inputs: []string{"x"}}, client.WithTenant("")); err != nil {
		t.Fatalf("an embedding without budgets: %v", err)
	}
	starts, _, _ := tel.snapshot()
	if len(starts) != 2 || starts[0].Tenant != "" || starts[1].Tenant != "" {
		t.Fatalf("starts %+v", starts)
	}
	budgeted := newClient(t, openAIProvider("openai", s, policy()), client.WithPrices(budgetPrices(t)),
		client.WithBudgets(cost.LedgerOptions{}, cost.Budget{Name: "t", Per: "tenant", Window: cost.Day, Limit: cost.MaxLimit}))
	if _, err := budgeted.Chat(context.Background(), hello(), client.WithTenant("")); err != nil {
		t.Fatalf("a client with budgets per tenant: %v", err)
	}
	if sp, ok := budgeted.Ledger().Spend("t", ""); !ok || sp.Spent <= 0 {
		t.Fatalf("the shared key spent %+v (%v)", sp, ok)
	}
}

func TestBudget_NewRefusesBudgetsItCannotKeep(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	b := cost.Budget{Name: "t", Window: cost.Day, Limit: 1, DowngradeAt: 0.5,
		Downgrade: cost.Downgrade{Providers: []string{"nope"}, Policy: "cheap"}}
	for _, tc := range []struct {
		opts []client.Option
		want string
	}{
		{[]client.Option{client.WithBudgets(cost.LedgerOptions{}, cost.Budget{Name: "t", Window: cost.Day, Limit: 1})}, "needs WithPrices"},
		{[]client.Option{client.WithPrices(budgetPrices(t)), client.WithBudgets(cost.LedgerOptions{}, b)}, `provider "nope"`},
		{[]client.Option{client.WithPrices(budgetPrices(t)), client.WithBudgets(cost.LedgerOptions{}, b)}, `policy "cheap"`},
		{[]client.Option{client.WithPrices(budgetPrices(t)), client.WithBudgets(cost.LedgerOptions{Currency: "EUR"}, b)}, "in EUR, but the prices are in USD"},
		{[]client.Option{client.WithPrices(budgetPrices(t)), client.WithBudgets(cost.LedgerOptions{Now: time.Now}, b)}, "leave LedgerOptions.Now"},
		{[]client.Option{client.WithPrices(budgetPrices(t)), client.WithBudgets(cost.LedgerOptions{},
			cost.Budget{Name: "x", Window: cost.Day})}, "Limit 0"},
	} {
		_, err := client.New(append(tc.opts, openAIProvider("openai", s, policy()))...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}

// A stream is charged when it ends: what it cost when read to its end, its estimate when
// closed before, and the whole call after a rescue.
func TestBudget_StreamsAreChargedWhenTheyEnd(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply(words("w", 20)))
	defer s.Close()
	budget := cost.Budget{Name: "all", Window: cost.Day, Limit: cost.MaxLimit}
	c := newClient(t, openAIProvider("openai", s, policy()), client.WithPrices(budgetPrices(t)), client.WithBudgets(cost.LedgerOptions{}, budget))
	spent := func() cost.Spend { sp, _ := c.Ledger().Spend("all", ""); return sp }

	st, err := c.ChatStream(context.Background(), priced("gpt-4o", "hello there", 0))
	if err != nil {
		t.Fatal(err)
	}
	if sp := spent(); sp.Reserved == 0 || sp.Spent != 0 {
		t.Fatalf("in flight: %+v", sp)
	}
	if _, _, err := collect(t, st); err != nil {
		t.Fatal(err)
	}
	if sp := spent(); sp.Spent != st.Cost().Total() || sp.Reserved != 0 || st.Cost().Serving == 0 {
		t.Fatalf("after the end: %+v, cost %+v", sp, st.Cost())
	}
	_ = st.Close()
	before := spent().Spent

	st, err = c.ChatStream(context.Background(), priced("gpt-4o", "hello there", 0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
	if sp := spent(); sp.Spent-before != st.Cost().Total() || st.Cost().Estimated == 0 || sp.Reserved != 0 {
		t.Fatalf("closed early: spend %+v (before %s), cost %+v", sp, before, st.Cost())
	}
}

func TestBudget_ARescuedStreamIsChargedForEveryTry(t *testing.T) {
	claude := mocks.NewServer(mocks.WithReply(words("w", 30)), mocks.WithScript(mocks.TruncateStream(6)))
	defer claude.Close()
	gpt := mocks.NewServer(mocks.WithReply("rescued answer"))
	defer gpt.Close()
	o := policy()
	o.RetryCount = 0
	o.StreamRescue = resilience.RescueRestart
	c := newClient(t, client.WithProvider("claude", o, func(hc *http.Client) (providers.Provider, error) {
		return anthropic.New(anthropic.Config{Name: "claude", BaseURL: claude.AnthropicBaseURL(), APIKey: sentinelKey, HTTPClient: hc, Model: "claude-haiku-4-5"})
	}), openAIProvider("openai", gpt, policy()), client.WithFallback("claude", "openai"), client.WithPrices(budgetPrices(t)),
		client.WithBudgets(cost.LedgerOptions{}, cost.Budget{Name: "all", Window: cost.Day, Limit: cost.MaxLimit}))
	st, err := c.ChatStream(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	r := readAll(st)
	_ = st.Close()
	sp, _ := c.Ledger().Spend("all", "")
	cc := st.Cost()
	if r.err != nil || r.restarts != 1 || cc.Abandoned == 0 || cc.Serving == 0 || sp.Spent != cc.Total() || sp.Reserved != 0 {
		t.Fatalf("read %+v, cost %+v, spend %+v", r, cc, sp)
	}
}

// Shadow mode's decisions are enforce mode's, call for call, on the same traffic replayed:
// the same tenants, prompts and answers, on a fake server whose usage depends on them alone.
func TestBudget_ShadowDecisionsMatchEnforceCallForCall(t *testing.T) {
	type step struct {
		tenant, prompt string
		maxTokens      int
		stream         bool
	}
	rng := rand.New(rand.NewPCG(28, 28))
	var traffic []step
	for range 120 {
		traffic = append(traffic, step{tenant: fmt.Sprintf("t%d", rng.IntN(3)), prompt: words("p", 1+rng.IntN(60)),
			maxTokens: 1 + rng.IntN(40), stream: rng.IntN(4) == 0})
	}
	budgets := func(shadow bool) []cost.Budget {
		return []cost.Budget{
			{Name: "tenants", Per: "tenant", Window: cost.Day, Limit: nano(t, "0.004"), WarnAt: 0.3, DowngradeAt: 0.6,
				Downgrade: cost.Downgrade{Model: "gpt-4o-mini"}, Shadow: shadow},
			{Name: "everyone", Window: cost.Day, Limit: nano(t, "0.0075"), WarnAt: 0.9, Shadow: shadow},
		}
	}
	run := func(shadow bool) ([]cost.Action, map[string]providers.Money) {
		s := mocks.NewServer()
		defer s.Close()
		ev := &events{}
		// One exact encoding for both models: a learnt estimate depends on what each route
		// was sent, which differs between the modes once enforce downgrades (see the cost
		// guide's limits), and the test is of the budgets' decisions, not of the estimates.
		c := newClient(t, openAIProvider("openai", s, policy()), client.WithPrices(budgetPrices(t)),
			client.WithBudgets(cost.LedgerOptions{}, budgets(shadow)...), client.WithCostObserver(ev.observe),
			client.WithTokenEncoding("openai", "test_words"))
		for i, st := range traffic {
			req, opt := priced("gpt-4o", st.prompt, st.maxTokens), client.WithTenant(st.tenant)
			var err error
			if st.stream {
				var s *client.Stream
				if s, err = c.ChatStream(context.Background(), req, opt); err == nil {
					_, _, err = collect(t, s)
					_ = s.Close()
				}
			} else {
				_, err = c.Chat(context.Background(), req, opt)
			}
			var pe *providers.Error
			if err != nil && (shadow || !errors.As(err, &pe) || pe.Kind != providers.KindBudgetExhausted) {
				t.Fatalf("call %d (shadow %v): %v", i, shadow, err)
			}
		}
		var out []cost.Action
		for _, e := range ev.of(cost.EventDecision) {
			if e.Shadow != shadow {
				t.Fatalf("a decision of the other mode: %+v", e)
			}
			out = append(out, e.Action)
		}
		spend := map[string]providers.Money{}
		for _, tenant := range []string{"t0", "t1", "t2"} {
			sp, _ := c.Ledger().Spend("tenants", tenant)
			spend[tenant] = sp.Spent
		}
		return out, spend
	}
	enforced, enforcedSpend := run(false)
	shadowed, shadowSpend := run(true)
	if len(enforced) != len(traffic) || len(shadowed) != len(traffic) {
		t.Fatalf("%d and %d decisions for %d calls", len(enforced), len(shadowed), len(traffic))
	}
	seen := map[cost.Action]int{}
	for i := range traffic {
		if enforced[i] != shadowed[i] {
			t.Fatalf("call %d: enforce %v, shadow %v (enforce %v, shadow %v)", i, enforced[i], shadowed[i], enforced, shadowed)
		}
		seen[enforced[i]]++
	}
	if seen[cost.ActionWarn] == 0 || seen[cost.ActionDowngrade] == 0 || seen[cost.ActionRefuse] == 0 || seen[cost.ActionAllow] == 0 {
		t.Fatalf("the traffic does not reach every tier: %v", seen)
	}
	if fmt.Sprint(enforcedSpend) != fmt.Sprint(shadowSpend) {
		t.Fatalf("spend enforced %v, shadow %v", enforcedSpend, shadowSpend)
	}
	t.Logf("decisions over %d calls: %v", len(traffic), seen)
}

// A client with budgets spends allocations on them only for the calls they count.
func TestBudget_AllocationsOfABudgetedCall(t *testing.T) {
	factory := func(hc *http.Client) (providers.Provider, error) {
		return anthropic.New(anthropic.Config{Name: "llm", BaseURL: "http://127.0.0.1:1", APIKey: "sk-bench", HTTPClient: hc, Model: "claude-haiku-4-5"})
	}
	prices, err := cost.NewPrices("USD", []cost.Entry{{Provider: "llm", Model: "claude-haiku-4-5", Price: cost.PerMillion(1, 5)}})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, client.WithProvider("llm", benchPolicy(), factory), client.WithBaseTransport(memTransport{[]byte(anthropicAnswer)}),
		client.WithPrices(prices), client.WithBudgets(cost.LedgerOptions{}, cost.Budget{Name: "t", Per: "tenant", Window: cost.Day, Limit: cost.MaxLimit}))
	req := &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: "hello there"}}}
	n := testing.AllocsPerRun(200, func() {
		if _, err := c.Chat(context.Background(), req, client.WithTenant("acme")); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("a budgeted call: %v allocations", n)
}

// A deferred call refused by a budget comes back as "retry when the window ends", the
// budget's hint, for the job queue to run it then.
func TestBudget_ADeferredRefusalRetriesWhenTheWindowEnds(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("ok"))
	defer s.Close()
	clock := backend.NewManualClock()
	c := newClient(t, openAIProvider("openai", s, policy()), client.WithPrices(budgetPrices(t)), client.WithClock(clock),
		client.WithBudgets(cost.LedgerOptions{}, cost.Budget{Name: "hourly", Window: cost.Hour, Limit: nano(t, "0.0001")}))
	clock.Advance(15 * time.Minute)
	_, err := c.Chat(deferredCtx(t), priced("gpt-4o", "hello there", 100), client.Deferred(1))
	dec := asDeferral(t, err).Decision
	if !dec.Retry || dec.Kind != providers.KindBudgetExhausted || dec.Source != deferral.SourceHint || dec.Delay != 45*time.Minute {
		t.Fatalf("decision %+v", dec)
	}
}

// A long stream under a per-minute limit, admitted in one minute and read to its end in the
// next, before any other call of the minute: it opens the new minute and is charged to it,
// where the next calls see it (its cost is not lost with the minute that ended).
func TestBudget_AStreamThatOutlivesItsMinuteIsChargedToTheMinuteItEnds(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply(words("w", 20)))
	defer s.Close()
	clock := backend.NewManualClock() // 2027-01-15 08:00:00 UTC
	budget := cost.Budget{Name: "minute", Window: cost.Minute, Limit: nano(t, "1")}
	c := newClient(t, openAIProvider("openai", s, policy()), client.WithPrices(budgetPrices(t)), client.WithClock(clock),
		client.WithBudgets(cost.LedgerOptions{}, budget))
	clock.Advance(59 * time.Second)
	st, err := c.ChatStream(context.Background(), priced("gpt-4o", "hello there", 0))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Recv(); err != nil {
		t.Fatal(err)
	}
	clock.Advance(30 * time.Second) // the stream is still being read in the next minute
	if _, _, err := collect(t, st); err != nil {
		t.Fatal(err)
	}
	sp, _ := c.Ledger().Spend("minute", "")
	if want := st.Cost().Total(); want == 0 || sp.Spent != want || sp.Reserved != 0 ||
		!sp.Start.Equal(time.Date(2027, 1, 15, 8, 1, 0, 0, time.UTC)) {
		t.Fatalf("spend %+v, the stream cost %+v", sp, st.Cost())
	}
}

// Where the chain's first provider counts tokens before each call, a budget prices the counted
// prompt rather than the estimate: a call that fits by its count is admitted where its
// estimate would be refused. The count is made once: the call's first try uses it (here for
// pacing too), and the telemetry hears of it once. A count that fails leaves the estimate.
func TestBudget_PreflightPricesTheProvidersExactCount(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	ctx := context.Background()
	req := bigRequest()
	counted, err := newClient(t, countingClaude("claude", s, policy(), nil)).CountTokens(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	n := counted.Input
	est := client.EstimateInputTokens(req)
	if est <= n+100 {
		t.Fatalf("count %d, estimate %d: the test needs an estimate far from the count", n, est)
	}
	// claude-haiku-4-5 at $1 and $5 per million tokens: 1,000 and 5,000 nano-dollars a token.
	preflight := func(input int) providers.Money { return providers.Money(input*1000 + req.MaxTokens*5000) }
	limit := (preflight(n) + preflight(est)) / 2
	for _, tc := range []struct {
		name           string
		counting, fail bool
		stream         bool
	}{
		{"counted", true, false, false},
		{"counted stream", true, false, true},
		{"not counting", false, false, false},
		{"count fails", true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.fail {
				s.RouteScript(mocks.RouteCountTokens, mocks.Status(500).Always())
				defer s.RouteScript(mocks.RouteCountTokens)
			}
			tel := &countLog{}
			c := newClient(t, client.WithClock(backend.NewManualClock()), client.WithTelemetry(tel),
				countingClaude("claude", s, pacedPolicy(), func(c *anthropic.Config) { c.CountTokens = tc.counting }),
				client.WithPrices(budgetPrices(t)),
				client.WithBudgets(cost.LedgerOptions{}, cost.Budget{Name: "day", Window: cost.Day, Limit: limit}))
			before := s.Journal().Len()
			if tc.stream {
				st, err := c.ChatStream(ctx, req)
				if err == nil {
					for _, err = st.Recv(); err == nil; _, err = st.Recv() {
					}
					_ = st.Close()
					err = nil
				}
				if err != nil {
					t.Fatal(err)
				}
			} else if _, err = c.Chat(ctx, req); tc.counting && !tc.fail && err != nil {
				t.Fatal(err)
			}
			var sent []string
			for _, r := range s.Journal().Requests()[before:] {
				sent = append(sent, r.Path)
			}
			got := tel.all()
			if !tc.counting || tc.fail {
				// The estimate prices the call past the limit: refused before any chat is sent.
				if providers.KindOf(err) != providers.KindBudgetExhausted || slices.Contains(sent, "/v1/messages") {
					t.Fatalf("got %v, sent %v", err, sent)
				}
				if tc.fail && (len(got) != 1 || got[0].Err == nil || len(sent) != 1) {
					t.Fatalf("a failed count: reported %+v, sent %v", got, sent)
				}
				return
			}
			if strings.Join(sent, " ") != "/v1/messages/count_tokens /v1/messages" {
				t.Fatalf("sent %v: want one count, then the call", sent)
			}
			if len(got) != 1 || got[0].Counted != n || got[0].Estimate != est || got[0].Err != nil || got[0].Provider != "claude" ||
				got[0].Model != countModel {
				t.Fatalf("counts reported %+v", got)
			}
			if d := debited(t, c, "claude"); d != n+req.MaxTokens {
				t.Fatalf("pacing debited %d, want the count %d + max_tokens %d", d, n, req.MaxTokens)
			}
		})
	}
}

// Embeddings are priced at their model's input price, and budgets count, warn about and refuse
// them as they do chat calls — before anything is sent — but never downgrade them: a budget's
// downgrade names a chat model.
func TestBudget_EmbeddingsArePricedCountedAndRefusedButNotDowngraded(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	ctx := context.Background()
	prices, err := cost.NewPrices("USD", []cost.Entry{
		{Provider: "openai", Model: "text-embedding-3-small", Price: cost.PerMillion(0.02, 0)},
		{Provider: "openai", Model: "gpt-4o-mini", Price: cost.PerMillion(0.15, 0.6)},
	})
	if err != nil {
		t.Fatal(err)
	}
	req := &providers.EmbedRequest{Model: "text-embedding-3-small", Inputs: []string{"hello there", "general kenobi"}}
	// $0.02 a million tokens: 20 nano-dollars a token; the fake counts a token per four bytes,
	// per input: 3 + 4 tokens.
	const each = 7 * 20

	// Priced, without budgets.
	plain := newClient(t, openAIProvider("openai", s, policy()), client.WithPrices(prices))
	resp, err := plain.Embed(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Usage.InputTokens != 7 || resp.Cost != (providers.CallCost{Currency: "USD", Serving: each}) {
		t.Fatalf("usage %+v, cost %+v", resp.Usage, resp.Cost)
	}
	unpriced, err := plain.Embed(ctx, &providers.EmbedRequest{Model: "text-embedding-3-large", Inputs: []string{"x"}})
	if err != nil || unpriced.Cost.Unpriced != 1 || unpriced.Cost.Total() != 0 {
		t.Fatalf("an unpriced model: %+v, %v", unpriced, err)
	}

	// Budgeted: the limit holds three calls; the tier at half of it is crossed by the second.
	ev := &events{}
	budget := cost.Budget{Name: "tenants", Per: "tenant", Window: cost.Day, Limit: 3 * each, DowngradeAt: 0.5,
		Downgrade: cost.Downgrade{Model: "gpt-4o-mini"}}
	c := newClient(t, openAIProvider("openai", s, policy()), client.WithPrices(prices),
		client.WithBudgets(cost.LedgerOptions{}, budget), client.WithCostObserver(ev.observe))
	for i := range 3 {
		if _, err := c.Embed(ctx, req, client.WithTenant("acme")); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		last, _ := s.Journal().Last()
		if !strings.Contains(string(last.Body), `"model":"text-embedding-3-small"`) {
			t.Fatalf("call %d was sent as %s", i, last.Body)
		}
	}
	if sp, _ := c.Ledger().Spend("tenants", "acme"); sp.Spent != 3*each || sp.Reserved != 0 {
		t.Fatalf("spend %+v", sp)
	}
	if len(ev.of(cost.EventDowngrade)) != 1 {
		t.Fatalf("events %+v", ev.all)
	}
	before := s.Journal().Len()
	_, err = c.Embed(ctx, req, client.WithTenant("acme"))
	if providers.KindOf(err) != providers.KindBudgetExhausted || s.Journal().Len() != before {
		t.Fatalf("past the limit: %v, %d requests sent", err, s.Journal().Len()-before)
	}
	if _, err := c.Embed(ctx, req, client.WithTenant("beta")); err != nil {
		t.Fatalf("another tenant: %v", err)
	}
}
