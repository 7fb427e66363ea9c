package steady_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	steady "github.com/steadyllm/steady"
	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/config"
	"github.com/steadyllm/steady/internal/testkit/backend"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/resilience"
)

// ActiveProbe "chat" has the provider's open circuits tested by a one-token chat to the model
// whose circuit is open, sent with the provider's key, when the break ends: the circuit closes
// with no caller's call.
func TestFromConfig_ActiveProbeTestsAnOpenCircuitWithAOneTokenChat(t *testing.T) {
	s := mocks.NewServer(mocks.WithAPIKey(sentinelKey), mocks.WithScript(mocks.Status(503), mocks.OK()))
	defer s.Close()
	cfg, err := config.ParseWithEnv([]byte(`{"LLM": {
		"Resilience": {"RetryCount": 0, "CircuitBreakerThreshold": 1},
		"Providers": {"primary": {"Dialect": "openai", "BaseURL": "`+s.OpenAIBaseURL()+`", "APIKeyEnv": "K",
			"Model": "gpt-4o-mini", "ActiveProbe": "chat"}}}}`), []string{"K=" + sentinelKey})
	if err != nil {
		t.Fatal(err)
	}
	clock := backend.NewManualClock()
	c, err := steady.FromConfig(cfg, client.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Chat(context.Background(), hello()); err == nil {
		t.Fatal("the scripted 503 succeeded")
	}
	route := c.Pipeline("primary").Route("gpt-4o-mini")
	info := route.CircuitInfo()
	if info.State != resilience.CircuitOpen {
		t.Fatalf("the model's circuit is %v after a failure at threshold 1", info.State)
	}
	clock.Advance(info.NextProbeIn)
	deadline := time.Now().Add(10 * time.Second)
	for route.CircuitState() != resilience.CircuitClosed && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if st := route.CircuitState(); st != resilience.CircuitClosed {
		t.Fatalf("the circuit is %v after the break ended and the provider serves again", st)
	}
	reqs := s.Journal().Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests reached the server, want the call and the probe", len(reqs))
	}
	probe := reqs[1]
	if !bytes.Contains(probe.Body, []byte(`"ping"`)) || !bytes.Contains(probe.Body, []byte(`"gpt-4o-mini"`)) ||
		probe.Step != "ok" {
		t.Fatalf("the probe: %s, answered %q", probe.Body, probe.Step)
	}
}
