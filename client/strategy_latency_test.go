package client_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/internal/testkit/backend"
	"github.com/steadyllm/steady/mocks"
)

// shift is the scenario of the latency router's goals: three deployments whose streams' first
// token comes after base, each one's time drawn within ±jitter of it; at 0 the first one's
// triples for slow, then it recovers, and the run goes on for after. Every stickyEvery-th call
// is a turn of one of conversations (sticky keys), the others carry no key. Times are from the
// slowdown; the warm-up before it is warm.
type shift struct {
	base, warm, slow, after time.Duration
	jitter                  float64
	conversations           int
	stickyEvery             int
}

// The goals' scenario: a first token of 200 ms ± 30 %, tripled for 30 s after 10 s of warm-up,
// 30 s to come back; one call in five a turn of one of twelve conversations.
var goalShift = shift{base: 200 * time.Millisecond, warm: 10 * time.Second, slow: 30 * time.Second,
	after: 30 * time.Second, jitter: 0.3, conversations: 12, stickyEvery: 5}

// jittered returns d moved by up to ±sc.jitter of itself, as r draws.
func (sc shift) jittered(d time.Duration, r *rand.Rand) time.Duration {
	return time.Duration(float64(d) * (1 + sc.jitter*(2*r.Float64()-1)))
}

// key returns the sticky key of the i-th call, "" for none.
func (sc shift) key(i int) string {
	if i%sc.stickyEvery != 0 {
		return ""
	}
	return fmt.Sprint("conversation-", (i/sc.stickyEvery)%sc.conversations)
}

// served is one call of a run: when it began (from the slowdown), the deployment that served
// it and its sticky key.
type served struct {
	at       time.Duration
	dep, key string
}

// shiftGoals is what a run achieved.
type shiftGoals struct {
	// moved is the time from the slowdown to the end of the first window (2 s) in which the slow
	// deployment took at most 10 % of the calls without a key: 90 % of the traffic moved.
	// -1: never.
	moved time.Duration
	// slowShare is its share of those calls from then until it recovered.
	slowShare float64
	// back is the time from the recovery to the end of the first window in which it took at
	// least 80 % of its fair share (a third) again; -1: never.
	back time.Duration
	// reversals counts, from then to the end of the run, each time its windowed share went the
	// wrong way: below half its fair share (low) after being back, or back after low. A clean
	// recovery has none.
	reversals int
	// stickyStay is the share of the conversations' turns served by their own deployment
	// (where a conversation's turns went before the slowdown) while every deployment was
	// healthy: before the slowdown, and from 10 s after the recovery.
	stickyStay float64
	// stickyAway is the share of the turns of the conversations at home on the slow deployment
	// that went elsewhere while it was slow (from 2 s after the slowdown).
	stickyAway float64
}

func (g shiftGoals) String() string {
	return fmt.Sprintf("90 %% moved after %v (then %.1f %% on the slow one); back to its share %v after recovery, %d reversals; "+
		"sticky: %.1f %% of turns at home while healthy, %.1f %% away from the slow one", g.moved, 100*g.slowShare, g.back,
		g.reversals, 100*g.stickyStay, 100*g.stickyAway)
}

