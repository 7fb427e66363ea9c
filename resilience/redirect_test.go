package resilience

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

// target is where a hostile or misconfigured server points its redirects; it must never be
// reached.
type target struct {
	srv  *httptest.Server
	hits atomic.Int32
}

func newTarget(t *testing.T, tls bool) *target {
	tg := &target{}
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { tg.hits.Add(1) })
	if tls {
		tg.srv = httptest.NewTLSServer(h)
	} else {
		tg.srv = httptest.NewServer(h)
	}
	t.Cleanup(tg.srv.Close)
	return tg
}

func TestPipeline_NeverFollowsARedirect(t *testing.T) {
	other := newTarget(t, false)
	otherTLS := newTarget(t, true)
	u, _ := url.Parse(other.srv.URL)
	locations := map[string]string{
		"another port":   other.srv.URL + "/v1/steal?token=QUERYSECRET",
		"another host":   "http://localhost:" + u.Port() + "/v1/steal?token=QUERYSECRET",
		"another scheme": otherTLS.srv.URL + "/v1/steal?token=QUERYSECRET",
	}
	for where, loc := range locations {
		for _, code := range []int{301, 302, 303, 307, 308} {
			s := newScript(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Location", loc)
				w.WriteHeader(code)
			})
			c, p := client(t, testOptions())
			_, err := post(t, c, s.url(), `{"prompt":"private"}`)
			var re *RedirectError
			if !errors.Is(err, ErrRedirect) || !errors.As(err, &re) || re.StatusCode != code {
				t.Fatalf("%s, %d: got %v, want a *RedirectError naming %d", where, code, err, code)
			}
			if other.hits.Load()+otherTLS.hits.Load() != 0 || s.hits.Load() != 1 {
				t.Fatalf("%s, %d: the redirect was followed (%d requests elsewhere, %d at the origin)",
					where, code, other.hits.Load()+otherTLS.hits.Load(), s.hits.Load())
			}
			msg := err.Error()
			if strings.Contains(re.Error(), "QUERYSECRET") || strings.Contains(re.Error(), "/v1/steal") ||
				strings.Contains(msg, "QUERYSECRET") || strings.Contains(msg, sentinelKey) {
				t.Fatalf("%s, %d: the error repeats the Location's path or query: %s", where, code, msg)
			}
			if p.CircuitState() != CircuitClosed || p.bh.inFlight() != 0 {
				t.Fatalf("%s, %d: circuit %v, %d slots held", where, code, p.CircuitState(), p.bh.inFlight())
			}
		}
	}
}

// A redirect after a retryable failure is refused the same way, and a 3xx without a Location
// (nothing to follow) passes through.
func TestPipeline_RedirectAfterRetryAndBare3xx(t *testing.T) {
	other := newTarget(t, false)
	s := newScript(t, status(503, `{}`), func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.srv.URL, http.StatusTemporaryRedirect)
	})
	c, _ := client(t, testOptions())
	if _, err := post(t, c, s.url(), `{}`); !errors.Is(err, ErrRedirect) || other.hits.Load() != 0 {
		t.Fatalf("got %v with %d requests elsewhere", err, other.hits.Load())
	}
	bare := newScript(t, status(304, ``))
	resp, err := post(t, c, bare.url(), `{}`)
	if err != nil || resp.StatusCode != 304 {
		t.Fatalf("a 3xx without Location: %v", err)
	}
	readAll(t, resp)
}
