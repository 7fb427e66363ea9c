package wire

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/steadyllm/steady/providers"
)

func TestSSEGuard_SeesDoneWhereverReadsSplit(t *testing.T) {
	long := "data: " + strings.Repeat("x", 100) + " [DONE]\n\n"
	tests := []struct {
		name, body, want string
		done             bool
	}{
		// Blank lines ("\n") are dropped with comments: go-openai takes each data line as an event.
		{"plain", "data: {}\n\ndata: [DONE]\n\n", "data: {}\ndata: [DONE]\n", true},
		{"crlf", "data: {}\r\n\r\ndata: [DONE]\r\n\r\n", "", true},
		{"no space", "data:[DONE]\n\n", "data:[DONE]\n", true},
		{"no final newline", "data: {}\n\ndata: [DONE]", "data: {}\ndata: [DONE]", true},
		{"missing", "data: {}\n\n", "data: {}\n", false},
		{"inside a long line", long, strings.TrimSuffix(long, "\n"), false},
		{"inside json", `data: {"content":"[DONE]"}` + "\n\n", `data: {"content":"[DONE]"}` + "\n", false},
		{"comment, dropped", ": [DONE]\n\ndata: {}\n\n", "data: {}\n", false},
		{"keep-alives dropped", "data: {}\n\n: keep-alive\n: ping\ndata: [DONE]\n\n", "data: {}\ndata: [DONE]\n", true},
		{"runs of blank lines dropped", "data: a\n\n\n\ndata: b\n", "data: a\ndata: b\n", false},
	}
	for _, tt := range tests {
		want := tt.want
		if want == "" {
			want = tt.body
		}
		for _, split := range []bool{false, true} {
			var r io.Reader = strings.NewReader(tt.body)
			if split {
				r = iotest.OneByteReader(r)
			}
			g := NewSSEGuard(io.NopCloser(r), 1<<20)
			got, err := io.ReadAll(g)
			if err != nil || string(got) != want {
				t.Fatalf("%s (split=%t): got %q, %v; want %q", tt.name, split, got, err, want)
			}
			if g.Done() != tt.done {
				t.Errorf("%s (split=%t): done=%t, want %t", tt.name, split, g.Done(), tt.done)
			}
		}
	}
}

// endless is a body that never ends: the same line over and over, generated, never stored.
type endless struct{ line []byte }

func (e *endless) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		n += copy(p[n:], e.line)
	}
	return n, nil
}

func isEventLimit(err error) bool {
	var le *providers.LimitError
	return errors.As(err, &le) && le.Limit == "MaxEventBytes"
}

func TestSSEGuard_Limits(t *testing.T) {
	const max = 64 << 10
	for name, body := range map[string]io.Reader{
		"one endless line":       &endless{line: []byte("x")},
		"endless data line":      io.MultiReader(strings.NewReader("data: "), &endless{line: []byte("y")}),
		"comment flood":          &endless{line: []byte(": keep-alive\n")},
		"blank line flood":       &endless{line: []byte("\n")},
		"other lines kept above": io.MultiReader(&endless{line: []byte("event: x\ndata: {}\n\n")}),
	} {
		g := NewSSEGuard(io.NopCloser(body), max)
		n, err := io.Copy(io.Discard, g)
		if !isEventLimit(err) {
			t.Fatalf("%s: %v after %d bytes, want the MaxEventBytes limit", name, err, n)
		}
		if n > 4*max {
			t.Fatalf("%s: %d bytes passed before the limit", name, n)
		}
	}
}

func TestSSEReader_Limits(t *testing.T) {
	const max = 64 << 10
	for name, body := range map[string]io.Reader{
		"one endless line":  &endless{line: []byte("x")},
		"endless data line": io.MultiReader(strings.NewReader("data: "), &endless{line: []byte("y")}),
		"endless event":     &endless{line: []byte("data: more\n")},
		"comment flood":     &endless{line: []byte(": keep-alive\n")},
		"blank line flood":  &endless{line: []byte("\r\n")},
	} {
		r := NewSSEReader(body, max)
		_, err := r.Next()
		if !isEventLimit(err) {
			t.Fatalf("%s: %v, want the MaxEventBytes limit", name, err)
		}
	}
	// Comments between events do not add up across events.
	var b strings.Builder
	for i := 0; i < 100; i++ {
		b.WriteString(strings.Repeat(": ping\n", 1000) + "data: {}\n\n")
	}
	r := NewSSEReader(strings.NewReader(b.String()), max)
	for i := 0; i < 100; i++ {
		if _, err := r.Next(); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
	}
}

