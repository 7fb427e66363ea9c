package statuspage_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/health"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
	"github.com/steadyllm/steady/statuspage"
)

// twoProviders is a client whose first provider has a deployment that fails (east) and one
// that serves (west), with a second provider behind them in the chain.
func twoProviders(t *testing.T) (*client.Client, *mocks.Server) {
	t.Helper()
	bad := mocks.NewServer(mocks.WithScript(mocks.Status(http.StatusServiceUnavailable).Always()))
	t.Cleanup(bad.Close)
	good := mocks.NewServer(mocks.WithReply(sentinelAnswer))
	t.Cleanup(good.Close)
	c := newClient(t,
		client.WithDeployments("openai", policy(), client.StrategyPriority,
			client.Deployment{Name: "east", Factory: openAIOn("openai", bad)},
			client.Deployment{Name: "west", Factory: openAIOn("openai", good)}),
		client.WithProvider("anthropic", policy(), openAIOn("anthropic", good)),
		client.WithFallback("openai", "anthropic"))
	return c, bad
}

// The page shows every provider, deployment and route with its circuit, the failovers, a
// sparkline of the latencies and the events; the JSON says the same.
func TestPage_ShowsProvidersDeploymentsRoutesAndEvents(t *testing.T) {
	c, _ := twoProviders(t)
	page := newPage(t, c)
	for range 4 {
		if err := ask(c); err != nil {
			t.Fatal(err)
		}
	}
	srv := serve(t, page)
	code, h, body := get(t, srv.URL+"/debug/steady")
	t.Logf("the page weighs %d bytes", len(body))
	if code != http.StatusOK || h.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("%s, %s", fmtStatus(code), h.Get("Content-Type"))
	}
	for _, want := range []string{
		`data-provider="openai"`, `data-provider="anthropic"`, "fallback chain: <b>openai</b> → <b>anthropic</b>",
		`data-name="openai/east:gpt-4o-mini" data-status="fail" data-circuit="open"`,
		`data-name="openai/west:gpt-4o-mini" data-status="pass" data-circuit="closed"`,
		`data-name="anthropic"`, "1 of 2 serving", "failovers 2", "<polyline points=", "data-until=",
		"breaker_state_changed", "closed → open for ", "attempt 1/1: status 503", "shared state: <span class=\"mute\">none",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(body)
	}

	_, h, body = get(t, srv.URL+"/debug/steady?format=json")
	if h.Get("Content-Type") != "application/json" {
		t.Fatalf("JSON served as %s", h.Get("Content-Type"))
	}
	var s statuspage.Snapshot
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatal(err)
	}
	if s.Status != health.StatusWarn || len(s.Providers) != 2 || s.Providers[0].Name != "openai" || s.Providers[0].Failovers != 2 {
		t.Fatalf("snapshot %+v", s)
	}
	east, west := s.Providers[0].Deployments[0], s.Providers[0].Deployments[1]
	if east.Name != "openai/east" || len(east.Routes) != 1 || east.Routes[0].Circuit != "open" || east.Routes[0].NextProbeMs <= 0 ||
		east.Failovers != 2 || west.Routes[0].Latency.Samples != 4 || len(west.Routes[0].Latency.RecentMs) != 4 {
		t.Fatalf("east %+v, west %+v", east, west)
	}
	if len(s.Events) == 0 || s.Events[0].Type != "breaker_state_changed" || s.Events[0].Deployment != "openai/east" ||
		s.Events[0].Model != "gpt-4o-mini" || s.EventsSeen != uint64(len(s.Events)) {
		t.Fatalf("events %+v (seen %d)", s.Events, s.EventsSeen)
	}
	for i := 1; i < len(s.Events); i++ {
		if s.Events[i].Time.After(s.Events[i-1].Time) {
			t.Fatalf("events not newest first: %+v", s.Events)
		}
	}
}

var (
	scriptText = regexp.MustCompile(`(?s)<script>(.*?)</script>`)
	styleText  = regexp.MustCompile(`(?s)<style>(.*?)</style>`)
)

