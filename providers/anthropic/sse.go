package anthropic

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// maxEventSize bounds one server-sent event (all its lines together). Anthropic's events are
// small deltas; a tool_use block's input arrives in many of them. Only a broken or hostile
// server sends an event this large.
const maxEventSize = 16 << 20

// errEventTooLarge is returned by next for an event past maxEventSize.
var errEventTooLarge = fmt.Errorf("a server-sent event is larger than %d bytes", maxEventSize)

// sseEvent is one dispatched server-sent event.
type sseEvent struct {
	name string // the "event:" field, "" when absent
	data []byte // the "data:" lines joined by "\n"; valid until the next call to next
}

// sseReader splits a text/event-stream body into events, following the WHATWG rules that
// matter here: lines end in "\n" or "\r\n"; "event:" and "data:" fields, with one optional
// space after the colon; several data lines join with "\n"; ":" comments and the id and retry
// fields are ignored; a blank line dispatches the event. Lines may be of any length up to
// maxEventSize: bufio.Reader grows past its buffer, unlike a bufio.Scanner.
type sseReader struct {
	r    *bufio.Reader
	line []byte // a line longer than the bufio buffer, assembled
	name []byte
	data []byte
	has  bool // a data field was seen since the last dispatch
}

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 16<<10)}
}

// next returns the next event. At the end of the body it returns io.EOF, after dispatching an
// event whose data lines were complete but that lacked its closing blank line; a line cut off
// by the end of the body is dropped. Any other error is the body's read error, or
// errEventTooLarge.
func (s *sseReader) next() (sseEvent, error) {
	for {
		line, err := s.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && s.has {
				return s.dispatch(), nil
			}
			return sseEvent{}, err
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
		if len(s.data)+len(s.name) > maxEventSize {
			return sseEvent{}, errEventTooLarge
		}
	}
}

// dispatch returns the pending event and starts a new one.
func (s *sseReader) dispatch() sseEvent {
	ev := sseEvent{name: string(s.name), data: s.data}
	s.name, s.data, s.has = s.name[:0], s.data[:0], false
	return ev
}

// readLine returns the next line without its line ending. A final line that the body ends
// without terminating is reported as io.EOF, not returned.
func (s *sseReader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		chunk, err := s.r.ReadSlice('\n')
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
			if len(s.line) > maxEventSize {
				return nil, errEventTooLarge
			}
		default:
			return nil, err
		}
	}
}
