package resilience

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// modelServer answers each model (the X-Model header) as the test says: a status per model,
// 200 by default, and counts the requests per model.
type modelServer struct {
	*script
	mu     sync.Mutex
	status map[string]int
	hint   map[string]string
	seen   map[string]int
}

func newModelServer(t *testing.T) *modelServer {
	m := &modelServer{status: map[string]int{}, hint: map[string]string{}, seen: map[string]int{}}
	m.script = newScript(t, func(w http.ResponseWriter, r *http.Request) {
		model := r.Header.Get("X-Model")
		m.mu.Lock()
		m.seen[model]++
		code, hint := m.status[model], m.hint[model]
		m.mu.Unlock()
		if hint != "" {
			w.Header().Set("Retry-After", hint)
		}
		if code == 0 {
			code = http.StatusOK
		}
		w.WriteHeader(code)
	})
	return m
}

func (m *modelServer) set(model string, code int, hint string) {
	m.mu.Lock()
	m.status[model], m.hint[model] = code, hint
	m.mu.Unlock()
}

func (m *modelServer) count(model string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.seen[model]
}

// callModel sends one call for model through c, as the client does: a Call naming the route.
func callModel(t *testing.T, c *http.Client, url, model string, maxWait time.Duration) (*http.Response, error) {
	t.Helper()
	call := &Call{}
	call.Init(context.Background(), false)
	call.Route, call.MaxWait = model, maxWait
	req, _ := http.NewRequestWithContext(call, http.MethodPost, url, nil)
	req.Header.Set("X-Model", model)
	resp, err := c.Do(req)
	if err == nil {
		_ = resp.Body.Close()
	}
	return resp, err
}

// Model A's outage opens A's circuit only: every call to model B on the same pipeline is
// served at once, with no circuit_open.
func TestRoutes_OneModelsOutageLeavesTheOthersAlone(t *testing.T) {
	s := newModelServer(t)
	s.set("a", http.StatusServiceUnavailable, "")
	o := testOptions()
	o.RetryCount = 0
	o.CircuitBreakerThreshold = 2
	c, p := client(t, o, WithName("openai"))
	for range 3 {
		_, _ = callModel(t, c, s.url(), "a", 0)
	}
	if st := p.Route("a").CircuitState(); st != CircuitOpen {
		t.Fatalf("model a's circuit is %v, want open", st)
	}
	if _, err := callModel(t, c, s.url(), "a", 0); !errors.Is(err, ErrCircuitOpen) {
		t.Fatalf("model a while open: %v", err)
	}
	for range 5 {
		if resp, err := callModel(t, c, s.url(), "b", 0); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("model b: %v %v", resp, err)
		}
	}
	if st := p.CircuitState(); st != CircuitClosed {
		t.Fatalf("the deployment's circuit is %v: a model's failures counted for every model", st)
	}
	if got := p.Routes(); len(got) != 2 || got["a"].Name() != "openai:a" {
		t.Fatalf("routes %v", got)
	}
}

// A 429 without a hint on model A pauses model A; a call to model B neither waits nor is
// refused.
func TestRoutes_APausePausesItsModelOnly(t *testing.T) {
	s := newModelServer(t)
	s.set("a", http.StatusTooManyRequests, "30")
	o := instantOptions()
	o.RetryCount = 0
	c, p := client(t, o, WithName("openai"), WithClock(newInstantClock()))
	if resp, err := callModel(t, c, s.url(), "a", 0); err != nil || resp.StatusCode != 429 {
		t.Fatalf("model a: %v %v", resp, err)
	}
	if p.Route("a").CoolingFor() <= 0 || p.Route("b").CoolingFor() != 0 || p.CoolingFor() != 0 {
		t.Fatalf("pauses: a %s, b %s, deployment %s", p.Route("a").CoolingFor(), p.Route("b").CoolingFor(), p.CoolingFor())
	}
	if resp, err := callModel(t, c, s.url(), "b", -1); err != nil || resp.StatusCode != 200 {
		t.Fatalf("model b, which may not wait: %v %v", resp, err)
	}
}