func cspHash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// Every answer carries a Content-Security-Policy that allows exactly the page's inline script
// and style, by hash, and nothing from elsewhere; the page refers to no other resource.
func TestPage_StrictContentSecurityPolicyAndNoExternalAssets(t *testing.T) {
	c, _ := twoProviders(t)
	srv := serve(t, newPage(t, c))
	_ = ask(c)
	_, h, body := get(t, srv.URL+"/debug/steady")
	csp := h.Get("Content-Security-Policy")
	scripts, styles := scriptText.FindAllStringSubmatch(body, -1), styleText.FindAllStringSubmatch(body, -1)
	if len(scripts) != 1 || len(styles) != 1 {
		t.Fatalf("%d scripts and %d styles, want one of each", len(scripts), len(styles))
	}
	want := "default-src 'none'; script-src " + cspHash(scripts[0][1]) + "; style-src " + cspHash(styles[0][1]) +
		"; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	if csp != want {
		t.Fatalf("Content-Security-Policy\n got %s\nwant %s", csp, want)
	}
	for _, attr := range []string{" src=", " href=", "http://", "https://", "@import", "url(", " style=", " on"} {
		if strings.Contains(strings.ToLower(body), attr) {
			t.Errorf("the page holds %q: a reference to something outside it, or inline markup the policy forbids", attr)
		}
	}
	for _, format := range []string{"", "?format=json"} {
		_, h, _ := get(t, srv.URL+"/debug/steady"+format)
		for k, v := range map[string]string{"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff",
			"X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer", "Content-Security-Policy": want} {
			if h.Get(k) != v {
				t.Errorf("%q: %s is %q, want %q", format, k, h.Get(k), v)
			}
		}
	}
	s := openStream(t, srv.URL+"/debug/steady?format=sse")
	if s.resp.Header.Get("Content-Type") != "text/event-stream" || s.resp.Header.Get("Content-Security-Policy") != want ||
		s.resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("stream headers %v", s.resp.Header)
	}
}

// hostile is a base transport whose failures name a URL with credentials, the key in a query
// and a header, and a secret of the application's own, as a careless transport might.
type hostile struct {
	fail atomic.Bool
	next http.RoundTripper
}

func (h *hostile) RoundTrip(r *http.Request) (*http.Response, error) {
	if h.fail.Load() {
		if r.Body != nil {
			_ = r.Body.Close()
		}
		return nil, errors.New(`Post "http://admin:SECRETPASS@127.0.0.1:1/v1/chat/completions?api-key=` + sentinelKey +
			`": Authorization: Bearer ` + sentinelKey + ` refused; app-secret hunter2-custom-secret`)
	}
	return h.next.RoundTrip(r)
}

// The page never shows a key, a URL's credentials or query, a prompt or an answer — in the
// HTML, the JSON or the stream — while it does show the (redacted) errors.
func TestPage_NeverShowsKeysCredentialsPromptsOrAnswers(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply(sentinelAnswer))
	defer s.Close()
	tr := &hostile{next: &http.Transport{}}
	t.Cleanup(tr.next.(*http.Transport).CloseIdleConnections)
	c := newClient(t, client.WithProvider("openai", policy(), openAIOn("openai", s)), client.WithBaseTransport(tr))
	page := newPage(t, c, statuspage.WithSecrets("hunter2-custom-secret"))
	if err := ask(c); err != nil {
		t.Fatal(err)
	}
	tr.fail.Store(true)
	if err := ask(c); err == nil {
		t.Fatal("the hostile transport's failure served")
	}
	// A caller may name any model: the page shows it as a route, scrubbed.
	_, _ = c.Chat(context.Background(), &providers.ChatRequest{Model: sentinelKey,
		Messages: []providers.Message{{Role: providers.RoleUser, Content: sentinelPrompt}}})
	srv := serve(t, page)
	secrets := []string{"SECRETPASS", "admin:", "api-key=", "hunter2-custom-secret", "Bearer sk"}
	_, _, html := get(t, srv.URL+"/debug/steady")
	mustNotShow(t, "the page", html, secrets...)
	_, _, js := get(t, srv.URL+"/debug/steady?format=json")
	mustNotShow(t, "the JSON", js, secrets...)
	m := openStream(t, srv.URL+"/debug/steady?format=sse").next(t)
	mustNotShow(t, "the stream", m.HTML, secrets...)
	// The errors are shown, redacted: the test would see a leak.
	for _, want := range []string{"http://127.0.0.1:1", "[REDACTED]", "attempt_finished"} {
		if !strings.Contains(js, want) {
			t.Errorf("the JSON lacks %q: the error is not shown at all\n%s", want, js)
		}
	}
}

