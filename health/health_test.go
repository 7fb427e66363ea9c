package health

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/steadyllm/steady/resilience"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var fixedTime = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func fixedNow() time.Time { return fixedTime }

// stateSource is a CircuitSource without CircuitInfo.
type stateSource resilience.CircuitState

func (s stateSource) CircuitState() resilience.CircuitState { return resilience.CircuitState(s) }

// infoSource is a CircuitSource that also reports CircuitInfo.
type infoSource resilience.CircuitInfo

func (s infoSource) CircuitState() resilience.CircuitState { return s.State }
func (s infoSource) CircuitInfo() resilience.CircuitInfo   { return resilience.CircuitInfo(s) }

// serve runs one request through h and decodes a JSON body, if any.
func serve(t *testing.T, h http.Handler, method string) (*httptest.ResponseRecorder, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, "/readyz", nil))
	if method != http.MethodGet || rec.Code == http.StatusMethodNotAllowed {
		return rec, nil
	}
	var doc map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, rec.Body)
	}
	return rec, doc
}

// checkEntry returns the single object of checks[key], failing on any other shape.
func checkEntry(t *testing.T, doc map[string]any, key string) map[string]any {
	t.Helper()
	checks, ok := doc["checks"].(map[string]any)
	if !ok {
		t.Fatalf("checks is %T, want an object: %v", doc["checks"], doc)
	}
	arr, ok := checks[key].([]any)
	if !ok || len(arr) != 1 {
		t.Fatalf("checks[%q] = %v, want an array of one object", key, checks[key])
	}
	entry, ok := arr[0].(map[string]any)
	if !ok {
		t.Fatalf("checks[%q][0] is %T, want an object", key, arr[0])
	}
	return entry
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func TestHandler_EveryStateHasItsStatusAndCode(t *testing.T) {
	cases := []struct {
		name      string
		src       CircuitSource
		observed  string
		status    string
		code      int
		nextProbe string // "" when the field must be absent
	}{
		{"closed", stateSource(resilience.CircuitClosed), "closed", "pass", 200, ""},
		{"half-open", stateSource(resilience.CircuitHalfOpen), "half-open", "warn", 200, ""},
		{"open", stateSource(resilience.CircuitOpen), "open", "fail", 503, ""},
		{"isolated", stateSource(resilience.CircuitIsolated), "isolated", "fail", 503, ""},
		{"unknown state", stateSource(42), "unknown", "fail", 503, ""},
		{"closed with info", infoSource{State: resilience.CircuitClosed}, "closed", "pass", 200, ""},
		{"half-open with info", infoSource{State: resilience.CircuitHalfOpen}, "half-open", "warn", 200, ""},
		{"open with info", infoSource{State: resilience.CircuitOpen, NextProbeIn: 12500 * time.Millisecond}, "open", "fail", 503, "12.5s"},
		{"open with elapsed break", infoSource{State: resilience.CircuitOpen}, "open", "fail", 503, "0s"},
		{"open rounds to ms", infoSource{State: resilience.CircuitOpen, NextProbeIn: 1234567 * time.Microsecond}, "open", "fail", 503, "1.235s"},
		{"isolated with info", infoSource{State: resilience.CircuitIsolated}, "isolated", "fail", 503, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewChecker(WithNow(fixedNow))
			c.Add("openai", tc.src)
			rec, doc := serve(t, c.Handler(), http.MethodGet)

			if rec.Code != tc.code {
				t.Errorf("code = %d, want %d", rec.Code, tc.code)
			}
			for h, want := range map[string]string{
				"Content-Type":  "application/health+json",
				"Cache-Control": "no-store",
			} {
				if got := rec.Header().Get(h); got != want {
					t.Errorf("%s = %q, want %q", h, got, want)
				}
			}
			if got := keys(doc); !slices.Equal(got, []string{"checks", "status"}) {
				t.Errorf("top-level keys = %v, want [checks status]", got)
			}
			if doc["status"] != tc.status {
				t.Errorf("status = %v, want %s", doc["status"], tc.status)
			}
			entry := checkEntry(t, doc, "openai:circuit")
			want := map[string]any{
				"componentType": "component",
				"observedValue": tc.observed,
				"status":        tc.status,
				"time":          "2025-06-01T12:00:00Z",
			}
			if tc.nextProbe != "" {
				want["nextProbeIn"] = tc.nextProbe
			}
			if !slices.Equal(keys(entry), keys(want)) {
				t.Errorf("check keys = %v, want %v", keys(entry), keys(want))
			}
			for k, v := range want {
				if entry[k] != v {
					t.Errorf("%s = %v, want %v", k, entry[k], v)
				}
			}
		})
	}
}

