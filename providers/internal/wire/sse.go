package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	"github.com/steadyllm/steady/providers"
)

// sseBuffer is the read buffer of an event stream. Most events are a few hundred bytes; a
// longer line is assembled past the buffer, up to the event limit, so memory grows only as far
// as the server's events really need.
const sseBuffer = 4 << 10

// Event is one dispatched server-sent event.
type Event struct {
	Name string // the "event:" field, "" when absent
	Data []byte // the "data:" lines joined by "\n"; valid until the next call to Next
}

// SSEReader splits a text/event-stream body into events, following the WHATWG rules that
// matter to LLM APIs: lines end in "\n" or "\r\n"; "event:" and "data:" fields, with one
// optional space after the colon; several data lines join with "\n"; ":" comments and the id
// and retry fields are ignored; a blank line dispatches the event.
//
// Everything read since the last dispatched event — the event's own lines and the comments,
// keep-alives and blank lines before it — counts against one limit (Limits.MaxEventBytes),
// so neither an endless line, nor a huge event, nor an endless flood of comments can grow
// memory or keep the reader busy forever without an error.
type SSEReader struct {
	r     *bufio.Reader
	max   int64
	line  []byte // a line longer than the bufio buffer, assembled
	name  []byte
	data  []byte
	has   bool  // a data field was seen since the last dispatch
	since int64 // bytes read since the last dispatch
}

// NewSSEReader reads events from r, each (with what precedes it) at most max bytes.
func NewSSEReader(r io.Reader, max int64) *SSEReader {
	return &SSEReader{r: bufio.NewReaderSize(r, sseBuffer), max: max}
}

func (s *SSEReader) tooLarge() error {
	return &providers.LimitError{Limit: "MaxEventBytes", Max: s.max}
}

// Next returns the next event. At the end of the body it returns io.EOF, after dispatching an
// event whose data lines were complete but that lacked its closing blank line; a line cut off
// by the end of the body is dropped. Any other error is the body's read error, or a
// *providers.LimitError.
func (s *SSEReader) Next() (Event, error) {
	for {
		line, err := s.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && s.has {
				return s.dispatch(), nil
			}
			return Event{}, err
		}
		if len(line) == 0 {
			if s.has {
				return s.dispatch(), nil
			}
			s.name = s.name[:0] // an event with no data is dropped
			continue
		}
		field, value, found := bytes.Cut(line, []byte(":"))
		if !found {
			value = nil // a field name alone has an empty value
		}
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			s.name = append(s.name[:0], value...)
		case "data":
			if s.has {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, value...)
			s.has = true
		}
	}
}

// dispatch returns the pending event and starts a new one.
func (s *SSEReader) dispatch() Event {
	ev := Event{Name: string(s.name), Data: s.data}
	s.name, s.data, s.has, s.since = s.name[:0], s.data[:0], false, 0
	return ev
}

// readLine returns the next line without its line ending. A final line that the body ends
// without terminating is reported as io.EOF, not returned.
func (s *SSEReader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		chunk, err := s.r.ReadSlice('\n')
		s.since += int64(len(chunk))
		if s.since > s.max {
			return nil, s.tooLarge()
		}
		switch {
		case err == nil:
			line := chunk
			if len(s.line) > 0 {
				s.line = append(s.line, chunk...)
				line = s.line
			}
			line = line[:len(line)-1]
			return bytes.TrimSuffix(line, []byte("\r")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			s.line = append(s.line, chunk...)
		default:
			return nil, err
		}
	}
}

// SSEGuard sits under a third-party event-stream reader (go-openai's) and keeps it within the
// limits it does not have: go-openai reads each line whole, however long, and keeps every
// non-data line of a stream in memory for the stream's whole life. The guard
//
//   - fails the read with a *providers.LimitError (MaxEventBytes) when one line, or the
//     comments and other non-data lines between two data lines, or the non-data,
//     non-comment lines of the whole stream (what go-openai keeps) pass the limit;
//   - drops ":" comment lines (keep-alives), which carry nothing, so they never reach the
//     reader above and are never kept, and blank lines ("\n"), which go-openai reads one by
//     one (a line, an allocation and two regular expressions each) only to skip them: it
//     takes each data line as a whole event;
//   - notes whether "data: [DONE]" went by, which go-openai does not tell apart from a body
//     that simply ended;
//   - keeps the error the body itself failed with (ReadErr): go-openai's stream reader may
//     return another in its place (an error it pieced together from the lines it kept).
//
// Everything else passes through unchanged and unbuffered. It is read by one goroutine at a
// time.
type SSEGuard struct {
	rc   io.ReadCloser
	max  int64
	err  error // sticky limit error
	rerr error // the first error of rc other than io.EOF

	started bool  // a line has begun
	drop    bool  // the current line is a comment or blank
	lineLen int64 // bytes of the current line so far
	prefix  [32]byte
	plen    int
	gap     int64 // bytes of lines since the last data line
	kept    int64 // bytes of non-data, non-comment, non-blank lines passed on
	done    bool
}

