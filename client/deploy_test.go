package client_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

// deploymentsOn returns one deployment per server, named d0, d1…, with the given weights.
func deploymentsOn(servers []*mocks.Server, weights ...int) []client.Deployment {
	out := make([]client.Deployment, len(servers))
	for i, s := range servers {
		s := s
		out[i] = client.Deployment{Name: fmt.Sprintf("d%d", i), Factory: func(hc *http.Client) (providers.Provider, error) {
			return openai.New(openai.Config{Name: "p", BaseURL: s.OpenAIBaseURL(), APIKey: sentinelKey, HTTPClient: hc, Model: "gpt-4o-mini"})
		}}
		if i < len(weights) {
			out[i].Weight = weights[i]
		}
	}
	return out
}

func servers(t *testing.T, n int, opts ...mocks.Option) []*mocks.Server {
	out := make([]*mocks.Server, n)
	for i := range out {
		out[i] = mocks.NewServer(opts...)
		t.Cleanup(out[i].Close)
	}
	return out
}

func counts(ss []*mocks.Server) []int {
	out := make([]int, len(ss))
	for i, s := range ss {
		out[i] = s.Journal().Len()
	}
	return out
}

func TestDeployments_WeightedMatchesTheWeights(t *testing.T) {
	ss := servers(t, 3)
	c := newClient(t, client.WithDeployments("p", policy(), client.StrategyWeighted, deploymentsOn(ss, 1, 2, 7)...))
	const n = 2000
	for range n {
		if _, err := c.Chat(context.Background(), hello()); err != nil {
			t.Fatal(err)
		}
	}
	got := counts(ss)
	for i, w := range []float64{0.1, 0.2, 0.7} {
		// Binomial spread: 4 standard deviations of the share.
		tol := 4 * math.Sqrt(w*(1-w)/n)
		if share := float64(got[i]) / n; math.Abs(share-w) > tol {
			t.Errorf("deployment %d: share %.3f, want %.2f ± %.3f (counts %v)", i, share, w, tol, got)
		}
	}
}

func TestDeployments_RoundRobinTakesTurns(t *testing.T) {
	ss := servers(t, 3)
	c := newClient(t, client.WithDeployments("p", policy(), client.StrategyRoundRobin, deploymentsOn(ss)...))
	for range 9 {
		if _, err := c.Chat(context.Background(), hello()); err != nil {
			t.Fatal(err)
		}
	}
	if got := counts(ss); got[0] != 3 || got[1] != 3 || got[2] != 3 {
		t.Fatalf("counts %v", got)
	}
}

