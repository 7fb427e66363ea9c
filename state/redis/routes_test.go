package steadyredis_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/resilience"
)

// callModel sends one call for model, naming its route as the client does.
func (in *instance) callModel(url, model string) (int, error) {
	call := &resilience.Call{}
	call.Init(context.Background(), false)
	call.Route = model
	req, _ := http.NewRequestWithContext(call, http.MethodPost, url,
		strings.NewReader(`{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer sk-test")
	req.Header.Set("Content-Type", "application/json")
	resp, err := in.client.Do(req)
	if err != nil {
		return 0, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// Redis keeps the fleet's state per route: model a's opening, reached on one instance, holds
// for model a on another, under the route's own name, while model b is served there and the
// deployment's own circuit stays closed everywhere.
func TestRedis_CircuitsAreSharedPerModel(t *testing.T) {
	s := mocks.NewServer(mocks.WithModelScript("model-a", mocks.Status(503).Always()))
	defer s.Close()
	url := s.OpenAIBaseURL() + "/chat/completions"
	a, b := newInstance(t, "openai", t.Name(), options()), newInstance(t, "openai", t.Name(), options())
	_ = b.store.Advice("openai:model-a") // b asks about the route, as its first call would
	for range 3 {
		_, _ = a.callModel(url, "model-a")
	}
	if a.p.Route("model-a").CircuitState() != resilience.CircuitOpen {
		t.Fatal("a's route did not open")
	}
	eventually(t, "b to learn of the route's opening", func() bool { return !b.store.Advice("openai:model-a").OpenUntil.IsZero() })
	if _, err := b.callModel(url, "model-a"); !errors.Is(err, resilience.ErrCircuitOpen) {
		t.Fatalf("model a on b: %v", err)
	}
	if code, err := b.callModel(url, "model-b"); err != nil || code != http.StatusOK {
		t.Fatalf("model b on b: %d %v", code, err)
	}
	if !b.store.Advice("openai").OpenUntil.IsZero() || b.p.CircuitState() != resilience.CircuitClosed {
		t.Fatalf("the deployment's shared circuit: %+v, b's %v", b.store.Advice("openai"), b.p.CircuitState())
	}
	if n := s.Journal().Len(); n != 4 {
		t.Fatalf("the server saw %d requests, want 3 for model a and 1 for model b", n)
	}
}