// The stream sends the state at once, then again as soon as it changes, and ends when the
// page is closed.
func TestPage_StreamSendsEachChangeAndEndsOnClose(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	c := newClient(t, client.WithProvider("openai", policy(), openAIOn("openai", s)))
	page := newPage(t, c, statuspage.WithRefresh(statuspage.MinRefresh))
	srv := serve(t, page)
	st := openStream(t, srv.URL+"/debug/steady?format=sse")
	first := st.next(t)
	if !strings.Contains(first.HTML, `data-name="openai" data-status="pass" data-circuit="closed"`) ||
		time.Since(time.UnixMilli(first.Now)).Abs() > time.Minute {
		t.Fatalf("first message: now %d, %s", first.Now, first.HTML)
	}
	c.Pipeline("openai").Isolate()
	for m := st.next(t); !strings.Contains(m.HTML, `data-circuit="isolated"`); m = st.next(t) {
	}
	c.Pipeline("openai").Reset()
	for m := st.next(t); !strings.Contains(m.HTML, `data-circuit="closed"`); m = st.next(t) {
	}
	_ = page.Close()
	ended := make(chan error, 1)
	go func() {
		_, err := st.r.ReadString('\n')
		for err == nil {
			_, err = st.r.ReadString('\n')
		}
		ended <- err
	}()
	select {
	case <-ended:
	case <-time.After(20 * time.Second):
		t.Fatal("the stream stayed open after Close")
	}
	if code, _, _ := get(t, srv.URL+"/debug/steady"); code != http.StatusServiceUnavailable {
		t.Fatalf("a closed page answered %s", fmtStatus(code))
	}
}

