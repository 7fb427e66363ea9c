// Package providertest holds what the providers' tests share: the benchmarks every provider
// runs the same way, over its own wire format.
package providertest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/steadyllm/steady/providers"
)

// BenchChat asks p for req b.N times.
func BenchChat(b *testing.B, p providers.Provider, req *providers.ChatRequest) {
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := p.Chat(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchChatStream reads b.N whole streams of req from p, each of which must carry chunks
// content deltas and then its final delta, finished with FinishStop.
func BenchChatStream(b *testing.B, p providers.Provider, req *providers.ChatRequest, chunks int) {
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		st, err := p.ChatStream(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			d, err := st.Recv()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if d.Done && d.FinishReason != providers.FinishStop {
				b.Fatalf("finish %q", d.FinishReason)
			}
			n++
		}
		_ = st.Close()
		if n != chunks+1 {
			b.Fatalf("%d deltas, want %d", n, chunks+1)
		}
	}
}

// CannedServer serves answer to every request over 127.0.0.1, or stream (an event stream) to
// a request that asks for one ("stream":true in its body), until b ends.
func CannedServer(b testing.TB, answer, stream string) *httptest.Server {
	b.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, stream)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, answer)
	}))
	b.Cleanup(srv.Close)
	return srv
}
