package mocks

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// The bounds on what one request can make the server do. People leave the fake running as a
// dev server, so nothing a client sends may cost it more than work linear in the request's
// size, or memory that outlives the request beyond the journal's limits (JournalLimits).
const (
	// DefaultMaxBodyBytes is the largest request body the server reads unless
	// [WithMaxBodyBytes] or a scenario file's "maxBodyBytes" says otherwise: 4 MiB. A longer
	// body is answered 413 in the API's own error shape, and the server reads no more of it
	// than the limit (none at all when Content-Length already says it is too long).
	DefaultMaxBodyBytes = 4 << 20

	// MaxJSONDepth is how deep a request body may nest JSON objects and arrays, counting the
	// body itself as level 1. A deeper body is answered 400 in the API's own error shape before
	// anything else reads it, so that nothing the server does recursively (nested tool results,
	// nested JSON Schemas) can be driven deeper. Real requests nest a dozen levels.
	MaxJSONDepth = 64

	// MaxEmbeddingInputs is the most inputs an embeddings request may carry, as the OpenAI API
	// allows; more is answered 400.
	MaxEmbeddingInputs = 2048

	// MaxEmbeddingValues bounds inputs × dimensions of one embeddings request (about 25 MB of
	// JSON reply), so that a small request cannot ask for a reply of hundreds of megabytes;
	// more is answered 400.
	MaxEmbeddingValues = 1 << 21

	// MaxModels bounds each of the per-model settings: the models given a script
	// ([WithModelScript]), a context window ([WithContextWindows]), a prefill rejection
	// ([WithRejectPrefill]) or a latency profile ([WithModelLatency]), and likewise the API
	// keys given a latency profile ([WithKeyLatency]), so that the work a request costs to look
	// its model up stays small whatever the configuration. Beyond it NewServer panics, a
	// scenario file is refused and the Server's setters fail.
	MaxModels = 1024

	// MaxOutages bounds the outages of a server ([WithOutage]): every request checks them in
	// order. Beyond it NewServer panics and a scenario file is refused.
	MaxOutages = 1024
)

// WithMaxBodyBytes sets the largest request body the server reads; a longer one is answered
// 413 (Request Entity Too Large) in the API's own error shape. n <= 0 means
// [DefaultMaxBodyBytes]. The journal keeps at most JournalLimits.MaxBodyBytes of each body,
// whatever this limit.
func WithMaxBodyBytes(n int64) Option { return func(o *options) { o.maxBody = n } }

// errTooLarge marks a body longer than the server's limit.
var errTooLarge = errors.New("request body too large")

// readBody reads r's body up to limit bytes. It returns errTooLarge, and what it read, when the
// body is longer, without reading more than limit+1 bytes; when Content-Length already says
// so it reads nothing. Other read errors (a client gone mid-body) leave what arrived.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		// Do not read or drain the body: close the connection after the answer.
		w.Header().Set("Connection", "close")
		return nil, errTooLarge
	}
	body := http.MaxBytesReader(w, r.Body, limit)
	if r.ContentLength >= 0 && r.ContentLength <= preallocLimit {
		// A small known length: read it into a buffer of exactly that size (no growth, no
		// slack that the journal would keep alive).
		b := make([]byte, r.ContentLength)
		n, _ := io.ReadFull(body, b)
		return b[:n], nil
	}
	// A large or unknown length: grow with what arrives, so that a client announcing
	// megabytes and sending nothing costs nothing.
	var buf bytes.Buffer
	buf.Grow(int(min(max(r.ContentLength, 512), preallocLimit)))
	_, err := buf.ReadFrom(body)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return buf.Bytes(), errTooLarge
	}
	return buf.Bytes(), nil
}

// preallocLimit is the most readBody allocates before the bytes arrive.
const preallocLimit = 64 << 10

// tooLargeMessage is the 413's message for limit.
func tooLargeMessage(limit int64) string {
	return fmt.Sprintf("Request body too large: this server accepts at most %d bytes.", limit)
}

// errTooDeep is the 400 for a body that nests deeper than MaxJSONDepth.
var errTooDeep = fmt.Errorf("Invalid body: JSON nested deeper than %d levels.", MaxJSONDepth)
