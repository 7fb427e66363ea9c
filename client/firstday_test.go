package client_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/health"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

func ptr(f float64) *float64 { return &f }

// Nil and invalid requests are a bad_request naming the field, before anything is sent, at
// every entry point: the client's and each provider's.
func TestBadArguments_AreRefusedBeforeSending(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	c := newClient(t, openAIProvider("openai", s, policy()), anthropicProvider("claude", s, policy()),
		client.WithFallback("openai", "claude"))
	msgs := hello().Messages
	for name, tc := range map[string]struct {
		req  *providers.ChatRequest
		want string
	}{
		"nil":                 {nil, "nil"},
		"no messages":         {&providers.ChatRequest{}, "Messages is empty"},
		"unknown role":        {&providers.ChatRequest{Messages: []providers.Message{{Role: "wizard", Content: "x"}}}, `Messages[0].Role = "wizard": must be`},
		"temperature":         {&providers.ChatRequest{Messages: msgs, Temperature: ptr(3)}, "Temperature = 3: must be between 0 and 2"},
		"NaN temperature":     {&providers.ChatRequest{Messages: msgs, Temperature: ptr(math.NaN())}, "Temperature = NaN"},
		"top p":               {&providers.ChatRequest{Messages: msgs, TopP: ptr(1.5)}, "TopP = 1.5: must be between 0 and 1"},
		"max tokens":          {&providers.ChatRequest{Messages: msgs, MaxTokens: -1}, "MaxTokens = -1"},
		"tool without its ID": {&providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleTool, Content: "42"}}}, "ToolCallID"},
		"unknown format":      {&providers.ChatRequest{Messages: msgs, Format: "yaml"}, `Format = "yaml"`},
		"huge model":          {&providers.ChatRequest{Messages: msgs, Model: strings.Repeat("m", 1<<20)}, "Model is 1048576 bytes: must be at most 256"},
		"model with newline":  {&providers.ChatRequest{Messages: msgs, Model: "gpt-4o\r\nX-Injected: 1"}, "must not hold control characters"},
	} {
		_, err := c.Chat(context.Background(), tc.req)
		_, serr := c.ChatStream(context.Background(), tc.req)
		for _, err := range []error{err, serr} {
			if providers.KindOf(err) != providers.KindBadRequest || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%s: %v, want bad_request mentioning %q", name, err, tc.want)
			}
		}
	}
	for name, req := range map[string]*providers.EmbedRequest{
		"nil": nil, "no inputs": {}, "an empty input": {Inputs: []string{"a", ""}},
		"a huge model": {Model: strings.Repeat("m", 257), Inputs: []string{"a"}},
	} {
		if _, err := c.Embed(context.Background(), req); providers.KindOf(err) != providers.KindBadRequest {
			t.Fatalf("embed %s: %v", name, err)
		}
	}
	if n := s.Journal().Len(); n != 0 {
		t.Fatalf("%d requests went out", n)
	}

	// Each provider refuses the same, called directly.
	op, _ := openai.New(openai.Config{BaseURL: s.OpenAIBaseURL(), APIKey: sentinelKey, Model: "m"})
	ap, _ := anthropic.New(anthropic.Config{BaseURL: s.AnthropicBaseURL(), APIKey: sentinelKey, Model: "m"})
	for _, p := range []providers.Provider{op, ap} {
		_, err1 := p.Chat(context.Background(), nil)
		_, err2 := p.ChatStream(context.Background(), nil)
		_, err3 := p.Embed(context.Background(), nil)
		for _, err := range []error{err1, err2, err3} {
			if providers.KindOf(err) != providers.KindBadRequest {
				t.Fatalf("%s: %v", p.Name(), err)
			}
		}
	}
	// Anthropic allows less than the neutral range.
	if _, err := ap.Chat(context.Background(), &providers.ChatRequest{Messages: msgs, Temperature: ptr(1.5)}); !strings.Contains(fmtErr(err), "Anthropic allows 0 to 1") {
		t.Fatalf("anthropic temperature: %v", err)
	}
	if n := s.Journal().Len(); n != 0 {
		t.Fatalf("%d requests went out", n)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Embed during an outage of the only embeddings provider reports that outage, not that the
// other provider has no embeddings API; a chain that nothing in can serve says so at once.
func TestCapabilities_ChainSkipsWhatAProviderCannotDo(t *testing.T) {
	claude := mocks.NewServer()
	defer claude.Close()
	gpt := mocks.NewServer(mocks.WithScript(mocks.Error(503, "server_error", "down").Always()))
	defer gpt.Close()
	o := policy()
	o.RetryCount = 0
	c := newClient(t, anthropicProvider("claude", claude, o), openAIProvider("openai", gpt, o),
		client.WithFallback("claude", "openai"))
	_, err := c.Embed(context.Background(), &providers.EmbedRequest{Inputs: []string{"a"}})
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Provider != "openai" || pe.Kind != providers.KindUnavailable || !pe.Temporary() {
		t.Fatalf("got %v, want openai's outage", err)
	}
	if claude.Journal().Len() != 0 {
		t.Fatal("a provider without embeddings was called")
	}

	only := newClient(t, anthropicProvider("claude", claude, o))
	_, err = only.Embed(context.Background(), &providers.EmbedRequest{Inputs: []string{"a"}})
	if providers.KindOf(err) != providers.KindBadRequest || !strings.Contains(err.Error(), "claude (no embeddings)") {
		t.Fatalf("got %v", err)
	}
	if claude.Journal().Len() != 0 {
		t.Fatal("a provider without embeddings was called")
	}
}

// The fallback table: the provider's fault falls back, the request's stops the chain.
func TestFallback_ProvidersFaultFallsBackRequestsFaultStops(t *testing.T) {
	for _, tc := range []struct {
		name      string
		step      mocks.Step
		kind      providers.ErrorKind
		fallsBack bool
	}{
		{"401 wrong key", mocks.Error(401, "invalid_request_error", "Incorrect API key").WithCode("invalid_api_key"), providers.KindAuth, true},
		{"403 no access", mocks.Error(403, "permission_error", "no access"), providers.KindAuth, true},
		{"404 unknown model", mocks.Error(404, "invalid_request_error", "The model `x` does not exist").WithCode("model_not_found"), providers.KindNotFound, true},
		{"quota", mocks.QuotaExceeded(), providers.KindQuotaExhausted, true},
		{"400 malformed", mocks.Error(400, "invalid_request_error", "bad"), providers.KindBadRequest, false},
		{"content filter", mocks.Error(400, "invalid_request_error", "filtered").WithCode("content_filter"), providers.KindContentFiltered, false},
		{"context too long", mocks.Error(400, "invalid_request_error", "too long").WithCode("context_length_exceeded"), providers.KindContextTooLong, false},
	} {
		primary := mocks.NewServer(mocks.WithScript(tc.step.Always()))
		secondary := mocks.NewServer(mocks.WithReply("from the secondary"))
		o := policy()
		o.RetryCount = 0
		c := newClient(t, openAIProvider("primary", primary, o), openAIProvider("secondary", secondary, o),
			client.WithFallback("primary", "secondary"))
		resp, err := c.Chat(context.Background(), hello())
		if tc.fallsBack {
			if err != nil || resp.Provider != "secondary" {
				t.Fatalf("%s: %v, want the secondary's answer", tc.name, err)
			}
		} else if providers.KindOf(err) != tc.kind || secondary.Journal().Len() != 0 {
			t.Fatalf("%s: %v with %d requests to the secondary, want %s and none", tc.name, err, secondary.Journal().Len(), tc.kind)
		}
		primary.Close()
		secondary.Close()
	}
}

// A refused key shows as that provider's trouble: its circuit opens and health says so.
func TestFallback_AuthShowsInHealth(t *testing.T) {
	primary := mocks.NewServer(mocks.WithScript(mocks.Error(401, "authentication_error", "bad key").Always()))
	defer primary.Close()
	secondary := mocks.NewServer()
	defer secondary.Close()
	o := policy()
	o.CircuitBreakerThreshold = 2
	c := newClient(t, openAIProvider("primary", primary, o), openAIProvider("secondary", secondary, o),
		client.WithFallback("primary", "secondary"))
	for i := 0; i < 3; i++ {
		if _, err := c.Chat(context.Background(), hello()); err != nil {
			t.Fatal(err)
		}
	}
	checker := health.NewChecker(health.WithFallback())
	checker.AddSet(c)
	r := checker.Report()
	if r.Status != health.StatusWarn || primary.Journal().Len() != 2 {
		t.Fatalf("health %v after %d requests to the primary, want warn after 2", r.Status, primary.Journal().Len())
	}
}

// The chain's error leads with the failure that explains the outcome, says which failure of
// the chain's that is, and lists each of the others once, in chain order.
func TestChainError_LeadsWithTheExplanation(t *testing.T) {
	o := policy()
	o.RetryCount = 0
	run := func(steps ...mocks.Step) error {
		var opts []client.Option
		var names []string
		for i, st := range steps {
			s := mocks.NewServer(mocks.WithScript(st.Always()))
			t.Cleanup(s.Close)
			name := string(rune('a' + i))
			names = append(names, name)
			opts = append(opts, openAIProvider(name, s, o))
		}
		opts = append(opts, client.WithFallback(names...))
		_, err := newClient(t, opts...).Chat(context.Background(), hello())
		return err
	}
	check := func(err error, cause string, kind providers.ErrorKind, temporary bool, order ...string) {
		t.Helper()
		var ce *client.ChainError
		var pe *providers.Error
		if !errors.As(err, &ce) || !errors.As(err, &pe) {
			t.Fatalf("%v is not a chain error", err)
		}
		if pe.Provider != cause || pe.Kind != kind || ce.Temporary() != temporary || pe.Temporary() != temporary {
			t.Fatalf("led by %s %s (temporary %v), want %s %s (%v): %v", pe.Provider, pe.Kind, ce.Temporary(), cause, kind, temporary, err)
		}
		for i, f := range ce.Failures {
			if f.Provider != order[i] {
				t.Fatalf("failures out of chain order: %v", err)
			}
		}
		if !strings.HasPrefix(err.Error(), pe.Error()) {
			t.Fatalf("the message does not lead with the cause: %v", err)
		}
		// Each failure is printed once (the cause led: it is not repeated), and the message
		// says which of them led.
		for _, f := range ce.Failures {
			if n := strings.Count(err.Error(), f.Error()); n != 1 {
				t.Fatalf("%s's failure is printed %d times: %v", f.Provider, n, err)
			}
		}
		lead := slices.Index(ce.Failures, ce.Cause)
		if want := fmt.Sprintf("(led by failure %d of %d; also failed: ", lead+1, len(ce.Failures)); !strings.Contains(err.Error(), want) {
			t.Fatalf("the message does not say %q: %v", want, err)
		}
	}
	// Stopped by the request's fault after an outage: the bad request explains the outcome.
	check(run(mocks.Status(503), mocks.Error(400, "invalid_request_error", "bad")), "b", providers.KindBadRequest, false, "a", "b")
	// Every provider failed; one failure may pass: it leads, and the whole is temporary.
	check(run(mocks.Error(401, "authentication_error", "bad key"), mocks.RateLimited(0)), "b", providers.KindRateLimited, true, "a", "b")
	// Every failure is permanent: the first leads.
	check(run(mocks.Error(401, "authentication_error", "x"), mocks.QuotaExceeded()), "a", providers.KindAuth, false, "a", "b")
}

// A chain the whole-call deadline ended between two tries is led by the deadline's failure,
// which is none of the providers': every provider's failure follows it, once each.
func TestChainError_ADeadlineBetweenTriesIsFollowedByEveryFailure(t *testing.T) {
	a := &providers.Error{Provider: "a", Kind: providers.KindOverloaded, StatusCode: 529, Message: "busy"}
	b := &providers.Error{Provider: "b", Kind: providers.KindRateLimited, StatusCode: 429, Message: "slow down"}
	lead := &providers.Error{Kind: providers.KindTimeout, Message: "the call's deadline of 1s ran out after 2 tries"}
	err := &client.ChainError{Cause: lead, Failures: []*providers.Error{a, b}, Skipped: []string{"c (no tools)"}}
	want := lead.Error() + " (after 2 failures: 1. " + a.Error() + "; 2. " + b.Error() + "; skipped: c (no tools))"
	if err.Error() != want {
		t.Fatalf("got  %s\nwant %s", err, want)
	}
	if u := err.Unwrap(); len(u) != 3 || u[0] != lead || u[1] != a || u[2] != b {
		t.Fatalf("Unwrap %v", u)
	}
}

var _ = http.StatusOK

// Why a call gave up is on its error, with the number of attempts.
func TestGaveUp_SaysWhyRetryingStopped(t *testing.T) {
	type setup struct {
		steps []mocks.Step
		edit  func(*resilience.Options)
		ctx   func() (context.Context, context.CancelFunc)
	}
	cases := map[string]struct {
		setup
		want     string
		attempts int
	}{
		"exhausted":     {setup{steps: []mocks.Step{mocks.Error(503, "server_error", "down").Always()}}, "exhausted", 3},
		"not retryable": {setup{steps: []mocks.Step{mocks.Error(400, "invalid_request_error", "bad")}}, "not_retryable", 1},
		"budget": {setup{steps: []mocks.Step{mocks.Error(503, "server_error", "down").Always()},
			edit: func(o *resilience.Options) { o.RetryBudgetPercent, o.RetryBudgetFloor = 1, 0 }}, "budget", 1},
		"hint above the cap": {setup{steps: []mocks.Step{mocks.RateLimited(2 * time.Minute)},
			edit: func(o *resilience.Options) { o.RetryMaxDelaySeconds = 1 }}, "hint_too_long", 1},
		"hint beyond the deadline": {setup{steps: []mocks.Step{mocks.RateLimited(5 * time.Second)},
			edit: func(o *resilience.Options) { o.RetryMaxDelaySeconds = 10 },
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 2*time.Second)
			}},
			"deadline", 1},
	}
	for name, tc := range cases {
		s := mocks.NewServer(mocks.WithScript(tc.steps...))
		o := policy()
		o.RetryCount = 2
		if tc.edit != nil {
			tc.edit(&o)
		}
		c := newClient(t, openAIProvider("p", s, o))
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if tc.ctx != nil {
			ctx, cancel = tc.ctx()
		}
		_, err := c.Chat(ctx, hello())
		cancel()
		var pe *providers.Error
		if !errors.As(err, &pe) || pe.GaveUp != tc.want || pe.Attempts != tc.attempts ||
			!strings.Contains(err.Error(), "gave up after") || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: %v (gave up %q after %d), want %q after %d", name, err, pe.GaveUp, pe.Attempts, tc.want, tc.attempts)
		}
		s.Close()
	}

	// The circuit opens while a call waits to retry: it stops, saying so.
	s := mocks.NewServer(mocks.WithScript(mocks.Error(503, "server_error", "down").Always()))
	defer s.Close()
	o := policy()
	o.RetryCount, o.CircuitBreakerThreshold = 1, 1
	var c *client.Client
	var tripped atomic.Bool
	c = newClient(t, openAIProvider("p", s, o), client.WithObserver(func(e resilience.Event) {
		if e.Type == resilience.EventRetryScheduled && tripped.CompareAndSwap(false, true) {
			_, _ = c.Chat(context.Background(), hello()) // another call trips the circuit meanwhile
		}
	}))
	_, err := c.Chat(context.Background(), hello())
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.GaveUp != "circuit_open" {
		t.Fatalf("got %v, want gave up because the circuit opened", err)
	}
}

// No exported entry point panics on nil or empty input.
func TestEntryPoints_NeverPanicOnNil(t *testing.T) {
	if _, err := client.New(nil); err == nil {
		t.Fatal("a client with no provider")
	}
	if _, err := client.New(client.WithProvider("a", policy(), nil)); err == nil || !strings.Contains(err.Error(), "no factory") {
		t.Fatalf("nil factory: %v", err)
	}
	if _, err := client.New(client.WithProvider("a", policy(), func(*http.Client) (providers.Provider, error) { return nil, nil })); err == nil {
		t.Fatal("a factory that returned no provider")
	}
	if _, err := resilience.New(resilience.DefaultOptions(), nil); err != nil {
		t.Fatal(err)
	}
	health.NewChecker(nil)
	s := mocks.NewServer(nil)
	s.Close()
	if providers.ErrorKind("").FallsBack() || providers.ErrorKind("nonsense").Temporary() {
		t.Fatal("an unknown kind has traits")
	}
}
