package resilience

import (
	"context"
	"io"
	"net/http"
	"testing"
)

// endlessStream is a base transport whose answer is an event stream that never ends, each
// Read returning one small event at once.
type endlessStream struct{}

func (endlessStream) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, ProtoMajor: 2, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(endlessBody{})}, nil
}

type endlessBody struct{}

func (endlessBody) Read(p []byte) (int, error) {
	return copy(p, "data: {\"t\":\"w\"}\n\n"), nil
}

// BenchmarkStreamRead measures one Read of a stream's body through the pipeline (the default
// options: an idle limit re-armed on each Read): a stream nobody watches, and a watched one
// after its first content, whose Reads are timed for its route's rhythm and bounded by the
// stall limit. Neither allocates.
func BenchmarkStreamRead(b *testing.B) {
	for _, watched := range []bool{false, true} {
		name := "unwatched"
		if watched {
			name = "watched"
		}
		b.Run(name, func(b *testing.B) {
			p, err := New(DefaultOptions())
			if err != nil {
				b.Fatal(err)
			}
			rt := p.Wrap(endlessStream{})
			call := &Call{}
			call.Init(context.Background(), true)
			if watched {
				call.WatchStream()
			}
			req, _ := http.NewRequestWithContext(call, http.MethodPost, "http://127.0.0.1/v1/chat/completions", nil)
			resp, err := rt.RoundTrip(req)
			if err != nil {
				b.Fatal(err)
			}
			defer resp.Body.Close()
			call.FirstToken()
			buf := make([]byte, 512)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := resp.Body.Read(buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
