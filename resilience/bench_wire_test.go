package resilience_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/steadyllm/steady/resilience"
)

// wrappedBase is a RoundTripper around an *http.Transport that changes nothing, as a logging
// middleware would: the pipeline cannot clone it, so its streams' silence is the kernel's to
// tell (see wire.go).
type wrappedBase struct{ next http.RoundTripper }

func (w wrappedBase) RoundTrip(r *http.Request) (*http.Response, error) { return w.next.RoundTrip(r) }

// BenchmarkPipeline_Loopback: one successful call over real HTTP/1.1 on loopback, with a
// kept-alive connection, with DefaultOptions (a stream-idle limit, so every call learns its
// connection). "direct" is the bare transport without a pipeline; the difference is the
// pipeline's overhead, tracing the connection included, on a transport that asks for a trace.
func BenchmarkPipeline_Loopback(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(benchBody)
	}))
	defer srv.Close()
	for _, v := range []struct {
		name string
		rt   func(*http.Transport) http.RoundTripper
	}{
		{"direct", func(tr *http.Transport) http.RoundTripper { return tr }},
		{"http.Transport", func(tr *http.Transport) http.RoundTripper {
			return newPipeline(b, resilience.DefaultOptions()).Wrap(tr)
		}},
		{"wrapped", func(tr *http.Transport) http.RoundTripper {
			return newPipeline(b, resilience.DefaultOptions()).Wrap(wrappedBase{tr})
		}},
	} {
		b.Run(v.name, func(b *testing.B) {
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			rt := v.rt(tr)
			if c, ok := rt.(interface{ CloseIdleConnections() }); ok {
				defer c.CloseIdleConnections()
			}
			req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				resp, err := rt.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
		})
	}
}