// Model A's retries never spend model B's retry budget.
func TestRoutes_RetryBudgetsArePerModel(t *testing.T) {
	s := newModelServer(t)
	s.set("a", http.StatusServiceUnavailable, "")
	s.set("b", http.StatusServiceUnavailable, "")
	o := testOptions()
	o.RetryCount = 3
	o.RetryBudgetPercent, o.RetryBudgetFloor, o.RetryBudgetWindowSeconds = 1, 3, 60
	o.CircuitBreakerThreshold = 100
	c, _ := client(t, o, WithName("openai"))
	for range 3 {
		_, _ = callModel(t, c, s.url(), "a", 0) // spends the floor of three retries, and more
	}
	before := s.count("b")
	_, _ = callModel(t, c, s.url(), "b", 0)
	if n := s.count("b") - before; n != 4 {
		t.Fatalf("model b made %d attempts, want 4: a's retries spent b's budget", n)
	}
}

// A network failure reaching the host counts for every model of the deployment: refused
// connections on model A open the deployment's circuit, and model B is turned away without
// touching the network.
func TestRoutes_AnUnreachableHostCountsForEveryModel(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("http://%s/v1/chat/completions", l.Addr())
	_ = l.Close() // nothing listens: connections are refused
	o := testOptions()
	o.RetryCount = 0
	o.CircuitBreakerThreshold = 2
	c, p := client(t, o, WithName("openai"))
	for range 2 {
		if _, err := callModel(t, c, url, "a", 0); err == nil || errors.Is(err, ErrCircuitOpen) {
			t.Fatalf("model a: %v, want a refused connection", err)
		}
	}
	if st := p.CircuitState(); st != CircuitOpen {
		t.Fatalf("the deployment's circuit is %v after the host refused twice", st)
	}
	var coe *CircuitOpenError
	if _, err := callModel(t, c, url, "b", 0); !errors.As(err, &coe) || coe.Pipeline != "openai" {
		t.Fatalf("model b: %v, want the deployment's circuit open", err)
	}
}

// Isolate and Reset act on every model; a pipeline of scope "deployment" has no routes; the
// models beyond MaxRoutes share one route.
func TestRoutes_IsolateResetScopeAndBound(t *testing.T) {
	s := newModelServer(t)
	s.set("a", http.StatusServiceUnavailable, "")
	o := testOptions()
	o.RetryCount = 0
	o.CircuitBreakerThreshold = 1
	c, p := client(t, o, WithName("openai"))
	_, _ = callModel(t, c, s.url(), "a", 0)
	p.Isolate()
	if _, err := callModel(t, c, s.url(), "b", 0); !errors.Is(err, ErrCircuitOpen) {
		t.Fatalf("model b of an isolated deployment: %v", err)
	}
	p.Reset()
	if p.CircuitState() != CircuitClosed || p.Route("a").CircuitState() != CircuitClosed {
		t.Fatalf("after Reset: deployment %v, model a %v", p.CircuitState(), p.Route("a").CircuitState())
	}
	for i := range MaxRoutes + 8 {
		if r := p.Route(fmt.Sprint("m", i)); r == nil {
			t.Fatal("no route")
		}
	}
	if n := len(p.Routes()); n != MaxRoutes+1 {
		t.Fatalf("%d routes, want %d and the shared one", n, MaxRoutes)
	}
	if p.Route("m999").Name() != "openai:*" {
		t.Fatalf("a model beyond the bound runs on %q", p.Route("m999").Name())
	}

	o.RouteScope = RouteScopeDeployment
	_, whole := client(t, o, WithName("local"))
	if whole.Route("a") != whole {
		t.Fatal("a pipeline of scope deployment made a route")
	}
}

