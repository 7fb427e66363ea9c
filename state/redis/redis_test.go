package steadyredis_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	steady "github.com/steadyllm/steady"
	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/config"
	"github.com/steadyllm/steady/health"
	"github.com/steadyllm/steady/internal/testkit/backend"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
	steadyredis "github.com/steadyllm/steady/state/redis"
)

var redis *backend.Redis

func addr() string { return redis.Addr }

// TestMain runs the tests against a redis-server of their own (see internal/testkit/backend): without
// one they are skipped, except under CI, where they must run.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(child())
	}
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

func newInstance(t *testing.T, name string, prefix string, o resilience.Options, opts ...resilience.Option) *instance {
	t.Helper()
	var store *steadyredis.Store
	if prefix != "" {
		store = steadyredis.New(steadyredis.Options{Addr: addr(), Prefix: prefix, PollInterval: 50 * time.Millisecond})
		t.Cleanup(func() { _ = store.Close() })
		opts = append(opts, resilience.WithSharedState(store))
	}
	p, err := resilience.New(o, append(opts, resilience.WithName(name))...)
	if err != nil {
		t.Fatal(err)
	}
	// The start of a bare pipeline that shares: read the fleet's view before the first call
	// (a call or a read of the circuit would join in the background, never waiting on Redis).
	p.SetSharedScope("")
	t.Cleanup(p.StopSharing)
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

// Exactly one instance probes when the shared break ends: the others are turned away without
// a request until its outcome (here a success) closes the circuit everywhere.
func TestRedis_OneProbePerBreak(t *testing.T) {
	var requests atomic.Int32
	var failing atomic.Bool
	failing.Store(true)
	release := make(chan struct{})
	held := make(chan struct{}, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if failing.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		held <- struct{}{}
		<-release
	}))
	defer srv.Close()
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	defer open()
	o := options()
	o.CircuitBreakerDurationSeconds = 1
	ins := []*instance{newInstance(t, "openai", t.Name(), o), newInstance(t, "openai", t.Name(), o), newInstance(t, "openai", t.Name(), o)}
	for _, in := range ins[1:] {
		_ = in.store.Advice("openai")
	}
	for range 3 {
		_ = ins[0].call(context.Background(), srv.URL)
	}
	for _, in := range ins[1:] {
		eventually(t, "the opening to reach every instance", func() bool { return !in.store.Advice("openai").OpenUntil.IsZero() })
	}
	failing.Store(false)
	time.Sleep(1100 * time.Millisecond) // the break ends on every instance

	// Every instance tries at once; one call becomes the probe and waits at the server.
	var wg sync.WaitGroup
	var rejected atomic.Int32
	for _, in := range ins {
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := in.call(context.Background(), srv.URL); errors.Is(err, resilience.ErrCircuitOpen) {
					rejected.Add(1)
				}
			}()
		}
	}
	select {
	case <-held:
	case <-time.After(5 * time.Second):
		t.Fatalf("no probe: %d requests, %d rejected, states %v %v %v", requests.Load(), rejected.Load(),
			ins[0].p.CircuitState(), ins[1].p.CircuitState(), ins[2].p.CircuitState())
	}
	eventually(t, fmt.Sprint("the other calls to be turned away ", requests.Load(), rejected.Load()), func() bool { return rejected.Load() == 8 })
	if n := requests.Load(); n != 4 {
		t.Fatalf("the server saw %d requests, want the 3 failures and one probe", n)
	}
	open()
	wg.Wait()
	for i, in := range ins {
		eventually(t, fmt.Sprintf("instance %d to close", i), func() bool {
			return in.call(context.Background(), srv.URL) == nil && in.p.CircuitState() == resilience.CircuitClosed
		})
	}
}

// fleetRPM is the limit of the key in runFleet: one request a (scaled) second, sixty a wall
// second at the clock's speed, which a loaded machine keeps up with.
const fleetRPM = 60

