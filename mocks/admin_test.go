package mocks_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/mocks"
)

// status sends one call and returns its status, reading and closing its body.
func status(t *testing.T, s *mocks.Server, p string) int {
	t.Helper()
	hdr, body := openAIHeaders(), chatBody
	if p == mocks.RouteMessages {
		hdr, body = anthropicHeaders(), messagesBody
	}
	res, _ := mustDo(t, s, http.MethodPost, p, hdr, body)
	return res.StatusCode
}

func TestAdmin_RouteScriptChangesWhileTheServerRunsAndResets(t *testing.T) {
	ctx := context.Background()
	s := newServer(t)
	a := mocks.Admin(s.URL())
	if got := status(t, s, mocks.RouteChat); got != 200 {
		t.Fatalf("before: %d", got)
	}
	if err := a.RouteScript(ctx, mocks.RouteChat, mocks.Status(503).Always()); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if got := status(t, s, mocks.RouteChat); got != 503 {
			t.Fatalf("chat after the change: %d, want 503", got)
		}
	}
	if got := status(t, s, mocks.RouteMessages); got != 200 {
		t.Fatalf("the other route: %d, want 200", got)
	}
	st, err := a.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if q, ok := st.Scripts.Routes[mocks.RouteChat]; !ok || len(q.Steps) != 1 || q.Steps[0].Status != 503 || !q.Steps[0].Forever {
		t.Fatalf("state's chat script %+v", st.Scripts.Routes)
	}
	if st.Journal.Received != 5 {
		t.Fatalf("journal received %d, want 5", st.Journal.Received)
	}
	if err := a.ResetRoute(ctx, mocks.RouteChat); err != nil {
		t.Fatal(err)
	}
	if got := status(t, s, mocks.RouteChat); got != 200 {
		t.Fatalf("after the route's reset: %d", got)
	}
}

func TestAdmin_DefaultAndModelScriptsAreConsumedInOrder(t *testing.T) {
	ctx := context.Background()
	s := newServer(t)
	a := mocks.Admin(s.URL() + "/") // a trailing slash is fine
	if err := a.Script(ctx, mocks.Status(500), mocks.RateLimited(time.Second).Times(2)); err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{500, 429, 429, 200} {
		if got := status(t, s, mocks.RouteChat); got != want {
			t.Fatalf("call %d: %d, want %d", i, got, want)
		}
	}
	st, _ := a.State(ctx)
	if d := st.Scripts.Default; d == nil || !d.Spent || d.Next != 2 {
		t.Fatalf("default script state %+v", st.Scripts.Default)
	}
	if err := a.ModelScript(ctx, "gpt-4o-mini", mocks.Overloaded()); err != nil { // chatBody's model
		t.Fatal(err)
	}
	if got := status(t, s, mocks.RouteChat); got != 529 {
		t.Fatalf("model script: %d", got)
	}
	if err := a.ModelScript(ctx, "gpt-4o-mini"); err != nil { // no steps: removed
		t.Fatal(err)
	}
	if st, _ := a.State(ctx); len(st.Scripts.Models) != 0 {
		t.Fatalf("model scripts after removal: %+v", st.Scripts.Models)
	}
}