// Shared state follows the routes: model a's circuit, opened on one instance, is shared under
// "<deployment>:a" and holds for model a on another instance, whose model b and deployment
// stay closed; model a's pause does not pause model b anywhere.
func TestRoutes_SharedStateIsKeptPerRoute(t *testing.T) {
	s := newModelServer(t)
	s.set("a", http.StatusServiceUnavailable, "")
	shared := &memShared{}
	o := testOptions()
	o.RetryCount, o.CircuitBreakerThreshold = 0, 2
	a, pa := client(t, o, WithName("openai"), WithSharedState(shared))
	b, pb := client(t, o, WithName("openai"), WithSharedState(shared))
	for range 2 {
		_, _ = callModel(t, a, s.url(), "a", 0)
	}
	if pa.Route("a").CircuitState() != CircuitOpen || shared.Advice("openai:a").OpenUntil.IsZero() {
		t.Fatalf("a's route: %v, shared %+v", pa.Route("a").CircuitState(), shared.Advice("openai:a"))
	}
	if adv := shared.Advice("openai"); !adv.OpenUntil.IsZero() {
		t.Fatalf("a model's opening was shared for the whole deployment: %+v", adv)
	}
	seen := s.count("a")
	if _, err := callModel(t, b, s.url(), "a", 0); !errors.Is(err, ErrCircuitOpen) || s.count("a") != seen {
		t.Fatalf("model a on the other instance: %v, %d requests", err, s.count("a")-seen)
	}
	if resp, err := callModel(t, b, s.url(), "b", 0); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("model b on the other instance: %v %v", resp, err)
	}
	if pb.CircuitState() != CircuitClosed || pb.Route("b").CircuitState() != CircuitClosed {
		t.Fatalf("other instance: deployment %v, model b %v", pb.CircuitState(), pb.Route("b").CircuitState())
	}

	// A 429 on model c pauses model c on both instances, and nothing else.
	s.set("c", http.StatusTooManyRequests, "30")
	_, _ = callModel(t, a, s.url(), "c", 0)
	if shared.Advice("openai:c").CoolUntil.IsZero() || !shared.Advice("openai").CoolUntil.IsZero() {
		t.Fatalf("shared pause: model c %+v, deployment %+v", shared.Advice("openai:c"), shared.Advice("openai"))
	}
	seenC := s.count("c")
	if _, err := callModel(t, b, s.url(), "c", -1); err == nil || s.count("c") != seenC || pb.Route("c").CoolingFor() <= 0 {
		t.Fatalf("model c on the other instance during the pause: %v, %d requests", err, s.count("c")-seenC)
	}
	if resp, err := callModel(t, b, s.url(), "b", -1); err != nil || resp.StatusCode != http.StatusOK || pb.CoolingFor() != 0 {
		t.Fatalf("model b during c's pause: %v %v", resp, err)
	}
}

// The route that the models beyond MaxRoutes share names no model, so the active probe, which
// asks the model of the route under test, cannot test it: a server has no model "*". The
// overflow route arms no active probe; when its break ends, a caller's call for one of its
// models is the probe, and closes it.
func TestRoutes_TheOverflowRouteIsProbedByACallersCall(t *testing.T) {
	s := newModelServer(t)
	s.set("*", http.StatusNotFound, "") // like any server: no model is named "*"
	s.set("late", http.StatusServiceUnavailable, "")
	clk := newManualClock()
	var mu sync.Mutex
	var probedRoutes []string
	probe := func(ctx context.Context, rt http.RoundTripper, route string) error {
		mu.Lock()
		probedRoutes = append(probedRoutes, route)
		mu.Unlock()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url(), nil)
		req.Header.Set("X-Model", route) // a one-token chat to the route's model
		resp, err := rt.RoundTrip(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode >= 400 {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	c, p := client(t, escalationOptions(1), WithName("openai"), WithClock(clk), WithActiveProbe(probe, 10*time.Second))
	t.Cleanup(func() { _ = p.Close() })
	for i := range MaxRoutes {
		p.Route(fmt.Sprint("m", i))
	}
	if resp, err := callModel(t, c, s.url(), "late", 0); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("model late: %v %v", resp, err)
	}
	r := p.Route("late")
	if r.RouteKey() != overflowRoute || r.CircuitState() != CircuitOpen {
		t.Fatalf("model late runs on %q, circuit %v", r.RouteKey(), r.CircuitState())
	}
	if a := r.breaker.active; a != nil && a.timer != nil {
		t.Fatal("the overflow route armed an active probe, which would ask the server for model \"*\"")
	}
	s.set("late", http.StatusOK, "")
	clk.Advance(r.CircuitInfo().NextProbeIn)
	if resp, err := callModel(t, c, s.url(), "late", 0); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("model late after the break: %v %v", resp, err)
	}
	if st := r.CircuitState(); st != CircuitClosed {
		t.Fatalf("the overflow route is %v after its probe succeeded", st)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(probedRoutes) != 0 || s.count("*") != 0 {
		t.Fatalf("active probes %q, %d requests for model \"*\"", probedRoutes, s.count("*"))
	}
}

// watchedStore is a memShared that reports its trouble (SharedStateWatcher): the stop function
// of the watcher registered hold-th (counting from 1) waits for release, after saying so on
// entered.
type watchedStore struct {
	memShared
	mu               sync.Mutex
	n, hold          int
	entered, release chan struct{}
}

func (s *watchedStore) Watch(func(error)) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	if s.n != s.hold {
		return func() {}
	}
	return func() {
		close(s.entered)
		<-s.release
	}
}

