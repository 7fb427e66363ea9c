package steadyredis_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	steady "github.com/steadyllm/steady"
	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/config"
	"github.com/steadyllm/steady/health"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	// docs:begin import
	_ "github.com/steadyllm/steady/state/redis" // its own module: go-redis stays out of the core
	// docs:end import
)

// guideConfig is the configuration docs/many-instances.md shows.
const guideConfig = "../../examples/config/many-instances.json"

// instanceFromConfig is one instance of the application of docs/many-instances.md: the guide's
// configuration, with the test's Redis, no password and no TLS in place of production's, and
// the fake server's address for OpenAI's.
func instanceFromConfig(t *testing.T, fake *mocks.Server, prefix string) *client.Client {
	t.Helper()
	env := []string{
		"OPENAI_API_KEY=sk-test",
		"LLM__Providers__openai__BaseURL=" + fake.OpenAIBaseURL(),
		"LLM__SharedState__Address=" + addr(),
		"LLM__SharedState__Prefix=" + prefix,
		"LLM__SharedState__PasswordEnv=",
		"LLM__SharedState__TLS=false",
		"LLM__Resilience__RetryCount=0",
		"LLM__Resilience__CircuitBreakerThreshold=3",
	}
	// docs:begin build
	cfg, err := config.LoadWithEnv(env, guideConfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := steady.FromConfig(cfg) // opens the store LLM.SharedState describes; c.Close closes it
	if err != nil {
		t.Fatal(err)
	}
	// docs:end build
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Two instances built from the guide's configuration: the outage the first one meets opens
// the circuit of the second, which then refuses calls without sending them; health shows the
// store up.
func TestGuide_TwoInstancesShareAnOutage(t *testing.T) {
	fake := mocks.NewServer(mocks.WithScript(mocks.Status(503).Always()))
	defer fake.Close()
	prefix := fmt.Sprintf("%s-%d:", t.Name(), time.Now().UnixNano()) // one fleet per run
	a, b := instanceFromConfig(t, fake, prefix), instanceFromConfig(t, fake, prefix)
	route := circuitOf(b, false)
	_ = route.CircuitInfo() // b knows the route before a's outage, as after its first call
	ask := &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: "hi"}}}
	for range 3 {
		_, _ = a.Chat(context.Background(), ask)
	}
	if n := fake.Journal().Len(); n != 3 {
		t.Fatalf("instance a sent %d requests, want 3", n)
	}
	eventually(t, "instance b to learn of a's opening", func() bool {
		return !b.SharedState().Advice(route.SharedName()).OpenUntil.IsZero()
	})
	_, err := b.Chat(context.Background(), ask)
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Kind != providers.KindCircuitOpen {
		t.Fatalf("instance b's call: %v, want circuit_open", err)
	}
	if n := fake.Journal().Len(); n != 3 {
		t.Fatalf("the server saw %d requests, want a's 3: b sent through the shared opening", n)
	}
	// docs:begin health
	checker := health.NewChecker()
	checker.AddSet(b) // its circuits, and the check "shared:shared-state" (up or down)
	// docs:end health
	if r := checker.Report(); len(r.SharedStates) != 1 || !r.SharedStates[0].Up {
		t.Fatalf("health: %+v", r)
	}
}