// runFleet has four instances, three callers each, call a fake server that allows the key
// fleetRPM requests a minute, for about three (scaled) minutes; each instance paces itself to
// fleetRPM. It returns the requests the server saw, how many it answered 429, and how much
// scaled time the run took.
func runFleet(t *testing.T, shared bool) (sent, limited int, took time.Duration) {
	clock := backend.NewScaledClock(60)
	s := mocks.NewServer(mocks.WithKeyRateLimits("sk-test", mocks.RateLimits{RequestsPerMinute: fleetRPM}), mocks.WithClock(clock.Now))
	defer s.Close()
	o := options()
	o.PaceRequestsPerMinute = fleetRPM
	o.BulkheadMaxConcurrency = 100
	o.RetryMaxDelaySeconds = 120
	o.TimeoutSeconds = 600
	o.StreamIdleTimeoutSeconds = 600
	o.PaceFromHeaders, o.RateLimitCooldown = false, false // only the budget paces
	prefix := ""
	if shared {
		prefix = fmt.Sprintf("%s:%d:", t.Name(), time.Now().UnixNano()) // a fresh budget, full at first
	}
	start := clock.Now()
	var stop atomic.Bool
	time.AfterFunc(3*time.Second, func() { stop.Store(true) })
	var wg sync.WaitGroup
	for range 4 {
		in := newInstance(t, "openai", prefix, o, resilience.WithClock(clock))
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					_ = in.call(context.Background(), s.OpenAIBaseURL()+"/chat/completions")
				}
			}()
		}
	}
	wg.Wait()
	took = clock.Now().Sub(start)
	for _, q := range s.Journal().Requests() {
		sent++
		if strings.HasPrefix(q.Step, "429") {
			limited++
		}
	}
	return sent, limited, took
}

// Four instances pacing against one key's limit send no more than that one limit allows when
// they share the budget (the full first minute and what the run's minutes refill); each
// pacing alone, they send about four times as much. The checks count requests, which the
// feature bounds, and never assume a speed: the bounds come from the limit and the scaled time
// the run took, however slow the machine.
func TestRedis_FourInstancesShareOneBudget(t *testing.T) {
	sent, limited, took := runFleet(t, true)
	alone, aloneLimited, aloneTook := runFleet(t, false)
	t.Logf("shared budget: %d requests in %v (scaled), %d answered 429; each alone: %d requests in %v, %d answered 429",
		sent, took, limited, alone, aloneTook, aloneLimited)
	// A token bucket full at first and refilled evenly grants at most this much.
	allowed := func(d time.Duration) int { return fleetRPM + int(d.Minutes()*fleetRPM) }
	if sent > allowed(took) {
		t.Fatalf("shared: the fleet sent %d requests, more than one limit allows in %v (%d)", sent, took, allowed(took))
	}
	if sent < allowed(took)/2 {
		t.Fatalf("shared: the fleet sent %d requests, less than half of the %d one limit allows in %v: starved", sent, allowed(took), took)
	}
	if alone <= allowed(aloneTook)*3/2 {
		t.Fatalf("alone: the instances sent %d requests, not well above the %d one limit allows in %v: the test does not load the limit",
			alone, allowed(aloneTook), aloneTook)
	}
}

const childEnv = "STEADYREDIS_TEST_CHILD"

// keyEnv holds the API key of appConfig's provider when it has one.
const keyEnv = "STEADYREDIS_TEST_KEY"

// appConfig is an application's configuration: one OpenAI-compatible provider at url, its key
// read from keyEnv when withKey (else none), its state shared through the test's Redis under
// prefix.
func appConfig(url string, withKey bool, redisAddr, prefix string) (*config.Config, error) {
	keyed := ""
	if withKey {
		keyed = fmt.Sprintf(`"APIKeyEnv": %q, `, keyEnv)
	}
	return config.ParseWithEnv([]byte(fmt.Sprintf(`{"LLM": {
		"Resilience": {"RetryCount": 0, "CircuitBreakerThreshold": 3},
		"Providers": {"openai": {"Dialect": "openai-compatible", "BaseURL": %q, %s"Model": "gpt-4o-mini"}},
		"SharedState": {"Address": %q, "Prefix": %q, "PollIntervalSeconds": 0.05}}}`, url, keyed, redisAddr, prefix)), os.Environ())
}

var hello = &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: "hi"}}}

// circuitOf is the circuit a failing call opens: the model's route when the server fails the
// model (per-model circuits), the deployment's own when it refuses the key.
func circuitOf(c *client.Client, keyRefused bool) *resilience.Pipeline {
	p := c.Circuits()["openai"]
	if keyRefused {
		return p
	}
	return p.Route("gpt-4o-mini")
}

