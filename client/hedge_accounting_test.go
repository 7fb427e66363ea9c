package client_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
)

// serverClock gives a fake server the client's manual clock and tells when the server arms a
// timer (a reply's delay), so that a test advances the clock only once it is armed.
func serverClock(clk *armClock) (mocks.Option, chan time.Duration) {
	armed := make(chan time.Duration, 16)
	return mocks.WithAfterFunc(func(d time.Duration, f func()) func() bool {
		t := clk.ManualClock.AfterFunc(d, f)
		armed <- d
		return t.Stop
	}), armed
}

// A primary still waiting when its hedge goes out, that then answers before the hedge: soon
// after the hedge's send its time counts in full on its route; later (a straggler whose hedge
// straggled too), it counts as cut off — on a route with fewer than 10 samples, at twice the
// delay — so that it cannot lift the learnt delay (resilience.LatencySample.Raced).
func TestHedge_ARacedTryCountsInFullOnlySoonAfterItsHedge(t *testing.T) {
	for _, tc := range []struct {
		primary, want time.Duration
	}{{30 * time.Millisecond, 30 * time.Millisecond}, {100 * time.Millisecond, 40 * time.Millisecond}} {
		clk := newArmClock(20 * time.Millisecond)
		after, armed := serverClock(clk)
		primary := mocks.NewServer(after, mocks.WithScript(mocks.Reply("primary").WithDelay(tc.primary).Always()))
		secondary := mocks.NewServer(after, mocks.WithScript(mocks.Reply("secondary").WithDelay(time.Minute).Always()))
		c := newClient(t, client.WithClock(clk), openAIProvider("primary", primary, hedgePolicy(20*time.Millisecond)),
			openAIProvider("secondary", secondary, policy()), client.WithFallback("primary", "secondary"))
		done := make(chan *providers.ChatResponse, 1)
		go func() {
			resp, err := c.Chat(context.Background(), hello())
			if err != nil {
				t.Error(err)
			}
			done <- resp
		}()
		<-armed // the primary's reply
		<-clk.armed
		clk.Advance(20 * time.Millisecond) // the hedge goes out
		<-armed                            // the secondary's reply
		clk.Advance(tc.primary - 20*time.Millisecond)
		resp := <-done
		if resp == nil || resp.Provider != "primary" || resp.Hedges != 1 || resp.HedgeWon {
			t.Fatalf("primary after %v: %+v", tc.primary, resp)
		}
		got := c.Pipeline("primary").Route("gpt-4o-mini").RecentLatencies(nil)
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("primary after %v, raced at 20 ms: its route keeps %v, want %v", tc.primary, got, tc.want)
		}
		waitFor(t, "the hedge's request to end", func() bool { return secondary.Journal().InFlight() == 0 })
		primary.Close()
		secondary.Close()
	}
}

// holdTransport takes a request and sends nothing, until the request's context ends: a hedge
// cancelled there never reached the wire.
type holdTransport struct{ entered chan struct{} }

func (h holdTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	h.entered <- struct{}{}
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// Accounting counts the hedges that reached the wire apart from those cancelled before their
// request went out: a hedge to a server that received it counts in Hedges, one cancelled
// while its request had not yet gone out in HedgesUnsent, on the call and on its deployment.
func TestHedge_HedgesCancelledUnsentAreCountedApart(t *testing.T) {
	clk := newArmClock(20 * time.Millisecond)
	after, armed := serverClock(clk)
	primary := mocks.NewServer(after, mocks.WithScript(mocks.SlowFirstToken(30*time.Millisecond).Always()))
	defer primary.Close()
	secondary := mocks.NewServer(after, mocks.WithScript(mocks.Reply("secondary").WithDelay(time.Minute).Always()))
	defer secondary.Close()
	hold := holdTransport{entered: make(chan struct{}, 1)}
	unsent := client.WithProvider("unsent", policy(), func(*http.Client) (providers.Provider, error) {
		return openai.New(openai.Config{Name: "unsent", BaseURL: "http://127.0.0.1:1/v1", APIKey: sentinelKey,
			HTTPClient: &http.Client{Transport: hold}, Model: "gpt-4o-mini"})
	})
	for _, tc := range []struct {
		to            string
		opt           client.Option
		sent, notSent int
	}{{"secondary", openAIProvider("secondary", secondary, policy()), 1, 0}, {"unsent", unsent, 0, 1}} {
		c := newClient(t, client.WithClock(clk), openAIProvider("primary", primary, hedgePolicy(20*time.Millisecond)),
			tc.opt, client.WithFallback("primary", tc.to))
		type result struct {
			st  *client.Stream
			err error
		}
		done := make(chan result, 1)
		go func() {
			st, err := c.ChatStream(context.Background(), hello())
			done <- result{st, err}
		}()
		<-armed // the primary's first token
		<-clk.armed
		clk.Advance(20 * time.Millisecond) // the hedge goes out
		if tc.to == "unsent" {
			<-hold.entered
		} else {
			<-armed // the secondary's reply
		}
		clk.Advance(10 * time.Millisecond)
		r := <-done
		if r.err != nil {
			t.Fatal(r.err)
		}
		readAll(r.st)
		_ = r.st.Close()
		if a := r.st.Accounting(); a.Hedges != tc.sent || a.HedgesUnsent != tc.notSent || a.HedgeWon {
			t.Errorf("hedge to %s: %+v, want %d sent, %d unsent", tc.to, a, tc.sent, tc.notSent)
		}
		d := c.Deployments(tc.to)[0]
		if d.Hedges != int64(tc.sent) || d.HedgesUnsent != int64(tc.notSent) {
			t.Errorf("deployment %s: hedges %d, unsent %d", tc.to, d.Hedges, d.HedgesUnsent)
		}
	}
	if n := secondary.Journal().Len(); n != 1 {
		t.Errorf("the secondary received %d hedges, want 1", n)
	}
}