// Only GET and HEAD, three formats, a bounded number of streams.
func TestPage_MethodsFormatsAndViewers(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	c := newClient(t, client.WithProvider("openai", policy(), openAIOn("openai", s)))
	srv := serve(t, newPage(t, c, statuspage.WithMaxViewers(1)))
	resp, err := http.Post(srv.URL+"/debug/steady", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Fatalf("POST: %s, Allow %q", resp.Status, resp.Header.Get("Allow"))
	}
	if code, _, _ := get(t, srv.URL+"/debug/steady?format=xml"); code != http.StatusBadRequest {
		t.Fatalf("an unknown format: %s", fmtStatus(code))
	}
	resp, err = http.Head(srv.URL + "/debug/steady?format=json")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.ContentLength <= 0 {
		t.Fatalf("HEAD: %s, length %d", resp.Status, resp.ContentLength)
	}
	first := openStream(t, srv.URL+"/debug/steady?format=sse")
	first.next(t)
	code, h, _ := get(t, srv.URL+"/debug/steady?format=sse")
	if code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" {
		t.Fatalf("a stream beyond WithMaxViewers: %s, Retry-After %q", fmtStatus(code), h.Get("Retry-After"))
	}
	first.close()
	waitFor(t, "the first stream's place to be free", func() bool {
		resp, err := http.Head(srv.URL + "/debug/steady?format=sse")
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// Options out of range are refused, each naming the option, the value and the range.
func TestNew_RefusesBadOptions(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	c := newClient(t, client.WithProvider("openai", policy(), openAIOn("openai", s)))
	p, _ := resilience.New(policy())
	for _, tc := range []struct {
		c    *client.Client
		opt  statuspage.Option
		want string
	}{
		{c, statuspage.WithEvents(-1), "WithEvents(-1): must be 0 to 1000"},
		{c, statuspage.WithEvents(1001), "WithEvents(1001): must be 0 to 1000"},
		{c, statuspage.WithRefresh(time.Millisecond), "WithRefresh(1ms): must be 50ms to 10s"},
		{c, statuspage.WithMaxViewers(0), "WithMaxViewers(0): must be 1 to 1000"},
		{c, statuspage.WithPipeline("", p), `WithPipeline(""`},
		{c, statuspage.WithPipeline("x", nil), `WithPipeline("x"`},
		{nil, nil, "nil client and no WithPipeline"},
		{c, statuspage.WithPipeline("openai", p), `WithPipeline("openai"): the client has a provider or deployment of that name`},
	} {
		page, err := statuspage.New(tc.c, tc.opt)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New with %s: %v", tc.want, err)
		}
		if page != nil {
			t.Errorf("New with %s returned a page", tc.want)
		}
	}
	if _, err := statuspage.New(nil, statuspage.WithPipeline("x", p), statuspage.WithPipeline("x", p)); err == nil ||
		!strings.Contains(err.Error(), "used twice") {
		t.Errorf("a name used twice: %v", err)
	}
}

// A bare pipeline shows as a provider of one deployment, with its events.
func TestPage_ShowsABarePipeline(t *testing.T) {
	p, err := resilience.New(policy(), resilience.WithName("upstream"))
	if err != nil {
		t.Fatal(err)
	}
	page := newPage(t, nil, statuspage.WithPipeline("upstream", p))
	p.Isolate()
	s := page.Snapshot()
	if s.Status != health.StatusFail || len(s.Providers) != 1 || !s.Providers[0].Pipeline || s.Providers[0].Deployments[0].Circuit != "isolated" ||
		len(s.Events) != 1 || s.Events[0].Detail != "closed → isolated" {
		t.Fatalf("%+v", s)
	}
	_ = page.Close()
	p.Reset()
	if n := len(page.Snapshot().Events); n != 1 {
		t.Fatalf("a closed page recorded %d events, want the one before Close", n)
	}
}

// WithEvents(0) keeps no event and never listens.
func TestPage_WithoutEvents(t *testing.T) {
	p, _ := resilience.New(policy())
	page := newPage(t, nil, statuspage.WithPipeline("upstream", p), statuspage.WithEvents(0))
	p.Isolate()
	if s := page.Snapshot(); len(s.Events) != 0 || s.EventsSeen != 0 {
		t.Fatalf("%+v", s)
	}
}

// The page weighs at most 50 KB with three providers of two deployments serving two models
// each, and a full buffer of long, redacted events.
func TestPage_WeighsUnder50KB(t *testing.T) {
	s := mocks.NewServer(mocks.WithReply("ok"))
	defer s.Close()
	tr := &hostile{next: &http.Transport{}}
	t.Cleanup(tr.next.(*http.Transport).CloseIdleConnections)
	var opts []client.Option
	o := policy()
	o.CircuitBreakerThreshold = 1000 // every failure makes events
	for _, name := range []string{"openai", "azure", "anthropic"} {
		opts = append(opts, client.WithDeployments(name, o, client.StrategyRoundRobin,
			client.Deployment{Name: "eastus-primary", Factory: openAIOn(name, s)},
			client.Deployment{Name: "westeurope-secondary", Factory: openAIOn(name, s)}))
	}
	opts = append(opts, client.WithFallback("openai", "azure", "anthropic"), client.WithBaseTransport(tr))
	c := newClient(t, opts...)
	page := newPage(t, c)
	for _, model := range []string{"gpt-4o-mini", "gpt-4o-2024-08-06"} {
		for i := range 40 {
			for _, p := range c.Providers() {
				_, _ = c.Chat(context.Background(), &providers.ChatRequest{Model: model,
					Messages: []providers.Message{{Role: providers.RoleUser, Content: "hi"}}}, client.WithProviders(p))
			}
			if i == 30 {
				tr.fail.Store(true) // the last calls fail, with long errors, until the buffer is full
			}
		}
		tr.fail.Store(false)
	}
	srv := serve(t, page)
	_, _, body := get(t, srv.URL+"/debug/steady")
	snap := page.Snapshot()
	routes := 0
	for _, p := range snap.Providers {
		for _, d := range p.Deployments {
			routes += len(d.Routes)
		}
	}
	if len(snap.Events) != statuspage.DefaultEvents || routes != 12 {
		t.Fatalf("%d events and %d routes: not the page this test weighs", len(snap.Events), routes)
	}
	t.Logf("the page weighs %d bytes (%d routes, %d events)", len(body), routes, len(snap.Events))
	if len(body) > 50*1024 {
		t.Fatalf("the page weighs %d bytes, more than 50 KB", len(body))
	}
}

// store is a shared-state store whose trouble the test sets.
type store struct{ err atomic.Pointer[error] }

func (s *store) Err() error {
	if p := s.err.Load(); p != nil {
		return *p
	}
	return nil
}
func (s *store) Advise(string, resilience.Advice) {}
func (s *store) Advice(string) resilience.Advice  { return resilience.Advice{} }

// The shared-state store shows up or down, with why, its credentials removed.
func TestPage_ShowsTheSharedStateStore(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	st := &store{}
	c := newClient(t, client.WithProvider("openai", policy(), openAIOn("openai", s)), client.WithSharedState(st))
	page := newPage(t, c)
	srv := serve(t, page)
	if snap := page.Snapshot(); snap.SharedState == nil || !snap.SharedState.Up || snap.Status != health.StatusPass {
		t.Fatalf("store up: %+v", snap)
	}
	_, _, body := get(t, srv.URL+"/debug/steady")
	if !strings.Contains(body, `shared state: <b class="pass">up</b>`) {
		t.Fatalf("store up, the page says:\n%s", body)
	}
	down := errors.New(`dial redis://default:hunter2pass@10.0.0.5:6379/0?password=xyz42secret: connection refused`)
	st.err.Store(&down)
	snap := page.Snapshot()
	if snap.SharedState.Up || snap.Status != health.StatusWarn ||
		snap.SharedState.Error != "dial redis://10.0.0.5:6379 connection refused" {
		t.Fatalf("store down: %+v, status %s", snap.SharedState, snap.Status)
	}
	_, _, body = get(t, srv.URL+"/debug/steady")
	if !strings.Contains(body, `shared state: <b class="warn">down</b>`) {
		t.Fatalf("store down, the page says:\n%s", body)
	}
	mustNotShow(t, "the page", body, "hunter2pass", "xyz42secret", "default:")
}

// A stream outlives the server's WriteTimeout, which would otherwise cut it: the page sets
// its own write deadline for each message.
func TestPage_StreamOutlivesTheServersWriteTimeout(t *testing.T) {
	s := mocks.NewServer()
	defer s.Close()
	c := newClient(t, client.WithProvider("openai", policy(), openAIOn("openai", s)))
	page := newPage(t, c, statuspage.WithRefresh(statuspage.MinRefresh))
	srv := httptest.NewUnstartedServer(page)
	srv.Config.WriteTimeout = 100 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close) // after the stream's own cleanup, which closes it
	st := openStream(t, srv.URL+"?format=sse")
	st.next(t)
	time.Sleep(500 * time.Millisecond) // well past the server's WriteTimeout
	c.Pipeline("openai").Isolate()
	for m := st.next(t); !strings.Contains(m.HTML, `data-circuit="isolated"`); m = st.next(t) {
	}
}