func TestAdmin_RouteLatencyIsDrawnByTheNextRequests(t *testing.T) {
	ctx := context.Background()
	s := newServer(t)
	a := mocks.Admin(s.URL())
	if err := a.RouteLatency(ctx, mocks.RouteMessages, mocks.LatencyProfile{FirstToken: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	status(t, s, mocks.RouteChat)
	status(t, s, mocks.RouteMessages)
	reqs := s.Journal().Requests()
	if reqs[0].FirstTokenDelay != 0 || reqs[1].FirstTokenDelay != time.Millisecond {
		t.Fatalf("delays %v and %v, want 0 for chat and 1ms for messages", reqs[0].FirstTokenDelay, reqs[1].FirstTokenDelay)
	}
	// A key's profile wins over the route's; the state names the key by its fingerprint only.
	if err := a.KeyLatency(ctx, "sk-ant-test", mocks.LatencyProfile{FirstToken: 2 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	status(t, s, mocks.RouteMessages)
	if last, _ := s.Journal().Last(); last.FirstTokenDelay != 2*time.Millisecond {
		t.Fatalf("key profile: %v", last.FirstTokenDelay)
	}
	st, _ := a.State(ctx)
	if _, ok := st.Latency.Keys[mocks.KeyFingerprint("sk-ant-test")]; !ok || st.Latency.Routes[mocks.RouteMessages].FirstToken != time.Millisecond {
		t.Fatalf("latency state %+v", st.Latency)
	}
	raw := adminGet(t, s, "state")
	if strings.Contains(raw, "sk-ant-test") {
		t.Fatalf("the state repeats an API key:\n%s", raw)
	}
	v, err := a.Journal(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Requests) != 2 || v.Requests[1].Seq != 3 || v.Requests[1].FirstTokenDelayMs != 2 || v.Stats.Received != 3 {
		t.Fatalf("journal view %+v", v)
	}
	if strings.Contains(adminGet(t, s, "journal"), "Hello Claude") {
		t.Fatal("the journal view repeats a prompt")
	}
}

// A model's profile (ModelLatency) delays that model's requests alone, and the state shows it;
// a model must be named. The client's URL is the admin API's, whatever form of the server's
// address it was given.
func TestAdmin_ModelLatencyAndTheClientsURL(t *testing.T) {
	ctx := context.Background()
	s := newServer(t)
	for _, base := range []string{s.URL(), s.URL() + "/", s.URL() + mocks.AdminPrefix} {
		if got := mocks.Admin(base).URL(); got != s.URL()+mocks.AdminPrefix {
			t.Fatalf("Admin(%q).URL() = %q, want %q", base, got, s.URL()+mocks.AdminPrefix)
		}
	}
	a := mocks.Admin(s.URL())
	if err := a.ModelLatency(ctx, "gpt-4o-mini", mocks.LatencyProfile{FirstToken: 3 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	status(t, s, mocks.RouteChat)     // gpt-4o-mini (chatBody)
	status(t, s, mocks.RouteMessages) // a Claude model
	reqs := s.Journal().Requests()
	if reqs[0].FirstTokenDelay != 3*time.Millisecond || reqs[1].FirstTokenDelay != 0 {
		t.Fatalf("delays %v and %v, want 3ms for gpt-4o-mini alone", reqs[0].FirstTokenDelay, reqs[1].FirstTokenDelay)
	}
	if st, err := a.State(ctx); err != nil || st.Latency.Models["gpt-4o-mini"].FirstToken != 3*time.Millisecond {
		t.Fatalf("state %+v, %v", st, err)
	}
	if err := a.ModelLatency(ctx, "", mocks.LatencyProfile{}); err == nil {
		t.Fatal("ModelLatency with no model was accepted")
	}
}

func TestAdmin_RateLimitsOfARouteAndAKey(t *testing.T) {
	ctx := context.Background()
	s := newServer(t)
	a := mocks.Admin(s.URL())
	one := &mocks.RateLimits{RequestsPerMinute: 1, Minute: time.Hour}
	if err := a.RouteRateLimits(ctx, mocks.RouteChat, one); err != nil {
		t.Fatal(err)
	}
	if got := status(t, s, mocks.RouteChat); got != 200 {
		t.Fatalf("first call: %d", got)
	}
	if got := status(t, s, mocks.RouteChat); got != 429 {
		t.Fatalf("second call within the route's budget of 1: %d", got)
	}
	if got := status(t, s, mocks.RouteMessages); got != 200 {
		t.Fatalf("another route: %d", got)
	}
	// The key's own limits win over its route's: {} exempts it.
	if err := a.KeyRateLimits(ctx, "sk-test", &mocks.RateLimits{}); err != nil {
		t.Fatal(err)
	}
	if got := status(t, s, mocks.RouteChat); got != 200 {
		t.Fatalf("an exempt key: %d", got)
	}
	if err := a.KeyRateLimits(ctx, "sk-test", nil); err != nil {
		t.Fatal(err)
	}
	if got := status(t, s, mocks.RouteChat); got != 429 {
		t.Fatalf("the key's exemption removed: %d", got)
	}
	st, _ := a.State(ctx)
	if l := st.RateLimits.Routes[mocks.RouteChat]; l.RequestsPerMinute != 1 || l.MinuteMs != 3_600_000 {
		t.Fatalf("route limits in the state: %+v", st.RateLimits)
	}
	// New limits start a full budget.
	if err := a.RouteRateLimits(ctx, mocks.RouteChat, &mocks.RateLimits{RequestsPerMinute: 2, Minute: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if got := status(t, s, mocks.RouteChat); got != 200 {
		t.Fatalf("under new limits: %d", got)
	}
	if err := a.RouteRateLimits(ctx, mocks.RouteChat, nil); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if got := status(t, s, mocks.RouteChat); got != 200 {
			t.Fatalf("limits removed: %d", got)
		}
	}
}

func TestAdmin_ConcurrencyLimitOfARoute(t *testing.T) {
	ctx := context.Background()
	s := newServer(t, mocks.WithScript(mocks.Stall()))
	a := mocks.Admin(s.URL())
	if err := a.SetRouteConcurrencyLimit(ctx, mocks.RouteChat, 1); err != nil {
		t.Fatal(err)
	}
	release := holdOne(t, s, mocks.RouteChat, openAIHeaders(), chatBody)
	defer release()
	if got := status(t, s, mocks.RouteChat); got != 503 {
		t.Fatalf("a second chat call with the route full: %d", got)
	}
	if got := status(t, s, mocks.RouteMessages); got != 200 {
		t.Fatalf("another route: %d", got)
	}
	st, _ := a.State(ctx)
	if r := st.Concurrency.Routes[mocks.RouteChat]; r.Max != 1 || r.InFlight != 1 || st.Concurrency.Refused != 1 ||
		st.ConcurrencyLimit.Routes[mocks.RouteChat] != 1 {
		t.Fatalf("concurrency state %+v / %+v", st.Concurrency, st.ConcurrencyLimit)
	}
	if err := a.SetConcurrencyLimit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := status(t, s, mocks.RouteMessages); got != 529 {
		t.Fatalf("messages with the server full: %d", got)
	}
}

func TestAdmin_ResetPutsTheStartSettingsBack(t *testing.T) {
	ctx := context.Background()
	start := []mocks.Option{
		mocks.WithRouteScript(mocks.RouteMessages, mocks.Status(503)),
		mocks.WithRouteLatency(mocks.RouteChat, mocks.LatencyProfile{FirstToken: time.Millisecond}),
		mocks.WithRateLimits(mocks.RateLimits{RequestsPerMinute: 100}),
		mocks.WithConcurrencyLimit(mocks.ConcurrencyLimit{Max: 5, Routes: map[string]int{mocks.RouteChat: 3}}),
	}
	s := newServer(t, start...)
	a := mocks.Admin(s.URL())
	initial, err := a.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := status(t, s, mocks.RouteMessages); got != 503 {
		t.Fatalf("the start script: %d", got)
	}
	for _, change := range []func() error{
		func() error { return a.Script(ctx, mocks.Status(500).Always()) },
		func() error { return a.RouteScript(ctx, mocks.RouteChat, mocks.Stall()) },
		func() error { return a.Latency(ctx, mocks.LatencyProfile{Jitter: time.Second}) },
		func() error { return a.RateLimits(ctx, nil) },
		func() error {
			return a.RouteRateLimits(ctx, mocks.RouteEmbeddings, &mocks.RateLimits{TokensPerMinute: 9})
		},
		func() error { return a.SetConcurrencyLimit(ctx, 0) },
		func() error { return a.SetRouteConcurrencyLimit(ctx, mocks.RouteChat, 7) },
	} {
		if err := change(); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	after, err := a.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(initial)
	got, _ := json.Marshal(after)
	if string(got) != string(want) {
		t.Fatalf("after Reset:\n%s\nwant the start state:\n%s", got, want)
	}
	if got := status(t, s, mocks.RouteMessages); got != 503 {
		t.Fatalf("the start script, rewound: %d", got)
	}
}

// adminDo sends a raw request to the admin API and returns the status and the body.
func adminDo(t *testing.T, s *mocks.Server, method, p, contentType, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, s.AdminURL()+p, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := readAllClose(res)
	return res.StatusCode, string(b)
}

func adminGet(t *testing.T, s *mocks.Server, p string) string {
	t.Helper()
	code, body := adminDo(t, s, http.MethodGet, p, "", "")
	if code != 200 {
		t.Fatalf("GET %s: %d %s", p, code, body)
	}
	return body
}

func TestAdmin_BadInputIsA400NamingTheFieldTheValueAndTheRange(t *testing.T) {
	s := newServer(t)
	before := adminGet(t, s, "state")
	for _, tc := range []struct {
		path, body string
		field      string
		value      any // as JSON decodes it; nil: none
		allowed    string
	}{
		{"script", `{"route":"/v2/nope","steps":[]}`, "route", "/v2/nope", "is none of"},
		{"script", `{"steps":[{"status":700}]}`, "steps[0].status", 700.0, "out of range [100, 599]"},
		{"script", `{"steps":[{},{"delay_ms":-5}]}`, "steps[1].delay_ms", -5.0, "is negative"},
		{"script", `{"steps":[{"stauts":503}]}`, "steps[0].stauts", nil, "is not a key"},
		{"script", `{"steps":[{"status":"x"}]}`, "steps[0].status", "string", "is not a whole number"},
		{"script", `{"steps":"x"}`, "steps", "string", "is not a list"},
		{"script", `{}`, "steps", nil, "is missing"},
		{"script", `{"route":"/v1/messages","model":"m","steps":[]}`, "route", nil, "given together"},
		{"script", `{"key":"sk","steps":[]}`, "key", nil, "cannot be set here"},
		{"script", `{"steps":[]} {}`, "", nil, "data after"},
		{"latency", `{"profile":{"firstTokenMs":-5}}`, "profile.firstTokenMs", -5.0, "out of range [0, 86400000]"},
		{"latency", `{"route":"/v1/messages","profile":{"stragglerRate":2}}`, "profile.stragglerRate", 2.0, "out of range [0, 1]"},
		{"latency", `{"profile":{"fast":true}}`, "profile.fast", nil, "is not a key"},
		{"limits/rate", `{"limits":{"requestsPerMinute":-1}}`, "limits.requestsPerMinute", -1.0, "out of range [0, 1000000000]"},
		{"limits/rate", `{"limits":{"minuteMs":90000000}}`, "limits.minuteMs", 9e7, "out of range [0, 86400000]"},
		{"limits/rate", `{"model":"x","limits":{}}`, "model", nil, "cannot be set here"},
		{"limits/rate", `{"limits":{"rpm":5}}`, "limits.rpm", nil, "is not a key"},
		{"limits/concurrency", `{"max":-2}`, "max", -2.0, "out of range [0, 1000000]"},
		{"limits/concurrency", `{"max":1,"openAIStatus":500}`, "openAIStatus", 500.0, "is none of 503, 529 and 429"},
		{"limits/concurrency", `{"route":"/v1/messages","max":1,"openAIStatus":529}`, "openAIStatus", 529.0, "not a route's"},
		{"limits/concurrency", `{}`, "max", nil, "is missing"},
		{"reset", `{"route":"/v1/nope"}`, "route", "/v1/nope", "is none of"},
		{"reset", `{"route":`, "", nil, "cut short"},
	} {
		method := http.MethodPut
		if tc.path == "reset" {
			method = http.MethodPost
		}
		code, body := adminDo(t, s, method, tc.path, "application/json", tc.body)
		if code != 400 {
			t.Errorf("%s %s: status %d, want 400: %s", tc.path, tc.body, code, body)
			continue
		}
		var e struct {
			Error mocks.AdminError `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &e); err != nil {
			t.Fatalf("%s %s: %v: %s", tc.path, tc.body, err, body)
		}
		found := false
		for _, p := range e.Error.Problems {
			if p.Field == tc.field && p.Value == tc.value && strings.Contains(p.Allowed, tc.allowed) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s %s: problems %+v, want field %q value %v allowed ~%q", tc.path, tc.body, e.Error.Problems, tc.field, tc.value, tc.allowed)
		}
	}
	if after := adminGet(t, s, "state"); after != before {
		t.Errorf("a refused request changed the state:\n%s\nwas\n%s", after, before)
	}
}

func TestAdmin_TheGoClientReturnsTheProblems(t *testing.T) {
	s := newServer(t)
	err := mocks.Admin(s.URL()).Latency(context.Background(), mocks.LatencyProfile{StragglerRate: 3, Jitter: -time.Second})
	var ae *mocks.AdminError
	if !errors.As(err, &ae) || ae.StatusCode != 400 || len(ae.Problems) != 2 {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"profile.stragglerRate 3 out of range [0, 1]", "profile.jitterMs -1000 out of range [0, 86400000]"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}

func TestAdmin_BoundsMethodsPathsAndBodies(t *testing.T) {
	s := newServer(t)
	if code, body := adminDo(t, s, http.MethodGet, "script", "", ""); code != 405 || !strings.Contains(body, "use PUT") {
		t.Errorf("GET script: %d %s", code, body)
	}
	if code, _ := adminDo(t, s, http.MethodGet, "nope", "", ""); code != 404 {
		t.Errorf("unknown path: %d", code)
	}
	big := `{"steps":[` + strings.Repeat(`{"status":503},`, mocks.MaxAdminBodyBytes/14) + `{}]}`
	if code, body := adminDo(t, s, http.MethodPut, "script", "application/json", big); code != 413 {
		t.Errorf("a %d-byte body: %d %s", len(big), code, body)
	}
	deep := `{"steps":[` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `]}`
	if code, body := adminDo(t, s, http.MethodPut, "script", "application/json", deep); code != 400 || !strings.Contains(body, "deeper") {
		t.Errorf("a deep body: %d %s", code, body)
	}
	if code, _ := adminDo(t, s, http.MethodPut, "script", "text/plain", `{"steps":[]}`); code != 415 {
		t.Errorf("a body that is not JSON by its type: %d", code)
	}
	if code, _ := adminDo(t, s, http.MethodPost, "reset", "", ""); code != 200 {
		t.Errorf("an empty reset: %d", code)
	}
	var index struct {
		Endpoints []struct{ Method, Path string }
	}
	if err := json.Unmarshal([]byte(adminGet(t, s, "")), &index); err != nil || len(index.Endpoints) != 8 {
		t.Errorf("index: %v %+v", err, index)
	}
	// The admin API takes nothing from the calls' own accounting.
	if st := s.Journal().Stats(); st.Received != 0 {
		t.Errorf("the journal counted %d admin requests", st.Received)
	}
}

func TestAdmin_AnswersLoopbackPeersHostsAndOriginsOnly(t *testing.T) {
	s := newServer(t)
	for _, tc := range []struct {
		name, remote, host, origin string
		proxied                    string // a header a reverse proxy adds
		want                       int
	}{
		{"loopback", "127.0.0.1:5000", "127.0.0.1:8080", "", "", 200},
		{"loopback v6", "[::1]:5000", "localhost:8080", "", "", 200},
		{"loopback origin", "127.0.0.1:5000", "127.0.0.1:8080", "http://localhost:3000", "", 200},
		{"remote peer", "192.0.2.7:5000", "127.0.0.1:8080", "", "", 403},
		{"rebound host name", "127.0.0.1:5000", "evil.example:8080", "", "", 403},
		{"other origin", "127.0.0.1:5000", "127.0.0.1:8080", "https://evil.example", "", 403},
		{"bad origin", "127.0.0.1:5000", "127.0.0.1:8080", "::", "", 403},
		{"relayed by a proxy", "127.0.0.1:5000", "127.0.0.1:8080", "", "X-Forwarded-For", 403},
		{"relayed (Forwarded)", "127.0.0.1:5000", "127.0.0.1:8080", "", "Forwarded", 403},
		{"relayed (X-Real-IP)", "127.0.0.1:5000", "127.0.0.1:8080", "", "X-Real-IP", 403},
	} {
		// ServeHTTP directly: a peer address other than loopback is never dialled.
		req := httptest.NewRequest(http.MethodPost, "http://"+tc.host+"/_fake/reset", strings.NewReader(""))
		req.RemoteAddr, req.Host = tc.remote, tc.host
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		if tc.proxied != "" {
			req.Header.Set(tc.proxied, "203.0.113.5")
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("%s: %d, want %d: %s", tc.name, rec.Code, tc.want, rec.Body)
		}
	}
}

func TestAdmin_WithoutAdminIsAnUnknownPath(t *testing.T) {
	s := newServer(t, mocks.WithoutAdmin())
	code, body := adminDo(t, s, http.MethodGet, "state", "", "")
	if code != 404 || strings.Contains(body, "admin") {
		t.Fatalf("%d %s", code, body)
	}
	if _, err := mocks.Admin(s.URL()).State(context.Background()); err == nil {
		t.Fatal("the client found an admin API")
	}
}

func TestAdmin_ChangesNeverCorruptARequestInFlight(t *testing.T) {
	ctx := context.Background()
	alpha := mocks.Reply("alpha alpha alpha alpha alpha").WithChunkDelay(200 * time.Microsecond).Always()
	beta := mocks.Reply("beta beta beta beta beta").WithChunkDelay(200 * time.Microsecond).Always()
	s := newServer(t, mocks.WithScript(alpha))
	a := mocks.Admin(s.URL())
	stop := make(chan struct{})
	changed := make(chan error, 1)
	go func() {
		var err error
		for i := 0; err == nil; i++ {
			select {
			case <-stop:
				changed <- nil
				return
			default:
			}
			switch i % 5 {
			case 0:
				err = a.Script(ctx, beta)
			case 1:
				err = a.Script(ctx, alpha)
			case 2:
				err = a.Latency(ctx, mocks.LatencyProfile{FirstToken: time.Duration(i%3) * time.Microsecond, HeadersFirst: i%2 == 0})
			case 3:
				err = a.RateLimits(ctx, &mocks.RateLimits{RequestsPerMinute: 1_000_000})
			case 4:
				err = a.SetConcurrencyLimit(ctx, 100)
			}
		}
		changed <- err
	}()
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			for range 25 {
				res, err := do(t, ctx, s, http.MethodPost, mocks.RouteChat, openAIHeaders(), body)
				if err != nil {
					errs <- err
					return
				}
				evs, err := readEvents(res.Body)
				res.Body.Close()
				if err != nil || res.StatusCode != 200 {
					errs <- errors.New("a call failed: " + res.Status)
					return
				}
				var text strings.Builder
				for _, e := range evs {
					if c, ok := path(decodeAny(e.data), "choices", 0, "delta", "content").(string); ok {
						text.WriteString(c)
					}
				}
				got := text.String()
				if got != "alpha alpha alpha alpha alpha" && got != "beta beta beta beta beta" {
					errs <- errors.New("a stream mixed two scripts: " + got)
					return
				}
				if evs[len(evs)-1].data != "[DONE]" {
					errs <- errors.New("a stream lost its end")
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	close(stop)
	if err := <-changed; err != nil {
		t.Fatal(err)
	}
	if st := s.Journal().Stats(); st.Received != 200 {
		t.Fatalf("received %d, want 200", st.Received)
	}
}

// decodeAny decodes a JSON event's data, nil when it is not JSON ([DONE]).
func decodeAny(data string) any {
	var v any
	if json.Unmarshal([]byte(data), &v) != nil {
		return nil
	}
	return v
}
