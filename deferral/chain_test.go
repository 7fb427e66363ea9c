package deferral_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/deferral"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

func failure(provider string, k providers.ErrorKind, retryAfter time.Duration) *providers.Error {
	return &providers.Error{Provider: provider, Kind: k, RetryAfter: retryAfter}
}

// chain builds what client returns when every provider failed: Cause leads, as client's
// explain picks it (the failure that stopped the chain, else the first that may pass).
func chain(cause *providers.Error, failures ...*providers.Error) *client.ChainError {
	return &client.ChainError{Cause: cause, Failures: failures}
}

// A chain comes back at the earliest time any of its providers may serve, and the decision
// names the provider whose failure gave it; a failure the request caused, or a chain where
// nothing may pass, is permanent.
func TestDecide_AChainRetriesAtTheEarliestTimeAnyProviderCanServe(t *testing.T) {
	d := decider(t) // attempt 1 backs off 1 s
	openA := failure("a", providers.KindCircuitOpen, 30*time.Second)
	limitedB := failure("b", providers.KindRateLimited, 2*time.Second)
	overA := failure("a", providers.KindOverloaded, 0)
	limitedB40 := failure("b", providers.KindRateLimited, 40*time.Second)
	authA := failure("a", providers.KindAuth, 0)
	quotaB := failure("b", providers.KindQuotaExhausted, 0)
	badB := failure("b", providers.KindBadRequest, 0)
	limitedA := failure("a", providers.KindRateLimited, 2*time.Second)
	farB := spentAt(time.Date(2426, 1, 1, 0, 0, 0, 0, time.UTC))
	farB.Provider = "b"
	canceledB := failure("b", providers.KindCanceled, 0)
	probeC := failure("c", providers.KindCircuitOpen, 5*time.Second)

	type want struct {
		retry    bool
		delay    time.Duration
		src      deferral.Source
		kind     providers.ErrorKind
		provider string
	}
	for _, tc := range []struct {
		name string
		err  error
		want want
	}{
		{"a's circuit for 30 s, b's 429 for 2 s", chain(openA, openA, limitedB),
			want{true, 2 * time.Second, deferral.SourceHint, providers.KindRateLimited, "b"}},
		{"a's backoff before b's 40 s hint", chain(overA, overA, limitedB40),
			want{true, time.Second, deferral.SourceBackoff, providers.KindOverloaded, "a"}},
		{"the earliest of three: c's probe", chain(limitedB40, limitedB40, openA, probeC),
			want{true, 5 * time.Second, deferral.SourceCircuit, providers.KindCircuitOpen, "c"}},
		{"a refused key does not hide b's hint", chain(limitedB, authA, limitedB),
			want{true, 2 * time.Second, deferral.SourceHint, providers.KindRateLimited, "b"}},
		{"b's reset centuries away, capped", chain(farB, authA, farB),
			want{true, deferral.MaxDelay, deferral.SourceHint, providers.KindRateLimited, "b"}},
		{"ties go to the cause", chain(limitedA, limitedA, limitedB),
			want{true, 2 * time.Second, deferral.SourceHint, providers.KindRateLimited, "a"}},
		{"stopped by the request's own failure", chain(badB, limitedA, badB),
			want{false, 0, deferral.SourcePermanent, providers.KindBadRequest, "b"}},
		{"nothing may pass: a refused key and a spent quota", chain(authA, authA, quotaB),
			want{false, 0, deferral.SourcePermanent, providers.KindAuth, "a"}},
		{"stopped by the caller's cancellation: the backoff", chain(canceledB, limitedA40(), canceledB),
			want{true, time.Second, deferral.SourceBackoff, providers.KindCanceled, "b"}},
		{"wrapped and joined, not a ChainError", fmt.Errorf("job 7: %w", errors.Join(errors.New("context"), openA, limitedB)),
			want{true, 2 * time.Second, deferral.SourceHint, providers.KindRateLimited, "b"}},
		{"a chain inside a deferral inside a wrap", fmt.Errorf("job: %w", &deferral.Error{Err: chain(openA, openA, limitedB)}),
			want{true, 2 * time.Second, deferral.SourceHint, providers.KindRateLimited, "b"}},
	} {
		dec := d.Decide(tc.err, 1)
		got := want{dec.Retry, dec.Delay, dec.Source, dec.Kind, dec.Provider}
		if got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, dec, tc.want)
		}
		if !strings.Contains(dec.String(), tc.want.provider) {
			t.Errorf("%s: %q does not name the provider", tc.name, dec.String())
		}
	}
}

