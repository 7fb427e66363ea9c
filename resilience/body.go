package resilience

import (
	"io"
	"net/http"
	"sync/atomic"
)

// finisher is told once when a response body is done: read to EOF (err nil), failed while
// reading (err), or closed (err nil).
type finisher interface{ finish(err error) }

// doneBody wraps a response body so that f.finish runs exactly once, at EOF, on the first
// read error or on Close, whichever comes first. Finishing at EOF matters: SDKs that read an
// error body to the end but never close it (go-openai's stream error path) still release
// the slot, the timer and the breaker probe.
type doneBody struct {
	rc   io.ReadCloser
	f    finisher
	done atomic.Bool
}

func (b *doneBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil {
		if err == io.EOF {
			b.end(nil)
		} else {
			b.end(err)
		}
	}
	return n, err
}

func (b *doneBody) Close() error {
	err := b.rc.Close()
	b.end(nil)
	return err
}

func (b *doneBody) end(err error) {
	if b.done.CompareAndSwap(false, true) {
		b.f.finish(err)
	}
}

// closeRequestBody closes req.Body, as a RoundTripper must do even when it fails before
// sending anything.
func closeRequestBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// drain reads at most limit bytes of a discarded body and closes it, so that a short body
// leaves its connection reusable and a long one does not stall the call.
func drain(rc io.ReadCloser, limit int64) {
	_, _ = io.Copy(io.Discard, io.LimitReader(rc, limit))
	_ = rc.Close()
}

// isEventStream reports whether resp is a server-sent event stream.
func isEventStream(resp *http.Response) bool {
	// Indexing the map with the canonical key skips Header.Get's canonicalisation: this runs
	// on every call.
	v := resp.Header["Content-Type"]
	if len(v) == 0 {
		return false
	}
	ct := v[0]
	const es = "text/event-stream"
	return len(ct) >= len(es) && equalFoldASCII(ct[:len(es)], es)
}

func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		ca, cb := a[i], b[i]
		if 'A' <= ca && ca <= 'Z' {
			ca += 'a' - 'A'
		}
		if 'A' <= cb && cb <= 'Z' {
			cb += 'a' - 'A'
		}
		if ca != cb {
			return false
		}
	}
	return true
}