// A fallback configured with a model its server does not have fails every call with
// not_found, which opens no circuit; the page shows the route failing all the same, with the
// provider's reason and its error share, and the provider serving nothing — in the HTML and in
// the JSON. (The page showed "1 of 1 serving" and 0 % errors.)
func TestPage_ShowsARouteFailingForItsConfiguration(t *testing.T) {
	down := mocks.NewServer(mocks.WithScript(mocks.Status(http.StatusServiceUnavailable).Always()))
	t.Cleanup(down.Close)
	wrong := mocks.NewServer(mocks.WithModelScript("gpt-4o-mini",
		mocks.Error(http.StatusNotFound, "invalid_request_error", "The model `gpt-4o-mini` does not exist").Always()))
	t.Cleanup(wrong.Close)
	c := newClient(t, client.WithProvider("openai", policy(), openAIOn("openai", down)),
		client.WithProvider("backup", policy(), openAIOn("backup", wrong)),
		client.WithFallback("openai", "backup"))
	page := newPage(t, c)
	for range 3 {
		if err := ask(c); providers.KindOf(err) == "" {
			t.Fatalf("the call: %v, want it failed", err)
		}
	}
	srv := serve(t, page)
	_, _, body := get(t, srv.URL+"/debug/steady")
	for _, want := range []string{
		`data-name="backup:gpt-4o-mini" data-status="fail" data-circuit="closed" data-pause="off" data-failing="on"`,
		`data-name="backup" data-status="fail" data-circuit="closed"`, "not serving · 0 of 1 models serving",
		"failing: not_found (HTTP 404): The model `gpt-4o-mini` does not exist (3 calls in a row)", "0 of 1 serving",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(body, "<td>0%</td>") {
		t.Error("the page shows a 0 % error share")
	}
	if t.Failed() {
		t.Log(body)
	}
	_, _, body = get(t, srv.URL+"/debug/steady?format=json")
	var s statuspage.Snapshot
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatal(err)
	}
	backup := s.Providers[1]
	r := backup.Deployments[0].Routes[0]
	if backup.Name != "backup" || backup.Serving != 0 || backup.Status != health.StatusFail ||
		r.Circuit != "closed" || !strings.Contains(r.Failing, "not_found") || r.FailingCalls != 3 || r.Latency.ErrorRate == 0 {
		t.Fatalf("backup %+v, its route %+v: want failing for not_found, 3 calls, no circuit open, serving nothing", backup, r)
	}
}