// StopSharing covers every route, also one made while it runs: a route made after its
// deployment began to stop sharing shares nothing.
func TestRoutes_StopSharingCoversARouteMadeMeanwhile(t *testing.T) {
	store := &watchedStore{hold: 2, entered: make(chan struct{}), release: make(chan struct{})}
	p, err := New(testOptions(), WithName("openai"), WithSharedState(store)) // watcher 1
	if err != nil {
		t.Fatal(err)
	}
	p.Route("a") // watcher 2: its StopSharing waits for the test
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.StopSharing()
	}()
	<-store.entered
	b := p.Route("b") // made while the deployment stops sharing
	close(store.release)
	<-done
	b.OpenFor(time.Minute)
	if a := store.Advice(b.Name()); a != (Advice{}) {
		t.Fatalf("route b, made while its deployment stopped sharing, still shares: advice %+v", a)
	}
}

// What another instance shares about the whole deployment — its host unreachable, its key
// refused — holds for every model here too: a routed call adopts the deployment's advice
// before its deployment's circuit admits it, and is turned away without sending.
func TestRoutes_ADeploymentsSharedOpeningHoldsForRoutedCalls(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := fmt.Sprintf("http://%s/v1/chat/completions", l.Addr())
	_ = l.Close() // nothing listens: connections are refused
	s := newModelServer(t)
	shared := &memShared{}
	o := testOptions()
	o.RetryCount, o.CircuitBreakerThreshold = 0, 1
	a, pa := client(t, o, WithName("openai"), WithSharedState(shared))
	b, pb := client(t, o, WithName("openai"), WithSharedState(shared))
	if _, err := callModel(t, a, down, "x", 0); err == nil || errors.Is(err, ErrCircuitOpen) {
		t.Fatalf("instance a: %v, want a refused connection", err)
	}
	if pa.CircuitState() != CircuitOpen || shared.Advice("openai").OpenUntil.IsZero() {
		t.Fatalf("instance a's deployment %v, shared %+v", pa.CircuitState(), shared.Advice("openai"))
	}
	if _, err := callModel(t, b, s.url(), "y", 0); !errors.Is(err, ErrCircuitOpen) || s.count("y") != 0 {
		t.Fatalf("model y on instance b: %v, %d requests sent; want the deployment's shared opening", err, s.count("y"))
	}
	if pb.CircuitState() != CircuitOpen {
		t.Fatalf("instance b's deployment is %v", pb.CircuitState())
	}
}

