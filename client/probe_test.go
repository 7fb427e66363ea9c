package client_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/internal/testkit/backend"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

// The active probe sends with the deployment's key to the deployment only: a probe answered
// with a redirect fails, and the place the redirect names receives nothing — neither the key
// nor the request. The probe's error reaches the observer without the key.
func TestActiveProbe_NeverFollowsARedirect(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	var calls atomic.Int32
	primary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		http.Redirect(w, r, other.URL+"/v1/chat/completions", http.StatusTemporaryRedirect)
	}))
	defer primary.Close()
	o := policy()
	o.RetryCount, o.CircuitBreakerThreshold = 0, 1
	clock := backend.NewManualClock()
	probeErrs := make(chan error, 4)
	c := newClient(t, client.WithClock(clock),
		client.WithProvider("primary", o, func(hc *http.Client) (providers.Provider, error) {
			return openai.New(openai.Config{Name: "primary", BaseURL: primary.URL + "/v1", APIKey: sentinelKey, HTTPClient: hc, Model: "gpt-4o-mini"})
		}),
		client.WithActiveProbe("primary", client.ChatProbe, time.Second),
		client.WithObserver(func(e resilience.Event) {
			if e.Type == resilience.EventProbeFinished {
				probeErrs <- e.Err
			}
		}))
	defer c.Close()
	if _, err := c.Chat(context.Background(), hello()); err == nil {
		t.Fatal("the 503 succeeded")
	}
	route := c.Pipeline("primary").Route("gpt-4o-mini")
	clock.Advance(route.CircuitInfo().NextProbeIn)
	var err error
	select {
	case err = <-probeErrs:
	case <-time.After(10 * time.Second):
		t.Fatal("no probe finished")
	}
	if err == nil || elsewhere.Load() != 0 || strings.Contains(err.Error(), sentinelKey) {
		t.Fatalf("probe answered by a redirect: err %v, %d requests elsewhere", err, elsewhere.Load())
	}
	if st := route.CircuitState(); st != resilience.CircuitOpen {
		t.Fatalf("circuit %v after a failed probe", st)
	}
}

// WithActiveProbe checks what it is given.
func TestWithActiveProbe_RejectsBadArguments(t *testing.T) {
	s := httptest.NewServer(http.NotFoundHandler())
	defer s.Close()
	prov := client.WithProvider("p", policy(), func(hc *http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{Name: "p", BaseURL: s.URL, APIKey: sentinelKey, HTTPClient: hc})
	})
	for _, tt := range []struct {
		opt  client.Option
		want string
	}{
		{client.WithActiveProbe("nope", client.ChatProbe, 0), `unknown provider "nope"`},
		{client.WithActiveProbe("p", nil, 0), "nil probe"},
		{client.WithActiveProbe("p", client.ChatProbe, -time.Second), "must be between 0 and 1h0m0s"},
		{client.WithActiveProbe("p", client.ChatProbe, 2*time.Hour), "must be between 0 and 1h0m0s"},
	} {
		if _, err := client.New(prov, tt.opt); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("got %v, want %q", err, tt.want)
		}
	}
}

// ChatProbe judges an answer as the circuit judges a call: a rate limit, a spent quota or a
// rejected request shows the provider serving; an outage, an overload or a refused key does
// not.
func TestChatProbe_JudgesAsTheCircuitDoes(t *testing.T) {
	for _, tt := range []struct {
		step   mocks.Step
		serves bool
	}{
		{mocks.OK(), true},
		{mocks.RateLimited(time.Second), true},
		{mocks.QuotaExceeded(), true},
		{mocks.Error(400, "invalid_request_error", "max_tokens is too small"), true},
		{mocks.Status(503), false},
		{mocks.Overloaded(), false},
		{mocks.Status(401), false},
		{mocks.Malformed(), false},
	} {
		s := mocks.NewServer(mocks.WithScript(tt.step))
		p, err := openai.New(openai.Config{Name: "p", BaseURL: s.OpenAIBaseURL(), APIKey: sentinelKey, HTTPClient: s.Client()})
		if err != nil {
			t.Fatal(err)
		}
		err = client.ChatProbe(context.Background(), p, "gpt-4o-mini")
		if (err == nil) != tt.serves {
			t.Errorf("step %+v: probe error %v, want serving %v", tt.step, err, tt.serves)
		}
		s.Close()
	}
	if err := client.ChatProbe(context.Background(), nil, ""); err == nil {
		t.Error("a probe without a model succeeded")
	}
}