// child is another process of the application: it calls the failing provider until its
// circuit opens, lets the store write the opening, and exits.
func child() int {
	key := os.Getenv(keyEnv)
	cfg, err := appConfig(os.Getenv(childEnv+"_URL"), key != "", os.Getenv(childEnv+"_REDIS"), os.Getenv(childEnv+"_PREFIX"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	c, err := steady.FromConfig(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for range 3 {
		_, _ = c.Chat(context.Background(), hello)
	}
	if circuitOf(c, key == "").CircuitState() != resilience.CircuitOpen {
		fmt.Fprintln(os.Stderr, "the child's circuit did not open")
		return 1
	}
	_ = c.Close() // writes the opening, queued in the background, before it returns
	return 0
}

// Two processes built from configuration share one Redis: the circuit one of them opens
// holds in the other, which sends nothing; the health check shows the store. The server
// fails either the model (503: the model's circuit opens) or the key (no key, 401: the
// deployment's circuit opens, and holds for every model).
func TestRedis_SeparateProcessesFromConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  string
	}{{"model_fails", "sk-test"}, {"key_refused", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			s := mocks.NewServer(mocks.WithScript(mocks.Status(503).Always()))
			defer s.Close()
			t.Setenv(keyEnv, tc.key) // the other process inherits it
			cfg, err := appConfig(s.OpenAIBaseURL(), tc.key != "", addr(), t.Name())
			if err != nil {
				t.Fatal(err)
			}
			c, err := steady.FromConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			circuit := circuitOf(c, tc.key == "")
			_ = circuit.CircuitInfo() // the instance is up before the other process starts
			name := circuit.SharedName()

			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"=1", childEnv+"_URL="+s.OpenAIBaseURL(), childEnv+"_REDIS="+addr(), childEnv+"_PREFIX="+t.Name())
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("the other process: %v\n%s", err, out)
			}
			eventually(t, "the opening to reach this process", func() bool { return !c.SharedState().Advice(name).OpenUntil.IsZero() })
			_, err = c.Chat(context.Background(), hello)
			var perr *providers.Error
			if !errors.As(err, &perr) || perr.Kind != providers.KindCircuitOpen {
				t.Fatalf("this process: %v", err)
			}
			if n := s.Journal().Len(); n != 3 {
				t.Fatalf("the server saw %d requests, want the other process's 3", n)
			}
			for _, r := range s.Journal().Requests() {
				if sent := r.Header.Get("Authorization") != ""; sent != (tc.key != "") {
					t.Fatalf("a request carried a key: %v, want %v: the test does not fail what it means to", sent, tc.key != "")
				}
			}
			checker := health.NewChecker()
			checker.AddSet(c)
			if r := checker.Report(); len(r.SharedStates) != 1 || !r.SharedStates[0].Up {
				t.Fatalf("health: %+v", r)
			}
		})
	}
}

// BenchmarkHappyPath measures a successful call through a pipeline over an in-memory base
// transport, alone and with its state shared through Redis (advice, and a requests budget
// leased from Redis): the difference is what sharing costs a call. No call waits on Redis.
func BenchmarkHappyPath(b *testing.B) {
	base := roundTripper(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}}, nil
	})
	for _, bc := range []struct {
		name   string
		shared bool
		rpm    int
	}{{"alone", false, 0}, {"redis", true, 0}, {"alone_paced", false, 100_000_000}, {"redis_paced", true, 100_000_000}} {
		b.Run(bc.name, func(b *testing.B) {
			o := options()
			o.PaceRequestsPerMinute = bc.rpm
			opts := []resilience.Option{resilience.WithName("bench")}
			var store *steadyredis.Store
			if bc.shared {
				store = steadyredis.New(steadyredis.Options{Addr: addr(), Prefix: b.Name()})
				defer store.Close()
				opts = append(opts, resilience.WithSharedState(store))
			}
			p, err := resilience.New(o, opts...)
			if err != nil {
				b.Fatal(err)
			}
			rt := p.Wrap(base)
			req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/v1/chat/completions", nil)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				resp, err := rt.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				_ = resp.Body.Close()
			}
			b.StopTimer()
			if store != nil && store.Err() != nil {
				b.Fatal(store.Err())
			}
		})
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