// goals computes what the calls of a run achieved, slow naming the deployment that slowed down,
// among n.
func (sc shift) goals(calls []served, slow string, n int) shiftGoals {
	const window = 2 * time.Second
	type count struct{ all, slow int }
	windows := map[int]*count{}
	home := map[string]map[string]int{}
	for _, c := range calls {
		if c.key != "" {
			if c.at < 0 {
				if home[c.key] == nil {
					home[c.key] = map[string]int{}
				}
				home[c.key][c.dep]++
			}
			continue
		}
		if c.at < 0 {
			continue
		}
		k := int(c.at / window)
		if windows[k] == nil {
			windows[k] = &count{}
		}
		windows[k].all++
		if c.dep == slow {
			windows[k].slow++
		}
	}
	share := func(k int) float64 {
		if w := windows[k]; w != nil && w.all > 0 {
			return float64(w.slow) / float64(w.all)
		}
		return math.NaN()
	}
	g := shiftGoals{moved: -1, back: -1}
	fair := 1 / float64(n)
	end := int((sc.slow + sc.after) / window)
	recovery := int(sc.slow / window)
	movedAt, slowCalls, allCalls := -1, 0, 0
	for k := 0; k < recovery; k++ {
		if movedAt < 0 && share(k) <= 0.1 {
			movedAt, g.moved = k, time.Duration(k+1)*window
		}
		if movedAt >= 0 && windows[k] != nil {
			slowCalls += windows[k].slow
			allCalls += windows[k].all
		}
	}
	if allCalls > 0 {
		g.slowShare = float64(slowCalls) / float64(allCalls)
	}
	low := true
	for k := recovery; k < end; k++ {
		s := share(k)
		switch {
		case low && s >= 0.8*fair:
			low = false
			if g.back < 0 {
				g.back = time.Duration(k+1)*window - sc.slow
			} else {
				g.reversals++
			}
		case !low && s < fair/2:
			low = true
			g.reversals++
		}
	}
	// Each conversation's own deployment: where most of its turns went before the slowdown.
	own := map[string]string{}
	for key, deps := range home {
		for d, k := range deps {
			if k > deps[own[key]] {
				own[key] = d
			}
		}
	}
	var stay, healthy, away, homedSlow int
	for _, c := range calls {
		switch {
		case c.key == "":
		case c.at < 0 || c.at >= sc.slow+10*time.Second:
			healthy++
			if c.dep == own[c.key] {
				stay++
			}
		case own[c.key] == slow && c.at >= window && c.at < sc.slow:
			homedSlow++
			if c.dep != slow {
				away++
			}
		}
	}
	if healthy > 0 {
		g.stickyStay = float64(stay) / float64(healthy)
	}
	if homedSlow > 0 {
		g.stickyAway = float64(away) / float64(homedSlow)
	}
	return g
}

// met reports how g falls short of the goals: 90 % of the traffic moved within 10 s, back to
// its share within 30 s of the recovery with at most 2 reversals, 95 % of a conversation's
// turns on its one healthy deployment.
func (g shiftGoals) met() error {
	switch {
	case g.moved < 0 || g.moved > 10*time.Second:
		return fmt.Errorf("the traffic did not move within 10 s: %v", g)
	case g.back < 0 || g.back > 30*time.Second || g.reversals > 2:
		return fmt.Errorf("the recovered deployment did not win its share back within 30 s and 2 reversals: %v", g)
	case g.stickyStay < 0.95:
		return fmt.Errorf("conversations did not stay home: %v", g)
	}
	return nil
}

// The latency router's goals on a manual clock, with the client's randomness and the
// servers' jitter seeded: calls come 25 a second (on a time line of their own: each moves the
// clock by its first token only, which is what the client measures), streams over loopback to
// three fake servers, one of which answers three times slower for 30 s.
func TestStrategyLatency_FollowsASlowDeploymentAndItsRecovery(t *testing.T) {
	sc := goalShift
	const rate = 25
	ss := servers(t, 3)
	slowHost := hostOf(t, ss[0])
	clock := backend.NewManualClock()
	var now atomic.Int64 // the time line of the calls: the current call's, from the slowdown
	var mu sync.Mutex
	jitter := rand.New(rand.NewPCG(24, 2))
	latency := func(r *http.Request) time.Duration {
		mu.Lock()
		defer mu.Unlock()
		if at := time.Duration(now.Load()); r.URL.Host == slowHost && at >= 0 && at < sc.slow {
			return sc.jittered(3*sc.base, jitter)
		}
		return sc.jittered(sc.base, jitter)
	}
	c := newClient(t, client.WithClock(clock), client.WithRandomSource(rand.NewPCG(24, 3)),
		client.WithBaseTransport(clockedTransport{clock, latency}),
		client.WithDeployments("p", policy(), client.StrategyLatency, deploymentsOn(ss)...))
	var calls []served
	for i := 0; ; i++ {
		at := -sc.warm + time.Duration(i)*time.Second/rate
		if at >= sc.slow+sc.after {
			break
		}
		now.Store(int64(at))
		dep, err := streamOnce(c, sc.key(i))
		if err != nil {
			t.Fatalf("call %d at %v: %v", i, at, err)
		}
		calls = append(calls, served{at: at, dep: dep, key: sc.key(i)})
	}
	g := sc.goals(calls, "p/d0", 3)
	t.Log(g)
	if err := g.met(); err != nil {
		t.Fatal(err)
	}
	if g.stickyAway < 0.9 {
		t.Fatalf("the slow deployment's conversations stayed on it: %v", g)
	}
}

