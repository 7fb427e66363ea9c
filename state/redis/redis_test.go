package steadyredis_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/internal/backend"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/resilience"
	steadyredis "github.com/steadyllm/steady/state/redis"
)

var redis *backend.Redis

func addr() string { return redis.Addr }

// TestMain runs the tests against a redis-server of their own (see internal/backend): without
// one they are skipped, except under CI, where they must run.
func TestMain(m *testing.M) {
	redis = backend.StartRedis()
	code := m.Run()
	redis.Stop()
	os.Exit(code)
}

// instance is one application instance: a pipeline named name over its own store.
type instance struct {
	store  *steadyredis.Store
	p      *resilience.Pipeline
	client *http.Client
}

func newInstance(t *testing.T, name string, prefix string, o resilience.Options) *instance {
	t.Helper()
	store := steadyredis.New(steadyredis.Options{Addr: addr(), Prefix: prefix, PollInterval: 50 * time.Millisecond})
	t.Cleanup(func() { _ = store.Close() })
	p, err := resilience.New(o, resilience.WithName(name), resilience.WithSharedState(store))
	if err != nil {
		t.Fatal(err)
	}
	tr := p.Wrap(&http.Transport{})
	t.Cleanup(tr.(interface{ CloseIdleConnections() }).CloseIdleConnections)
	return &instance{store: store, p: p, client: &http.Client{Transport: tr}}
}

func (in *instance) call(ctx context.Context, url string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url,
		strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer sk-test")
	req.Header.Set("Content-Type", "application/json")
	resp, err := in.client.Do(req)
	if err == nil {
		_ = resp.Body.Close()
	}
	return err
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func options() resilience.Options {
	o := resilience.DefaultOptions()
	o.RetryCount = 0
	o.CircuitBreakerThreshold = 3
	return o
}

// An outage opens the circuit of every instance after the threshold is reached once.
func TestRedis_AnOpenCircuitHoldsOnEveryInstance(t *testing.T) {
	s := mocks.NewServer(mocks.WithScript(mocks.Status(503).Always()))
	defer s.Close()
	url := s.OpenAIBaseURL() + "/chat/completions"
	a, b := newInstance(t, "openai", t.Name(), options()), newInstance(t, "openai", t.Name(), options())
	_ = b.store.Advice("openai") // b asks about openai, as its first call would
	for range 3 {
		_ = a.call(context.Background(), url)
	}
	if a.p.CircuitState() != resilience.CircuitOpen {
		t.Fatal("a's circuit did not open")
	}
	eventually(t, "b to learn of the opening", func() bool { return !b.store.Advice("openai").OpenUntil.IsZero() })
	if err := b.call(context.Background(), url); !errors.Is(err, resilience.ErrCircuitOpen) {
		t.Fatalf("b: %v", err)
	}
	if n := s.Journal().Len(); n != 3 {
		t.Fatalf("the server saw %d requests, want the threshold once (3)", n)
	}
}

// A 429's pause holds on every instance.
func TestRedis_APauseHoldsOnEveryInstance(t *testing.T) {
	s := mocks.NewServer(mocks.WithScript(mocks.RateLimited(30 * time.Second)))
	defer s.Close()
	url := s.OpenAIBaseURL() + "/chat/completions"
	a, b := newInstance(t, "claude", t.Name(), options()), newInstance(t, "claude", t.Name(), options())
	_ = b.store.Advice("claude")
	_ = a.call(context.Background(), url)
	eventually(t, "b to learn of the pause", func() bool { return !b.store.Advice("claude").CoolUntil.IsZero() })
	call := &resilience.Call{}
	call.Init(context.Background(), false)
	call.MaxWait = time.Second
	err := b.call(call, url)
	var ce *resilience.CooldownError
	if !errors.As(err, &ce) || ce.RetryAfter < 25*time.Second || s.Journal().Len() != 1 {
		t.Fatalf("b: %v (%d requests)", err, s.Journal().Len())
	}
}

// Killing Redis fails no call: each instance goes on with its own state, the store reports
// the trouble, and the shared view resumes after a restart.
func TestRedis_AnOutageOfRedisFailsNoCall(t *testing.T) {
	ok := mocks.NewServer()
	defer ok.Close()
	limited := mocks.NewServer(mocks.WithScript(mocks.RateLimited(30 * time.Second)))
	defer limited.Close()
	a, b := newInstance(t, "p", t.Name(), options()), newInstance(t, "p", t.Name(), options())
	_ = b.store.Advice("p")
	redis.Stop()
	for range 5 {
		for _, in := range []*instance{a, b} {
			if err := in.call(context.Background(), ok.OpenAIBaseURL()+"/chat/completions"); err != nil {
				t.Fatalf("a call failed while Redis was down: %v", err)
			}
		}
	}
	eventually(t, "the store to report the outage", func() bool { return b.store.Err() != nil })
	redis.Start()
	eventually(t, "the store to recover", func() bool { return b.store.Err() == nil })
	_ = a.call(context.Background(), limited.OpenAIBaseURL()+"/chat/completions")
	eventually(t, "b to learn of a's pause after the restart", func() bool { return !b.store.Advice("p").CoolUntil.IsZero() })
}