func TestDeployments_LeastInFlightAvoidsTheBusyOne(t *testing.T) {
	// The first call, the stream, is slow, so its body (and its slot) stays open.
	ss := servers(t, 2, mocks.WithReply("a long enough answer to stream"),
		mocks.WithScript(mocks.SlowStream(300*time.Millisecond), mocks.OK().Always()))
	c := newClient(t, client.WithDeployments("p", policy(), client.StrategyLeastInFlight, deploymentsOn(ss)...))
	// A stream holds its deployment's slot until it is closed.
	st, err := c.ChatStream(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	busy := 0
	if counts(ss)[1] == 1 {
		busy = 1
	}
	for range 3 {
		if _, err := c.Chat(context.Background(), hello()); err != nil {
			t.Fatal(err)
		}
	}
	if got := counts(ss); got[busy] != 1 || got[1-busy] != 3 {
		t.Fatalf("counts %v with deployment %d busy", got, busy)
	}
	infos := c.Deployments("p")
	if len(infos) != 2 || infos[busy].InFlight != 1 || infos[1-busy].InFlight != 0 || infos[0].Name != "p/d0" {
		t.Fatalf("deployments %+v", infos)
	}
}

func TestDeployments_MostHeadroomFollowsTheBudgets(t *testing.T) {
	ss := servers(t, 2)
	deps := deploymentsOn(ss)
	deps[0].RequestsPerMinute, deps[1].RequestsPerMinute = 10, 100
	o := policy()
	o.PaceFromHeaders = false // the fake's headers would say 10 000 for both
	c := newClient(t, client.WithDeployments("p", o, client.StrategyMostHeadroom, deps...))
	for range 5 {
		if _, err := c.Chat(context.Background(), hello()); err != nil {
			t.Fatal(err)
		}
	}
	// Both start full; after its first call d0 has 90 % left and d1 stays above it.
	if got := counts(ss); got[0] != 1 || got[1] != 4 {
		t.Fatalf("counts %v", got)
	}
	// The budget is the model's (its route's): pacing and pauses are per model.
	if h := c.Deployments("p")[0].Routes[0].Headroom; h.RequestsPerMinute != 10 || h.Requests >= 0.95 {
		t.Fatalf("headroom %+v", h)
	}
}

func TestDeployments_StickyKeyHoldsAndYields(t *testing.T) {
	ss := servers(t, 3)
	c := newClient(t, client.WithDeployments("p", policy(), client.StrategyPriority, deploymentsOn(ss)...))
	home := -1
	for range 10 {
		if _, err := c.Chat(context.Background(), hello(), client.WithStickyKey("user-42")); err != nil {
			t.Fatal(err)
		}
		got := counts(ss)
		for i, n := range got {
			if n > 0 && home == -1 {
				home = i
			}
			if n > 0 && i != home {
				t.Fatalf("the key moved: %v", got)
			}
		}
	}
	// Other keys spread over the deployments.
	for k := range 60 {
		if _, err := c.Chat(context.Background(), hello(), client.WithStickyKey(fmt.Sprint("user-", k))); err != nil {
			t.Fatal(err)
		}
	}
	for i, n := range counts(ss) {
		if n == 0 {
			t.Fatalf("no key landed on deployment %d: %v", i, counts(ss))
		}
	}
	// The key's deployment is out: the key yields to the next, and comes back after Reset.
	name := fmt.Sprintf("p/d%d", home)
	c.Circuits()[name].Isolate()
	before := counts(ss)[home]
	if _, err := c.Chat(context.Background(), hello(), client.WithStickyKey("user-42")); err != nil {
		t.Fatal(err)
	}
	if counts(ss)[home] != before {
		t.Fatal("the call went to the isolated deployment")
	}
	c.Circuits()[name].Reset()
	if _, err := c.Chat(context.Background(), hello(), client.WithStickyKey("user-42")); err != nil || counts(ss)[home] != before+1 {
		t.Fatalf("the key did not come back: %v", err)
	}
}

// A deployment whose key is refused is taken out and the call goes to the next deployment of
// the same provider; a 429 pauses only its own deployment.
func TestDeployments_FailuresStayWithTheirDeployment(t *testing.T) {
	bad := mocks.NewServer(mocks.WithAPIKey("another key"))
	defer bad.Close()
	good := mocks.NewServer(mocks.WithReply("good"))
	defer good.Close()
	c := newClient(t, client.WithDeployments("p", policy(), client.StrategyPriority, deploymentsOn([]*mocks.Server{bad, good})...))
	resp, err := c.Chat(context.Background(), hello())
	if err != nil || resp.Provider != "p" || resp.Message.Content != "good" {
		t.Fatalf("%v %v", resp, err)
	}
	circuits := c.Circuits()
	if info := circuits["p/d0"].CircuitInfo(); info.State != resilience.CircuitOpen || info.NextProbeIn <= 0 ||
		info.NextProbeIn > client.DefaultTakeOutBreak || circuits["p/d1"].CircuitState() != resilience.CircuitClosed {
		t.Fatalf("states d0 %+v d1 %v", info, circuits["p/d1"].CircuitState())
	}
	if _, err := c.Chat(context.Background(), hello()); err != nil || bad.Journal().Len() != 1 {
		t.Fatalf("%v; the refused deployment saw %d requests", err, bad.Journal().Len())
	}

	limited := mocks.NewServer(mocks.WithScript(mocks.RateLimited(0).WithRetryAfter(30e9)))
	defer limited.Close()
	other := mocks.NewServer()
	defer other.Close()
	c = newClient(t, client.WithDeployments("q", policy(), client.StrategyPriority, deploymentsOn([]*mocks.Server{limited, other})...))
	if _, err := c.Chat(context.Background(), hello()); err != nil {
		t.Fatal(err)
	}
	infos := c.Deployments("q")
	// The pause is the model's: its deployment reads it (nothing under it serves), its own
	// circuit does not.
	if len(infos[0].Routes) != 1 || infos[0].Routes[0].Circuit.CoolingFor <= 0 || infos[0].Own.CoolingFor != 0 ||
		infos[0].Circuit.CoolingFor <= 0 || infos[0].Circuit.Serving != 0 ||
		infos[1].Routes[0].Circuit.CoolingFor != 0 || infos[1].Circuit.Serving != 1 ||
		limited.Journal().Len() != 1 || other.Journal().Len() != 1 {
		t.Fatalf("deployments %+v; limited saw %d, other %d", infos, limited.Journal().Len(), other.Journal().Len())
	}
}

func TestDeployments_AreValidated(t *testing.T) {
	for _, opt := range []client.Option{
		client.WithDeployments("p", policy(), "fastest", client.Deployment{Name: "a"}),
		client.WithDeployments("p", policy(), client.StrategyPriority),
		client.WithDeployments("p", policy(), client.StrategyPriority, client.Deployment{Name: "a"}, client.Deployment{Name: "a"}),
		client.WithDeployments("p", policy(), client.StrategyPriority, client.Deployment{Name: "a", Weight: -1}),
	} {
		if _, err := client.New(opt); err == nil {
			t.Error("accepted")
		}
	}
	ss := servers(t, 2)
	if _, err := client.New(client.WithDeployments("p", policy(), client.StrategyLatency, deploymentsOn(ss)...),
		client.WithRandomSource(nil)); err == nil || !strings.Contains(err.Error(), "WithRandomSource") {
		t.Errorf("a nil random source: %v", err)
	}
}
