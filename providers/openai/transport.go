package openai

import (
	"bytes"
	"context"
	"io"
	"net/http"
)

// errorBodyLimit bounds how much of an error response body is kept in memory for go-openai
// to parse. OpenAI error envelopes are a few hundred bytes.
const errorBodyLimit = 256 << 10

// exchange records what the HTTP layer saw during one call, for the call that made it: the
// response status and headers (go-openai drops them on error paths, and always on streams)
// and, for a stream, the body wrapper that watches for [DONE].
//
// One exchange belongs to one call and lives in that call's context. go-openai calls
// HTTPDoer.Do synchronously, on the caller's goroutine, so the writes in Do happen before
// the call returns and the reads that follow need no locking.
type exchange struct {
	stream bool        // wrap a successful body in a doneWatcher
	sent   bool        // Do was called: go-openai's own checks passed
	status int         // 0 until a response arrived
	header http.Header // the response headers, nil until a response arrived
	body   *doneWatcher
}

type exchangeKey struct{}

// withExchange returns ctx carrying a fresh exchange for one call.
func withExchange(ctx context.Context, stream bool) (context.Context, *exchange) {
	x := &exchange{stream: stream}
	return context.WithValue(ctx, exchangeKey{}, x), x
}

// doer is the go-openai HTTPDoer in front of the configured *http.Client. It
//
//   - records the response status and headers in the call's exchange, when there is one;
//   - replaces every failure body (status < 200 or >= 400) with an in-memory copy of at most
//     errorBodyLimit bytes and closes the original at once: go-openai's stream and raw paths
//     read error bodies but never close them, which would pin the connection and the
//     resilience pipeline's bulkhead slot, timer and breaker probe;
//   - wraps a successful stream body in a doneWatcher.
//
// It applies to every call of the go-openai client, including those made through
// Provider.Client. It never modifies the request.
type doer struct{ client *http.Client }

// Do sends req through the configured client.
func (d doer) Do(req *http.Request) (*http.Response, error) {
	x, _ := req.Context().Value(exchangeKey{}).(*exchange)
	if x != nil {
		x.sent = true
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return nil, err
	}
	if x != nil {
		x.status, x.header = resp.StatusCode, resp.Header
	}
	if resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusBadRequest {
		resp.Body = bufferBody(resp.Body)
		return resp, nil
	}
	if x != nil && x.stream {
		x.body = &doneWatcher{rc: resp.Body}
		resp.Body = x.body
	}
	return resp, nil
}

// bufferBody reads at most errorBodyLimit bytes of rc, closes it, and returns the bytes read
// as a body whose Close is a no-op. A read error ends the copy early; go-openai then reports
// the body as it is.
func bufferBody(rc io.ReadCloser) io.ReadCloser {
	b, _ := io.ReadAll(io.LimitReader(rc, errorBodyLimit))
	_ = rc.Close()
	return io.NopCloser(bytes.NewReader(b))
}

// doneLineMax is the longest line doneWatcher keeps: enough for "data: [DONE]" with some
// whitespace. Longer lines are data chunks and are not copied.
const doneLineMax = 32

// doneWatcher passes a server-sent event stream through unchanged and notes whether a
// "data: [DONE]" line went by. go-openai's Recv returns io.EOF both after [DONE] and when
// the body simply ends, so this is the only way to tell a complete stream from a truncated
// one. A [DONE] on the last line without a newline counts too.
//
// It is read by one goroutine at a time (go-openai's reader); done is read by the same
// goroutine after Recv returns.
type doneWatcher struct {
	rc   io.ReadCloser
	line []byte // the start of the current line, at most doneLineMax bytes
	long bool   // the current line is longer than doneLineMax
	done bool
}

// Read reads from the stream and scans what it returns.
func (w *doneWatcher) Read(p []byte) (int, error) {
	n, err := w.rc.Read(p)
	w.scan(p[:n])
	if err == io.EOF {
		w.endLine()
	}
	return n, err
}

// Close closes the underlying body.
func (w *doneWatcher) Close() error { return w.rc.Close() }

func (w *doneWatcher) scan(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.keep(p)
			return
		}
		w.keep(p[:i])
		w.endLine()
		p = p[i+1:]
	}
}

func (w *doneWatcher) keep(p []byte) {
	if w.long || len(w.line)+len(p) > doneLineMax {
		w.long = true
		return
	}
	w.line = append(w.line, p...)
}

func (w *doneWatcher) endLine() {
	if !w.long && isDoneLine(w.line) {
		w.done = true
	}
	w.line, w.long = w.line[:0], false
}

// isDoneLine reports whether line is the stream's terminal "data: [DONE]".
func isDoneLine(line []byte) bool {
	rest, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data:"))
	return ok && bytes.Equal(bytes.TrimSpace(rest), []byte("[DONE]"))
}