// FuzzSSEReader: any bytes give events, io.EOF or a limit error; nothing an event holds is
// larger than the limit.
func FuzzSSEReader(f *testing.F) {
	f.Add([]byte("event: a\ndata: 1\ndata: 2\n\n: c\n\ndata: 3"), 64)
	f.Add([]byte("data:x\r\n\r\nretry: 5\nid: 1\n"), 8)
	f.Fuzz(func(t *testing.T, body []byte, max int) {
		max = 1 + (max%4096+4096)%4096
		r := NewSSEReader(bytes.NewReader(body), int64(max))
		for i := 0; i <= len(body); i++ {
			ev, err := r.Next()
			if err != nil {
				if err != io.EOF && !isEventLimit(err) {
					t.Fatalf("error %v", err)
				}
				return
			}
			if len(ev.Data)+len(ev.Name) > max {
				t.Fatalf("an event of %d bytes past a limit of %d", len(ev.Data)+len(ev.Name), max)
			}
		}
		t.Fatal("more events than bytes")
	})
}

// FuzzSSEGuard: the guard passes what it passes unchanged but for comment lines, and never
// passes a line longer than the limit.
func FuzzSSEGuard(f *testing.F) {
	f.Add([]byte("data: {}\n\n: ping\ndata: [DONE]\n\n"), 16)
	f.Add([]byte("event: x\nid: 1\n\n\n\n"), 4)
	f.Fuzz(func(t *testing.T, body []byte, max int) {
		max = 1 + (max%4096+4096)%4096
		g := NewSSEGuard(io.NopCloser(bytes.NewReader(body)), int64(max))
		out, err := io.ReadAll(g)
		if err != nil && !isEventLimit(err) {
			t.Fatalf("error %v", err)
		}
		for _, line := range bytes.Split(out, []byte("\n")) {
			if len(line) > max {
				t.Fatalf("a line of %d bytes passed a limit of %d", len(line), max)
			}
			if len(line) > 0 && line[0] == ':' {
				t.Fatalf("a comment passed: %q", line)
			}
		}
	})
}

// failing is a body that gives data, then fails with err.
type failing struct {
	data []byte
	err  error
}

func (f *failing) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

func (f *failing) Close() error { return nil }

// The guards keep what the body itself failed with, for a caller whose decoder reported
// something else; their own limits, and the end of the body, are no failure of it.
func TestReadErr_KeepsTheBodysOwnFailure(t *testing.T) {
	cut := errors.New("the wire broke")
	g := NewSSEGuard(&failing{data: []byte("data: x\n"), err: cut}, 1<<10)
	if _, err := io.ReadAll(g); err != cut || g.ReadErr() != cut {
		t.Errorf("SSEGuard: read %v, ReadErr %v", err, g.ReadErr())
	}
	g = NewSSEGuard(&failing{data: []byte("data: " + strings.Repeat("x", 100)), err: io.EOF}, 16)
	if _, err := io.ReadAll(g); err == nil || g.ReadErr() != nil {
		t.Errorf("SSEGuard at its limit: read %v, ReadErr %v", err, g.ReadErr())
	}
	l := NewLimited(&failing{data: []byte(`{"a":`), err: cut}, 1<<10, "MaxResponseBytes")
	if _, err := io.ReadAll(l); err != cut || l.ReadErr() != cut {
		t.Errorf("Limited: read %v, ReadErr %v", err, l.ReadErr())
	}
	l = NewLimited(&failing{data: []byte(strings.Repeat("x", 100)), err: io.EOF}, 16, "MaxResponseBytes")
	if _, err := io.ReadAll(l); err == nil || l.ReadErr() != nil {
		t.Errorf("Limited at its limit: read %v, ReadErr %v", err, l.ReadErr())
	}
}