// streamOnce streams an answer from c, with the sticky key key unless "", reads it whole and
// returns the deployment that served it.
func streamOnce(c *client.Client, key string) (string, error) {
	var opts []client.CallOption
	if key != "" {
		opts = append(opts, client.WithStickyKey(key))
	}
	st, err := c.ChatStream(context.Background(), hello(), opts...)
	if err != nil {
		return "", err
	}
	defer st.Close()
	if r := readAll(st); r.err != nil {
		return "", r.err
	}
	return st.Deployment(), nil
}

// hostOf returns the host:port of fake server s.
func hostOf(t testing.TB, s *mocks.Server) string {
	u, err := url.Parse(s.OpenAIBaseURL())
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// BenchmarkStrategyLatency_Goals runs the goals' scenario for real against three fake servers
// whose first tokens really come late (scripts of mocks.SlowFirstToken, jittered; the slow
// third through an outage), on a clock running ten times faster than the wall clock for the
// client and the servers alike, with twelve callers in a closed loop — so a sample reaches the
// router only when its call has its first token, as in production. It reports the goals as
// metrics (see shiftGoals): go test ./client -run '^$' -bench StrategyLatency_Goals -benchtime 1x.
func BenchmarkStrategyLatency_Goals(b *testing.B) {
	sc := goalShift
	const speed, callers = 10, 12
	for range b.N {
		clock := backend.NewScaledClock(speed)
		t0 := clock.Now().Add(sc.warm)
		ss := make([]*mocks.Server, 3)
		for i := range ss {
			// More jittered steps than calls, then the base for ever.
			r := rand.New(rand.NewPCG(24, uint64(i)))
			script := make([]mocks.Step, 10_000)
			for k := range script {
				script[k] = mocks.SlowFirstToken(sc.jittered(sc.base, r) / speed)
			}
			script = append(script, mocks.SlowFirstToken(sc.base/speed).Always())
			opts := []mocks.Option{mocks.WithClock(clock.Now), mocks.WithScript(script...)}
			if i == 0 {
				opts = append(opts, mocks.WithOutage(mocks.Outage{At: t0, Duration: sc.slow, Step: mocks.SlowFirstToken(3 * sc.base / speed)}))
			}
			ss[i] = mocks.NewServer(opts...)
		}
		c, err := client.New(client.WithClock(clock), client.WithDeployments("p", policy(), client.StrategyLatency, deploymentsOn(ss)...))
		if err != nil {
			b.Fatal(err)
		}
		var (
			mu    sync.Mutex
			calls []served
			next  atomic.Int64
			wg    sync.WaitGroup
		)
		for range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					at := clock.Now().Sub(t0)
					if at >= sc.slow+sc.after {
						return
					}
					key := sc.key(int(next.Add(1)))
					dep, err := streamOnce(c, key)
					if err != nil {
						b.Error(err)
						return
					}
					mu.Lock()
					calls = append(calls, served{at: at, dep: dep, key: key})
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		_ = c.Close()
		for _, s := range ss {
			s.Close()
		}
		g := sc.goals(calls, "p/d0", 3)
		b.Log(g)
		b.ReportMetric(g.moved.Seconds(), "moved-s")
		b.ReportMetric(100*g.slowShare, "slow-%")
		b.ReportMetric(g.back.Seconds(), "back-s")
		b.ReportMetric(float64(g.reversals), "reversals")
		b.ReportMetric(100*g.stickyStay, "sticky-stay-%")
		b.ReportMetric(100*g.stickyAway, "sticky-away-%")
		b.ReportMetric(float64(len(calls))/(sc.warm+sc.slow+sc.after).Seconds(), "calls/s")
	}
}
