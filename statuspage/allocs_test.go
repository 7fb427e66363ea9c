package statuspage_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/resilience"
	"github.com/steadyllm/steady/statuspage"
)

// The cost of the page on the call path, measured as the goal states it: the allocations of a
// successful client.Chat against the fake server, over loopback, with no page, with a page
// mounted (listening to the events, nobody looking), and after the page is closed. Each is the
// least of three measures after a warm-up, so that a stray allocation of the runtime or the
// loopback server cannot make it flaky. Under the race detector, whose sync.Pool drops a share
// of its items at random, a difference of up to four allocations is noise; there the exact
// proof is TestRing_ObserveAllocations (the page's only code on a call's path allocates
// nothing for a call that succeeds).
func TestPage_AddsNoAllocationToACall(t *testing.T) {
	// The server keeps no journal: its growing would count as the calls' allocations.
	s := mocks.NewServer(mocks.WithReply("ok"), mocks.WithJournalLimits(mocks.JournalLimits{MaxEntries: -1}))
	defer s.Close()
	c := newClient(t, client.WithProvider("openai", policy(), openAIOn("openai", s)))
	none, mounted, closed := allocsWithAndWithoutPage(t, c)
	t.Logf("allocations of one Chat over loopback, server included: no page %v, page mounted %v, page closed %v",
		none, mounted, closed)
	// The mounted measure lies between two without a page listening: before the page and after
	// it is closed. A page that cost a call allocations would stand above both.
	if mounted > max(none, closed)+noise() {
		t.Fatalf("the page added allocations to a call: %v without it, %v mounted, %v closed", none, mounted, closed)
	}
}

// noise is the difference between two counts of allocations that says nothing.
func noise() float64 {
	if raceEnabled {
		return 4
	}
	return 0
}

// The same in memory, where nothing else allocates: exactly as many allocations with the page
// (but for the race detector's noise).
func TestPage_AddsNoAllocationToACallInMemory(t *testing.T) {
	s := mocks.NewServer() // its URL only: the canned transport answers
	defer s.Close()
	c := newClient(t, client.WithProvider("openai", policy(), openAIOn("openai", s)), client.WithBaseTransport(canned{}))
	none, mounted, closed := allocsWithAndWithoutPage(t, c)
	t.Logf("allocations of one Chat in memory: no page %v, page mounted %v, page closed %v", none, mounted, closed)
	if d := noise(); mounted < none-d || mounted > none+d || closed < none-d || closed > none+d {
		t.Fatalf("the page changed the allocations of a call: %v without it, %v mounted, %v closed", none, mounted, closed)
	}
}

func allocsWithAndWithoutPage(t *testing.T, c *client.Client) (none, mounted, closed float64) {
	t.Helper()
	call := func() {
		if err := ask(c); err != nil {
			t.Fatal(err)
		}
	}
	measure := func() float64 {
		least := testing.AllocsPerRun(100, call)
		for range 2 {
			least = min(least, testing.AllocsPerRun(100, call))
		}
		return least
	}
	for range 500 {
		call() // connections, routes, caches and latency windows made and filled once
	}
	none = measure()
	page, err := statuspage.New(c)
	if err != nil {
		t.Fatal(err)
	}
	mounted = measure()
	// The page did listen: a notable event reaches it.
	c.Pipeline("openai").Isolate()
	c.Pipeline("openai").Reset()
	if n := len(page.Snapshot().Events); n != 2 {
		t.Fatalf("the mounted page kept %d events of an isolation and a reset, want 2", n)
	}
	_ = page.Close()
	closed = measure()
	return none, mounted, closed
}

// canned answers every request with a chat completion, in memory.
type canned struct{}

const completion = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}`

func (canned) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader([]byte(completion))), ContentLength: int64(len(completion)), Request: r}, nil
}

// BenchmarkChat_StatusPage measures a successful Chat against the fake server over loopback
// with no page, with a page mounted that nobody looks at, and with a page open in a browser
// (a stream being served: its rendering runs on the server's goroutine and is counted in the
// allocations too, though not on the call's path); then the first two in memory, where the
// time the page adds to a call is not lost in the loopback's.
func BenchmarkChat_StatusPage(b *testing.B) {
	for _, mode := range []string{"none", "mounted", "viewed", "memory-none", "memory-mounted"} {
		b.Run(mode, func(b *testing.B) {
			s := mocks.NewServer(mocks.WithReply("ok"), mocks.WithJournalLimits(mocks.JournalLimits{MaxEntries: -1}))
			defer s.Close()
			opts := []client.Option{client.WithProvider("openai", policy(), openAIOn("openai", s))}
			page, memory := strings.CutPrefix(mode, "memory-")
			if memory {
				opts = append(opts, client.WithBaseTransport(canned{}))
			}
			c := newClient(b, opts...)
			if page != "none" {
				p := newPage(b, c)
				if page == "viewed" {
					openStream(b, serve(b, p).URL+"/debug/steady?format=sse").next(b)
				}
			}
			for range 50 {
				_ = ask(c)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := ask(c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The page on a bare pipeline, in memory, where no sync.Pool is on the path: exactly as many
// allocations with the page mounted as without, under the race detector too.
func TestPage_AddsNoAllocationToAPipelineCall(t *testing.T) {
	p, err := resilience.New(policy(), resilience.WithName("openai"))
	if err != nil {
		t.Fatal(err)
	}
	rt := p.Wrap(canned{})
	call := func() {
		req, _ := http.NewRequest(http.MethodPost, "http://llm.invalid/v1/chat/completions", nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	for range 200 {
		call()
	}
	none := testing.AllocsPerRun(200, call)
	page := newPage(t, nil, statuspage.WithPipeline("openai", p))
	mounted := testing.AllocsPerRun(200, call)
	_ = page.Close()
	closed := testing.AllocsPerRun(200, call)
	t.Logf("allocations of one pipeline call in memory: no page %v, page mounted %v, page closed %v", none, mounted, closed)
	if mounted != none || closed != none {
		t.Fatalf("the page changed the allocations of a call: %v without it, %v mounted, %v closed", none, mounted, closed)
	}
}
