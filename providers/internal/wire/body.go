package wire

import (
	"bytes"
	"io"

	"github.com/steadyllm/steady/providers"
)

// ReadAll reads r to the end, failing with a *providers.LimitError naming limit when it holds
// more than max bytes: at most max+1 bytes are ever read.
func ReadAll(r io.Reader, max int64, limit string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return data, err
	}
	if int64(len(data)) > max {
		return data[:max], &providers.LimitError{Limit: limit, Max: max}
	}
	return data, nil
}

// ReadError reads at most max bytes of an error body and reports whether there was more,
// which is left unread.
func ReadError(r io.Reader, max int64) (body []byte, cut bool, err error) {
	body, err = io.ReadAll(io.LimitReader(r, max+1))
	if int64(len(body)) > max {
		return body[:max], true, err
	}
	return body, false, err
}

// Limited is a response body that fails with a *providers.LimitError once more than its limit
// has been read, and keeps the first HeadSize bytes it passed on, so that a caller whose
// decoder found no answer in them can look at what the server sent instead (an error
// envelope, say: a few hundred bytes). It also keeps the error the body itself failed with
// (see ReadErr).
type Limited struct {
	rc    io.ReadCloser
	left  int64 // bytes that may still be read
	max   int64
	limit string
	head  *[HeadSize]byte // nil: keep none
	nhead int
	rerr  error // the first error of rc other than io.EOF
}

// HeadSize is how many of a body's first bytes Limited keeps.
const HeadSize = 512

// NewLimited wraps rc, keeping its head in a buffer of its own.
func NewLimited(rc io.ReadCloser, max int64, limit string) *Limited {
	b := new(Limited)
	b.Reset(rc, max, limit, new([HeadSize]byte))
	return b
}

// Reset makes b wrap rc afresh, keeping the head in head (nil: keep none), for a caller that
// keeps a Limited inside a larger struct and lends it a head buffer for the call.
func (b *Limited) Reset(rc io.ReadCloser, max int64, limit string, head *[HeadSize]byte) {
	*b = Limited{rc: rc, left: max, max: max, limit: limit, head: head}
}

// Read reads from the body; past the limit it returns the *providers.LimitError.
func (b *Limited) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, &providers.LimitError{Limit: b.limit, Max: b.max}
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1] // one byte past the limit tells "more" from "exactly the limit"
	}
	n, err := b.rc.Read(p)
	if err != nil && err != io.EOF && b.rerr == nil {
		b.rerr = err
	}
	b.left -= int64(n)
	if b.head != nil && b.nhead < HeadSize && n > 0 {
		b.nhead += copy(b.head[b.nhead:], p[:n])
	}
	if b.left < 0 {
		return n + int(b.left), &providers.LimitError{Limit: b.limit, Max: b.max}
	}
	return n, err
}

// Close closes the body.
func (b *Limited) Close() error { return b.rc.Close() }

// ReadErr returns the first error the wrapped body failed with (io.EOF is no failure), nil
// when it has not failed; the limit's own *providers.LimitError is not one. It is what the
// wire said, as the body said it: a decoder that read through b may have wrapped the error,
// or replaced it with one of its own, before its caller saw it.
func (b *Limited) ReadErr() error { return b.rerr }

// Head returns the first bytes read (up to HeadSize), trimmed of surrounding white space; nil
// when b keeps no head.
func (b *Limited) Head() []byte {
	if b.head == nil {
		return nil
	}
	return bytes.TrimSpace(b.head[:b.nhead])
}

// Complete reports whether Head holds the whole body read so far.
func (b *Limited) Complete() bool { return b.head != nil && b.max-b.left <= int64(b.nhead) }