// A route's retries stop when its deployment's circuit opens meanwhile (another model's
// calls found the host unreachable, or the client took the deployment out), as they stop when
// the route's own circuit opens: the retry would be turned away by the next call anyway.
func TestRoutes_RetriesStopWhenTheDeploymentsCircuitOpens(t *testing.T) {
	o := testOptions()
	o.RetryCount, o.CircuitBreakerThreshold = 3, 100
	var p *Pipeline
	var hits sync.Map
	s := newScript(t, func(w http.ResponseWriter, r *http.Request) {
		if _, seen := hits.LoadOrStore(r.Header.Get("X-Model"), true); !seen {
			p.OpenFor(time.Minute) // the deployment is taken out while model a's call is out
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	var rec recorder
	c, pp := client(t, o, WithName("openai"), OnEvent(rec.observe))
	p = pp
	resp, err := callModel(t, c, s.url(), "a", 0)
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("model a: %v %v", resp, err)
	}
	if n := s.hits.Load(); n != 1 {
		t.Fatalf("model a made %d attempts after its deployment's circuit opened, want 1", n)
	}
	gave := rec.kind(EventGaveUp)
	if len(gave) != 1 || gave[0].GaveUp != GaveUpCircuitOpen {
		t.Fatalf("gave up: %+v", gave)
	}
}

// The deployment's own circuit is probed once for the fleet when its break ends, whichever
// model's call would probe: the other instance's routed calls are turned away until the
// winner's outcome reaches them.
func TestRoutes_TheDeploymentsProbeIsTheFleets(t *testing.T) {
	hold, held := make(chan struct{}), make(chan struct{}, 1)
	var holding, refused atomic.Bool
	var ys atomic.Int32
	refused.Store(true)
	s := newScript(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Model") == "y" {
			ys.Add(1)
		}
		if holding.Load() {
			held <- struct{}{}
			<-hold
		}
		if refused.Load() {
			w.WriteHeader(http.StatusUnauthorized)
		}
	})
	var release sync.Once
	t.Cleanup(func() { release.Do(func() { close(hold) }) }) // a failed test does not hang the server's Close
	shared := &memShared{}
	clock := newManualClock()
	o := testOptions()
	o.RetryCount, o.CircuitBreakerThreshold, o.CircuitBreakerDurationSeconds = 0, 1, 30
	a, pa := client(t, o, WithName("openai"), WithClock(clock), WithSharedState(&memFleet{memShared: shared, id: "a"}))
	b, pb := client(t, o, WithName("openai"), WithClock(clock), WithSharedState(&memFleet{memShared: shared, id: "b"}))
	if _, err := callModel(t, a, s.url(), "x", 0); err != nil || pa.CircuitState() != CircuitOpen {
		t.Fatalf("a's refused key: %v, deployment %v", err, pa.CircuitState())
	}
	if _, err := callModel(t, b, s.url(), "y", 0); !errors.Is(err, ErrCircuitOpen) {
		t.Fatalf("b during the break: %v", err)
	}

	clock.Advance(31 * time.Second)
	refused.Store(false)
	holding.Store(true)
	probe := make(chan error, 1)
	go func() { _, err := callModel(t, a, s.url(), "x", 0); probe <- err }()
	<-held
	holding.Store(false)
	for range 3 {
		if _, err := callModel(t, b, s.url(), "y", 0); !errors.Is(err, ErrCircuitOpen) {
			t.Fatalf("b's model y while a probes the deployment: %v", err)
		}
	}
	if n := ys.Load(); n != 0 {
		t.Fatalf("b sent %d requests while a probed the deployment, want none", n)
	}
	release.Do(func() { close(hold) })
	if err := <-probe; err != nil {
		t.Fatal(err)
	}
	if pa.CircuitState() != CircuitClosed {
		t.Fatalf("a's deployment after its probe: %v", pa.CircuitState())
	}
	eventually(t, "the closing to reach b", func() bool {
		_, err := callModel(t, b, s.url(), "y", 0)
		return err == nil && pb.CircuitState() == CircuitClosed
	})
}

// One fault is one opening: a host that refuses connections (or a refused key) opens the
// deployment's circuit, which every model consults, and not the circuit of the model whose
// call met it as well — one opening, one event, one alert. (Both opened.)
func TestRoutes_AHostFaultOpensTheDeploymentsCircuitAlone(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("http://%s/v1/chat/completions", l.Addr())
	_ = l.Close() // nothing listens: connections are refused
	o := testOptions()
	o.RetryCount = 0
	o.CircuitBreakerThreshold = 1
	var rec recorder
	c, p := client(t, o, WithName("openai"), OnEvent(rec.observe))
	if _, err := callModel(t, c, url, "a", 0); err == nil || errors.Is(err, ErrCircuitOpen) {
		t.Fatalf("model a: %v, want a refused connection", err)
	}
	if st := p.Route("a").breaker.c.st(); st != CircuitClosed {
		t.Fatalf("model a's own circuit is %v after the host refused: the fault was counted twice", st)
	}
	opened := 0
	for _, e := range rec.kind(EventBreakerStateChanged) {
		if e.To == CircuitOpen {
			opened++
		}
	}
	if opened != 1 {
		t.Fatalf("%d openings for one refused connection, want 1", opened)
	}
	// A refused key too.
	s := newModelServer(t)
	s.set("b", http.StatusUnauthorized, "")
	c2, p2 := client(t, o, WithName("azure"))
	_, _ = callModel(t, c2, s.url(), "b", 0)
	if st := p2.Route("b").breaker.c.st(); st != CircuitClosed {
		t.Fatalf("model b's own circuit is %v after a refused key", st)
	}
	if st := p2.breaker.c.st(); st != CircuitOpen {
		t.Fatalf("the deployment's circuit is %v after a refused key with a threshold of 1", st)
	}
}
