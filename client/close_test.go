package client_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// members is a shared state that counts the pipelines sharing under each name (Join, Leave)
// and fails a second Close.
type members struct {
	mu     sync.Mutex
	names  map[string]int
	closed int
}

func (m *members) Advise(string, resilience.Advice)       {}
func (m *members) Advice(string) resilience.Advice        { return resilience.Advice{} }
func (m *members) Join(_ context.Context, n string) error { m.add(n, 1); return nil }
func (m *members) Leave(n string)                         { m.add(n, -1) }

func (m *members) add(n string, d int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.names == nil {
		m.names = map[string]int{}
	}
	if m.names[n] += d; m.names[n] == 0 {
		delete(m.names, n)
	}
}

func (m *members) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed++; m.closed > 1 {
		return errors.New("closed twice")
	}
	return nil
}

// A client joins the shared state with each provider's pipeline, under a name scoped by what
// the provider calls, as soon as it is built; Close leaves it, once, and closes what was handed
// to it once, however often it is called.
func TestClose_LeavesTheSharedStateOnceAndIsIdempotent(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	store := &members{}
	c, err := client.New(openAIProvider("openai", s, policy()), openAIProvider("backup", s, policy()),
		client.WithFallback("openai", "backup"), client.WithSharedState(store), client.WithCloser(store))
	if err != nil {
		t.Fatal(err)
	}
	store.mu.Lock()
	joined := len(store.names)
	for n := range store.names {
		if !strings.HasPrefix(n, "openai@") && !strings.HasPrefix(n, "backup@") || strings.Contains(n, sentinelKey) {
			t.Errorf("shared under %q, want the provider's name and a scope that hides its key", n)
		}
	}
	store.mu.Unlock()
	if joined != 2 {
		t.Fatalf("%d names joined before any call, want the 2 providers'", joined)
	}
	if _, err := c.Chat(context.Background(), &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := c.Close(); err != nil {
			t.Fatalf("Close #%d: %v", i+1, err)
		}
	}
	if len(store.names) != 0 || store.closed != 1 {
		t.Fatalf("after Close: still joined %v, closed %d times", store.names, store.closed)
	}
}
