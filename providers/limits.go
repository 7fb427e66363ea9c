package providers

import "fmt"

// The default Limits: generous for any real answer, small enough that a broken or hostile
// server cannot exhaust a process's memory.
const (
	// DefaultMaxResponseBytes bounds an answer, streamed or not: a chat answer of the largest
	// output budgets is a few hundred kilobytes; an embeddings batch of a thousand
	// 1536-dimension vectors about 20 MiB.
	DefaultMaxResponseBytes = 32 << 20
	// DefaultMaxEventBytes bounds one server-sent event, and the comments and keep-alive
	// lines between two events.
	DefaultMaxEventBytes = 4 << 20
	// DefaultMaxErrorBodyBytes bounds how much of an error response is read: an error
	// envelope is a few hundred bytes, a gateway's HTML page a few kilobytes.
	DefaultMaxErrorBodyBytes = 64 << 10
)

// Limits bounds what a provider reads from a server, so that memory is set by configuration
// and never by the server. Sizes count bytes after decompression (a gzip bomb is cut at the
// limit like any other body). The zero value of a field means its default; negative values
// are invalid.
type Limits struct {
	// MaxResponseBytes bounds a whole answer, streamed or not: the body of a non-streamed one;
	// of a stream, everything it delivers and keeps, counted as it comes — its text,
	// reasoning, refusal, the IDs, names and arguments of its tool calls, signatures and the
	// blocks kept to send back, each block or call it keeps a record of counting 128 bytes
	// more — however many events carry it. Past it the call fails with a *Error of kind
	// KindUnavailable wrapping a *LimitError; a stream's error holds the text delivered up to
	// the limit in Partial. What a stream keeps grows with the answer and its buffers never
	// past the limit, however long the server streams. 0 means
	// DefaultMaxResponseBytes; raise it for embeddings batches of thousands of large vectors.
	MaxResponseBytes int64
	// MaxEventBytes bounds one server-sent event of a stream (each of its lines and all of
	// them together), and separately the bytes of comments, keep-alives and other non-data
	// lines between two events. Past it the stream fails like MaxResponseBytes. 0 means
	// DefaultMaxEventBytes.
	MaxEventBytes int64
	// MaxErrorBodyBytes bounds how much of an error response is read to find the provider's
	// error envelope. The rest is not read; the status still classifies the error. 0 means
	// DefaultMaxErrorBodyBytes.
	MaxErrorBodyBytes int64
}

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	if l.MaxResponseBytes == 0 {
		l.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if l.MaxEventBytes == 0 {
		l.MaxEventBytes = DefaultMaxEventBytes
	}
	if l.MaxErrorBodyBytes == 0 {
		l.MaxErrorBodyBytes = DefaultMaxErrorBodyBytes
	}
	return l
}

// Validate reports a negative limit, naming the field.
func (l Limits) Validate() error {
	for _, f := range []struct {
		name string
		v    int64
	}{{"MaxResponseBytes", l.MaxResponseBytes}, {"MaxEventBytes", l.MaxEventBytes}, {"MaxErrorBodyBytes", l.MaxErrorBodyBytes}} {
		if f.v < 0 {
			return fmt.Errorf("Limits.%s = %d: must be 0 (the default) or a positive number of bytes", f.name, f.v)
		}
	}
	return nil
}

// LimitError is the cause of a failure that a server's answer caused by exceeding one of the
// Limits. Find it with errors.As on the *Error a call returns.
type LimitError struct {
	// Limit names the field of Limits that was exceeded, e.g. "MaxResponseBytes".
	Limit string
	// Max is the limit in bytes.
	Max int64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("the server sent more than Limits.%s (%s)", e.Limit, byteSize(e.Max))
}

// byteSize renders n bytes for a message.
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