func TestHandler_ExactDocument(t *testing.T) {
	c := NewChecker(WithNow(func() time.Time { return fixedTime.In(time.FixedZone("CEST", 7200)) }))
	c.Add("openai", infoSource{State: resilience.CircuitOpen, NextProbeIn: 12500 * time.Millisecond})
	c.Add("anthropic", stateSource(resilience.CircuitClosed))
	rec, _ := serve(t, c.Handler(), http.MethodGet)
	const want = `{
  "status": "fail",
  "checks": {
    "anthropic:circuit": [
      {
        "componentType": "component",
        "observedValue": "closed",
        "status": "pass",
        "time": "2025-06-01T12:00:00Z"
      }
    ],
    "openai:circuit": [
      {
        "componentType": "component",
        "observedValue": "open",
        "status": "fail",
        "time": "2025-06-01T12:00:00Z",
        "nextProbeIn": "12.5s"
      }
    ]
  }
}
`
	if got := rec.Body.String(); got != want {
		t.Errorf("body =\n%s\nwant\n%s", got, want)
	}
}

func TestChecker_Aggregation(t *testing.T) {
	const (
		closed   = resilience.CircuitClosed
		halfOpen = resilience.CircuitHalfOpen
		open     = resilience.CircuitOpen
		isolated = resilience.CircuitIsolated
	)
	cases := []struct {
		name     string
		states   []resilience.CircuitState
		plain    Status // worst wins
		fallback Status // WithFallback
		failing  []string
	}{
		{"no sources", nil, StatusPass, StatusPass, nil},
		{"all closed", []resilience.CircuitState{closed, closed}, StatusPass, StatusPass, nil},
		{"one half-open", []resilience.CircuitState{closed, halfOpen}, StatusWarn, StatusWarn, nil},
		{"one open, one closed", []resilience.CircuitState{open, closed}, StatusFail, StatusWarn, []string{"p0"}},
		{"one isolated, one closed", []resilience.CircuitState{closed, isolated}, StatusFail, StatusWarn, []string{"p1"}},
		{"open and half-open", []resilience.CircuitState{open, halfOpen}, StatusFail, StatusWarn, []string{"p0"}},
		{"two down, one up", []resilience.CircuitState{open, isolated, closed}, StatusFail, StatusWarn, []string{"p0", "p1"}},
		{"all down", []resilience.CircuitState{open, isolated}, StatusFail, StatusFail, []string{"p0", "p1"}},
		{"single open", []resilience.CircuitState{open}, StatusFail, StatusFail, []string{"p0"}},
		{"all half-open", []resilience.CircuitState{halfOpen, halfOpen}, StatusWarn, StatusWarn, nil},
	}
	for _, tc := range cases {
		for _, fallback := range []bool{false, true} {
			name := tc.name
			want := tc.plain
			var opts []Option
			if fallback {
				name += "/fallback"
				want = tc.fallback
				opts = append(opts, WithFallback())
			}
			t.Run(name, func(t *testing.T) {
				c := NewChecker(append(opts, WithNow(fixedNow))...)
				for i, s := range tc.states {
					c.Add("p"+string(rune('0'+i)), stateSource(s))
				}
				rec, doc := serve(t, c.Handler(), http.MethodGet)
				if doc["status"] != string(want) {
					t.Errorf("status = %v, want %s", doc["status"], want)
				}
				if rec.Code != want.HTTPStatus() {
					t.Errorf("code = %d, want %d", rec.Code, want.HTTPStatus())
				}
				for i, s := range tc.states { // each check keeps its own status
					entry := checkEntry(t, doc, "p"+string(rune('0'+i))+":circuit")
					if entry["status"] != string(StatusOf(s)) {
						t.Errorf("p%d status = %v, want %s", i, entry["status"], StatusOf(s))
					}
				}

				err := c.Check(context.Background())
				if want != StatusFail {
					if err != nil {
						t.Errorf("Check = %v, want nil", err)
					}
					return
				}
				var ue *UnhealthyError
				if !errors.As(err, &ue) || !errors.Is(err, ErrUnhealthy) {
					t.Fatalf("Check = %v, want an *UnhealthyError matching ErrUnhealthy", err)
				}
				var names []string
				for _, r := range ue.Failing {
					names = append(names, r.Name)
				}
				if !slices.Equal(names, tc.failing) {
					t.Errorf("failing = %v, want %v", names, tc.failing)
				}
			})
		}
	}
}