// A route whose streams were read shows when a silent stream is cut: the stall limit and the
// 99th percentile of the waits for bytes it was learnt from (or "learning" before enough
// waits); a route that streamed nothing shows "—".
func TestPage_ShowsWhenAStreamIsCutForItsSilence(t *testing.T) {
	// Words a millisecond apart: each read of the stream waits, and the route learns.
	s := mocks.NewServer(mocks.WithReply(strings.Repeat("word ", 30)), mocks.WithLatency(mocks.LatencyProfile{ChunkDelay: time.Millisecond}))
	defer s.Close()
	c := newClient(t, client.WithProvider("openai", policy(), openAIOn("openai", s)))
	page := newPage(t, c)
	srv := serve(t, page)
	if _, _, html := get(t, srv.URL+"/debug/steady"); !strings.Contains(html, "<th>stream stall</th>") {
		t.Fatalf("no stream stall column:\n%s", html)
	}
	hello := func() *providers.ChatRequest {
		return &providers.ChatRequest{Model: "gpt-4o-mini", Messages: []providers.Message{{Role: providers.RoleUser, Content: "hi"}}}
	}
	if _, err := c.Chat(context.Background(), hello()); err != nil {
		t.Fatal(err)
	}
	if rt := page.Snapshot().Providers[0].Deployments[0].Routes; len(rt) != 1 || rt[0].Latency.StallAfterMs != 0 {
		t.Fatalf("routes %+v after a Chat alone, want no stall limit shown", rt)
	}
	learnt := func() bool {
		rt := page.Snapshot().Providers[0].Deployments[0].Routes
		return len(rt) == 1 && rt[0].Latency.StreamGapMs > 0
	}
	for i := 0; i < 50 && !learnt(); i++ { // a few: 16 waits are enough
		st, err := c.ChatStream(context.Background(), hello())
		if err != nil {
			t.Fatal(err)
		}
		for _, err := range st.Deltas() {
			if err != nil {
				t.Fatal(err)
			}
		}
		_ = st.Close()
	}
	rt := page.Snapshot().Providers[0].Deployments[0].Routes
	if len(rt) != 1 || rt[0].Latency.StreamGapMs <= 0 || rt[0].Latency.StallAfterMs < 1000 || rt[0].Latency.StallAfterMs > 10000 {
		t.Fatalf("routes %+v after streams of 30 words, want a learnt gap and a stall limit within 1–10 s", rt)
	}
	if _, _, html := get(t, srv.URL+"/debug/steady"); !strings.Contains(html, "(gaps ≤ ") {
		t.Fatalf("the page does not show the route's stall limit:\n%s", html)
	}
}
