package resilience_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/steadyllm/steady/resilience"
)

// A header Go's HTTP/2 transport refuses (Upgrade, a Connection other than close or
// keep-alive, a Transfer-Encoding other than chunked), which HTTP/1 would have sent, is the
// caller's mistake: ErrInvalidRequest, never counted against the provider's circuit. OpenAI and
// Anthropic are reached over HTTP/2.
func TestPipeline_HeaderHTTP2RefusesIsTheCallersMistake(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	o := resilience.DefaultOptions()
	o.RetryCount = 0
	o.CircuitBreakerThreshold = 2
	p, err := resilience.New(o, resilience.WithName("openai"))
	if err != nil {
		t.Fatal(err)
	}
	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.ForceAttemptHTTP2 = true
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: p.Wrap(tr)}
	for _, h := range [][2]string{{"Upgrade", "websocket"}, {"Connection", "upgrade"}, {"Transfer-Encoding", "gzip"}} {
		for range 3 {
			req, _ := http.NewRequest(http.MethodPost, srv.URL, nil)
			req.Header.Set(h[0], h[1])
			if _, err := c.Do(req); !errors.Is(err, resilience.ErrInvalidRequest) {
				t.Fatalf("%s: %v, want ErrInvalidRequest", h[0], err)
			}
		}
	}
	if st := p.CircuitInfo(); st.State != resilience.CircuitClosed || st.ConsecutiveFailures != 0 || hits.Load() != 0 {
		t.Fatalf("circuit %+v, %d requests reached the server", st, hits.Load())
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
}