// The deployment's own circuit opens when its host cannot be reached; a ChatProbe of it, on a
// provider with no default model (callers name the model of each call), asks a model the
// deployment has served, so the deployment comes back when its host does, instead of failing
// every probe without sending and staying open for good.
func TestActiveProbe_TheDeploymentsCircuitComesBackWithoutADefaultModel(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens: the host refuses connections
	o := policy()
	o.RetryCount, o.CircuitBreakerThreshold = 0, 1
	clock := backend.NewManualClock()
	probes := make(chan resilience.Event, 8)
	c := newClient(t, client.WithClock(clock),
		client.WithProvider("openai", o, func(hc *http.Client) (providers.Provider, error) {
			return openai.New(openai.Config{Name: "openai", BaseURL: "http://" + addr + "/v1", APIKey: sentinelKey, HTTPClient: hc})
		}),
		client.WithActiveProbe("openai", client.ChatProbe, time.Second),
		client.WithObserver(func(e resilience.Event) {
			if e.Type == resilience.EventProbeFinished {
				probes <- e
			}
		}))
	defer c.Close()
	if _, err := ask(c, "model-a"); err == nil {
		t.Fatal("a call to a host that refuses connections succeeded")
	}
	p := c.Pipeline("openai")
	if p.CircuitState() != resilience.CircuitOpen {
		t.Fatalf("the deployment's circuit is %v after the host refused", p.CircuitState())
	}
	l, err = net.Listen("tcp", addr) // the host is back
	if err != nil {
		t.Skipf("cannot listen on %s again: %v", addr, err)
	}
	s := mocks.NewServer(mocks.WithListener(l))
	defer s.Close()
	if st := p.Route("model-a").CircuitState(); st != resilience.CircuitClosed {
		t.Fatalf("model-a's circuit is %v: the host's fault opened it too", st)
	}
	clock.Advance(p.OwnCircuit().NextProbeIn)
	select { // the deployment's probe: the one circuit open
	case e := <-probes:
		if e.Err != nil || e.Route != "" {
			t.Fatalf("the probe of route %q: %v", e.Route, e.Err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no probe finished")
	}
	if st := p.CircuitState(); st != resilience.CircuitClosed {
		t.Fatalf("the deployment's circuit is %v once its host is back", st)
	}
	if _, err := ask(c, "model-a"); err != nil {
		t.Fatalf("a call once the host is back: %v", err)
	}
}

// The deployment's own circuit counts only what concerns every model (an unreachable host, a
// refused key), and so does its active probe: once the host is back, the probe of the
// deployment's circuit passes even when the model it asks is itself failing, whose own circuit
// stays open; the deployment's other models serve again.
func TestActiveProbe_TheDeploymentsProbeIsNotFailedByOneModel(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens: the host refuses connections
	o := policy()
	o.RetryCount, o.CircuitBreakerThreshold = 0, 1
	clock := backend.NewManualClock()
	probes := make(chan resilience.Event, 8)
	c := newClient(t, client.WithClock(clock),
		client.WithProvider("openai", o, func(hc *http.Client) (providers.Provider, error) {
			return openai.New(openai.Config{Name: "openai", BaseURL: "http://" + addr + "/v1", APIKey: sentinelKey, HTTPClient: hc,
				Model: "model-a"})
		}),
		client.WithActiveProbe("openai", client.ChatProbe, time.Second),
		client.WithObserver(func(e resilience.Event) {
			if e.Type == resilience.EventProbeFinished {
				probes <- e
			}
		}))
	defer c.Close()
	if _, err := ask(c, "model-a"); err == nil {
		t.Fatal("a call to a host that refuses connections succeeded")
	}
	p := c.Pipeline("openai")
	if p.CircuitState() != resilience.CircuitOpen {
		t.Fatalf("the deployment's circuit is %v after the host refused", p.CircuitState())
	}
	l, err = net.Listen("tcp", addr) // the host is back, but model-a is overloaded
	if err != nil {
		t.Skipf("cannot listen on %s again: %v", addr, err)
	}
	s := mocks.NewServer(mocks.WithListener(l), mocks.WithModelScript("model-a", mocks.Status(503).Always()))
	defer s.Close()
	clock.Advance(p.OwnCircuit().NextProbeIn)
	select { // the deployment's probe, which asks model-a
	case e := <-probes:
		if e.Err != nil || e.Route != "" {
			t.Fatalf("the probe of route %q: %v", e.Route, e.Err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no probe finished")
	}
	if st := p.OwnCircuitState(); st != resilience.CircuitClosed {
		t.Fatalf("the deployment's circuit is %v once its host is back", st)
	}
	if _, err := ask(c, "model-a"); err == nil {
		t.Fatal("model-a served while its server answers 503")
	}
	if st := p.Route("model-a").CircuitState(); st != resilience.CircuitOpen {
		t.Fatalf("model-a's circuit is %v while model-a fails", st)
	}
	if _, err := ask(c, "model-b"); err != nil {
		t.Fatalf("model-b once the host is back: %v", err)
	}
}