// NewSSEGuard guards rc with the event limit max.
func NewSSEGuard(rc io.ReadCloser, max int64) *SSEGuard {
	g := new(SSEGuard)
	g.Reset(rc, max)
	return g
}

// Reset makes g guard rc afresh, for a caller that keeps an SSEGuard inside a larger struct.
func (g *SSEGuard) Reset(rc io.ReadCloser, max int64) { *g = SSEGuard{rc: rc, max: max} }

// Done reports whether the stream's terminal "data: [DONE]" line went by.
func (g *SSEGuard) Done() bool { return g.done }

// Read reads and filters the stream.
func (g *SSEGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	for {
		n, err := g.rc.Read(p)
		if err != nil && err != io.EOF && g.rerr == nil {
			g.rerr = err
		}
		m, lerr := g.filter(p[:n])
		if err == io.EOF && lerr == nil && g.started {
			lerr = g.endLine() // a last line without a newline counts too
		}
		if lerr != nil {
			g.err = lerr
			return m, lerr
		}
		if m > 0 || err != nil {
			return m, err
		}
	}
}

// Close closes the underlying body.
func (g *SSEGuard) Close() error { return g.rc.Close() }

// ReadErr returns the first error the guarded body failed with (io.EOF is no failure), nil
// when it has not failed; the guard's own limit errors are not ones.
func (g *SSEGuard) ReadErr() error { return g.rerr }

// filter scans b line by line, removes comment and blank lines from it in place and returns
// the length kept.
func (g *SSEGuard) filter(b []byte) (int, error) {
	w := 0
	for i := 0; i < len(b); {
		if !g.started {
			g.started = true
			g.drop = b[i] == ':' || b[i] == '\n' // a comment, or a blank line
		}
		end, eol := len(b), false // the current line's piece of b, and whether it ends in b
		if j := bytes.IndexByte(b[i:], '\n'); j >= 0 {
			end, eol = i+j+1, true
		}
		piece := b[i:end]
		if room := g.max - g.lineLen; int64(len(piece)) > room {
			if !g.drop {
				w += copy(b[w:], piece[:room])
			}
			return w, &providers.LimitError{Limit: "MaxEventBytes", Max: g.max}
		}
		g.lineLen += int64(len(piece))
		text := piece
		if eol {
			text = piece[:len(piece)-1]
		}
		g.plen += copy(g.prefix[g.plen:], text) // before piece moves down over itself
		if !g.drop {
			w += copy(b[w:], piece)
		}
		i = end
		if eol {
			if err := g.endLine(); err != nil {
				return w, err
			}
		}
	}
	return w, nil
}

// endLine accounts for the line that just ended.
func (g *SSEGuard) endLine() error {
	start := bytes.TrimSpace(g.prefix[:g.plen])
	switch {
	case g.drop, len(start) == 0 && g.lineLen <= int64(g.plen)+1:
		g.gap += g.lineLen // a comment or a blank line
	case bytes.HasPrefix(start, []byte("data:")):
		g.gap = 0
		if g.lineLen <= int64(len(g.prefix)) && bytes.Equal(bytes.TrimSpace(start[len("data:"):]), []byte("[DONE]")) {
			g.done = true
		}
	default: // another field, or a line go-openai cannot read: it keeps these
		g.gap += g.lineLen
		g.kept += g.lineLen
	}
	g.started, g.drop, g.lineLen, g.plen = false, false, 0, 0
	if g.gap > g.max || g.kept > g.max {
		return &providers.LimitError{Limit: "MaxEventBytes", Max: g.max}
	}
	return nil
}