func limitedA40() *providers.Error { return failure("a", providers.KindRateLimited, 40*time.Second) }

// cyclic is a hostile error whose Unwrap leads back to itself.
type cyclic struct{ next []error }

func (c *cyclic) Error() string   { return "cyclic" }
func (c *cyclic) Unwrap() []error { return c.next }

// asProvider presents itself as a *providers.Error through an As method only.
type asProvider struct{ pe *providers.Error }

func (a asProvider) Error() string { return "as" }
func (a asProvider) As(target any) bool {
	if p, ok := target.(**providers.Error); ok {
		*p = a.pe
		return true
	}
	return false
}

// Hostile trees neither hang nor panic Decide: cycles, a fan-out past any chain, nil
// failures; an error that is a *providers.Error only through As is still found.
func TestDecide_HostileErrorTreesNeitherHangNorPanic(t *testing.T) {
	d := decider(t)
	loop := &cyclic{}
	loop.next = []error{loop, loop}
	loopWithHint := &cyclic{}
	loopWithHint.next = []error{loopWithHint, failure("b", providers.KindRateLimited, 3*time.Second)}
	wide := make([]error, 100_000)
	for i := range wide {
		wide[i] = failure("p", providers.KindRateLimited, time.Hour)
	}
	var nilPE *providers.Error
	for _, tc := range []struct {
		name  string
		err   error
		delay time.Duration
	}{
		{"a cycle without a provider error", loop, time.Second},
		{"a cycle with a hint", loopWithHint, 3 * time.Second},
		{"a fan-out of 100 000", errors.Join(wide...), time.Hour},
		{"a typed nil failure", errors.Join(nilPE, errors.New("x")), time.Second},
		{"a chain with a nil cause", &client.ChainError{Failures: []*providers.Error{nil, failure("b", providers.KindOverloaded, 4*time.Second)}}, 4 * time.Second},
		{"found through As", asProvider{failure("b", providers.KindRateLimited, 6*time.Second)}, 6 * time.Second},
	} {
		dec := d.Decide(tc.err, 1)
		if !dec.Retry || dec.Delay != tc.delay {
			t.Errorf("%s: %+v, want a retry in %v", tc.name, dec, tc.delay)
		}
	}
}

// Through the real client: provider a's circuit is open for 30 s, provider b answers 429 with
// a 2 s hint; the deferred call comes back in 2 s, on b's word, not in 30 s on a's.
func TestDeferred_AChainThroughTheClientComesBackWhenItsFirstProviderCan(t *testing.T) {
	a := mocks.NewServer(mocks.WithScript(mocks.Status(503).Always()))
	defer a.Close()
	b := mocks.NewServer(mocks.WithScript(mocks.RateLimited(2 * time.Second).Always()))
	defer b.Close()
	o := resilience.DefaultOptions()
	o.CircuitBreakerThreshold, o.CircuitBreakerDurationSeconds = 1, 30
	c, err := client.New(
		client.WithProvider("a", o, openAIFactory("a", a)),
		client.WithProvider("b", o, openAIFactory("b", b)),
		client.WithFallback("a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: "summarise"}}}

	// One failure opens a's circuit.
	if _, err := c.Chat(ctx, req, client.Deferred(1), client.WithProviders("a")); err == nil {
		t.Fatal("a answered")
	}
	_, err = c.Chat(ctx, req, client.Deferred(1))
	var de *deferral.Error
	var ce *client.ChainError
	if !errors.As(err, &de) || !errors.As(err, &ce) || len(ce.Failures) != 2 {
		t.Fatalf("got %v, want a deferred chain failure", err)
	}
	if ce.Cause.Kind != providers.KindCircuitOpen || ce.Cause.RetryAfter <= 2*time.Second {
		t.Fatalf("the chain's cause is %v, want a's open circuit", ce.Cause)
	}
	dec := de.Decision
	if !dec.Retry || dec.Delay != 2*time.Second || dec.Source != deferral.SourceHint ||
		dec.Kind != providers.KindRateLimited || dec.Provider != "b" {
		t.Fatalf("decision %+v: want b's 2 s hint", dec)
	}
	if a.Journal().Len() != 1 || b.Journal().Len() != 1 {
		t.Fatalf("requests: a %d, b %d, want one each", a.Journal().Len(), b.Journal().Len())
	}
}

func openAIFactory(name string, s *mocks.Server) client.ProviderFactory {
	return func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{Name: name, BaseURL: s.OpenAIBaseURL(), APIKey: "sk-test", HTTPClient: hc, Model: "gpt-4o-mini"})
	}
}
