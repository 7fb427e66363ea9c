package mocks

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// scanner walks JSON text that encoding/json has already validated (a json.RawMessage taken
// from a decoded request). Every method consumes what it reads and never goes back, so one
// walk costs time linear in the text. Calling json.Unmarshal on each nested level instead
// would check and copy the whole subtree again at every level: work that grows with the
// nesting depth times the size, which is what a hostile request exploits.
type scanner struct {
	b []byte
	i int
}

// peek skips white space and returns the next byte, 0 at the end.
func (s *scanner) peek() byte {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return s.b[s.i]
		}
	}
	return 0
}

// skipString consumes the string literal at s.i (its opening quote).
func (s *scanner) skipString() {
	for s.i++; s.i < len(s.b); s.i++ {
		switch s.b[s.i] {
		case '\\':
			s.i++
		case '"':
			s.i++
			return
		}
	}
}

// skip consumes one value of any kind, without recursion.
func (s *scanner) skip() {
	switch s.peek() {
	case '"':
		s.skipString()
		return
	case '{', '[':
	default: // a number, true, false or null ends at a delimiter
		for ; s.i < len(s.b); s.i++ {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return
			}
		}
		return
	}
	depth := 0
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '"':
			s.skipString()
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				s.i++
				return
			}
		}
		s.i++
	}
}

// span consumes one value and returns its text.
func (s *scanner) span() []byte {
	s.peek()
	start := s.i
	s.skip()
	return s.b[start:s.i]
}

// str consumes a string literal and returns its value, decoded as encoding/json does.
func (s *scanner) str() string {
	lit := s.span()
	if len(lit) < 2 || lit[0] != '"' {
		return "" // not a string: callers peek first, so only for text encoding/json refused
	}
	inner := lit[1 : len(lit)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner)
	}
	var out string
	_ = json.Unmarshal(lit, &out) // valid already; linear in the literal
	return out
}

// key consumes a member name and its colon and returns the name's raw text when it has no
// escapes (no allocation), else its decoded value.
func (s *scanner) key() []byte {
	s.peek()
	start := s.i
	s.skipString()
	lit := s.b[start:s.i]
	if s.peek() == ':' {
		s.i++
	}
	if len(lit) < 2 {
		return nil
	}
	if bytes.IndexByte(lit, '\\') < 0 {
		return lit[1 : len(lit)-1]
	}
	var out string
	_ = json.Unmarshal(lit, &out)
	return []byte(out)
}

// object calls member for each member of the object at s.i with the scanner on its value;
// member must consume the value. A value that is not an object is skipped and object
// returns false.
func (s *scanner) object(member func(name []byte)) bool {
	if s.peek() != '{' {
		s.skip()
		return false
	}
	s.i++
	for {
		switch s.peek() {
		case '}':
			s.i++
			return true
		case ',':
			s.i++
		case '"':
			name := s.key()
			at := s.i
			member(name)
			if s.i == at {
				s.i = len(s.b) // a value member did not consume: stop rather than loop
			}
		default: // not JSON that encoding/json accepted: stop rather than loop
			s.i = len(s.b)
			return true
		}
	}
}

// array calls elem for each element of the array at s.i with the scanner on it; elem must
// consume the element. A value that is not an array is skipped and array returns false.
func (s *scanner) array(elem func()) bool {
	if s.peek() != '[' {
		s.skip()
		return false
	}
	s.i++
	for {
		switch s.peek() {
		case ']':
			s.i++
			return true
		case ',':
			s.i++
		case 0:
			return true
		default:
			at := s.i
			elem()
			if s.i == at {
				s.i = len(s.b) // an element elem did not consume: stop rather than loop
			}
		}
	}
}

// is reports whether a member name matches field as encoding/json matches struct fields
// (case-insensitively).
func is(name []byte, field string) bool { return bytes.EqualFold(name, []byte(field)) }

// withinDepth reports whether the JSON text b nests objects and arrays at most limit deep. It
// is one pass over b, run before anything recurses into a request.
func withinDepth(b []byte, limit int) bool {
	depth, inString := 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			if depth++; depth > limit {
				return false
			}
		case '}', ']':
			depth--
		}
	}
	return true
}