func TestHandler_HeadSendsHeadersWithoutBody(t *testing.T) {
	for _, st := range []resilience.CircuitState{resilience.CircuitClosed, resilience.CircuitOpen} {
		c := NewChecker()
		c.Add("openai", stateSource(st))
		get, _ := serve(t, c.Handler(), http.MethodGet)
		head, _ := serve(t, c.Handler(), http.MethodHead)
		if head.Code != get.Code {
			t.Errorf("%s: HEAD code = %d, GET code = %d", st, head.Code, get.Code)
		}
		if head.Body.Len() != 0 {
			t.Errorf("%s: HEAD body = %q, want empty", st, head.Body)
		}
		for _, h := range []string{"Content-Type", "Cache-Control", "Content-Length"} {
			if head.Header().Get(h) != get.Header().Get(h) {
				t.Errorf("%s: HEAD %s = %q, GET has %q", st, h, head.Header().Get(h), get.Header().Get(h))
			}
		}
	}
}

func TestHandlers_RejectOtherMethods(t *testing.T) {
	c := NewChecker()
	c.Add("openai", stateSource(resilience.CircuitClosed))
	handlers := map[string]http.Handler{"readiness": c.Handler(), "liveness": LivenessHandler()}
	for name, h := range handlers {
		for _, m := range []string{"POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"} {
			rec, _ := serve(t, h, m)
			if rec.Code != http.StatusMethodNotAllowed {
				t.Errorf("%s %s: code = %d, want 405", name, m, rec.Code)
			}
			if got := rec.Header().Get("Allow"); got != "GET, HEAD" {
				t.Errorf("%s %s: Allow = %q, want \"GET, HEAD\"", name, m, got)
			}
		}
	}
}

func TestLivenessHandler_PassesWhateverTheProviders(t *testing.T) {
	rec, doc := serve(t, LivenessHandler(), http.MethodGet)
	if rec.Code != 200 || doc["status"] != "pass" || len(doc) != 1 {
		t.Errorf("liveness = %d %v, want 200 {status: pass}", rec.Code, doc)
	}
	if ct := rec.Header().Get("Content-Type"); ct != ContentType {
		t.Errorf("Content-Type = %q", ct)
	}
	head, _ := serve(t, LivenessHandler(), http.MethodHead)
	if head.Code != 200 || head.Body.Len() != 0 {
		t.Errorf("HEAD liveness = %d %q, want 200 and no body", head.Code, head.Body)
	}
}

func TestCheck_ReturnsContextError(t *testing.T) {
	c := NewChecker()
	c.Add("openai", stateSource(resilience.CircuitOpen))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Check(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Check(cancelled) = %v, want context.Canceled", err)
	}
	ctx, cancel = context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel()
	if err := c.Check(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Check(expired) = %v, want context.DeadlineExceeded", err)
	}
}

func TestUnhealthyError_NamesProvidersAndStates(t *testing.T) {
	c := NewChecker()
	c.Add("openai", infoSource{State: resilience.CircuitOpen, NextProbeIn: 12500 * time.Millisecond})
	c.Add("azure", stateSource(resilience.CircuitIsolated))
	c.Add("anthropic", stateSource(resilience.CircuitClosed))
	err := c.Check(context.Background())
	const want = "health: unhealthy: azure circuit isolated, openai circuit open (next probe in 12.5s)"
	if err == nil || err.Error() != want {
		t.Errorf("Check = %v, want %q", err, want)
	}
}

func TestChecker_AddReplacesAndPanicsOnMistakes(t *testing.T) {
	c := NewChecker()
	c.Add("openai", stateSource(resilience.CircuitOpen))
	c.Add("openai", stateSource(resilience.CircuitClosed))
	if r := c.Report(); len(r.Checks) != 1 || r.Status != StatusPass {
		t.Errorf("after replacing: %+v, want one passing check", r)
	}
	var nilPipeline *resilience.Pipeline
	for name, add := range map[string]func(){
		"empty name":   func() { c.Add("", stateSource(resilience.CircuitClosed)) },
		"nil source":   func() { c.Add("x", nil) },
		"nil pipeline": func() { c.Add("x", nilPipeline) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Add did not panic", name)
				}
			}()
			add()
		}()
	}
}
