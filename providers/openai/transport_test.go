package openai

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestDoneWatcher_SeesDoneWhereverReadsSplit(t *testing.T) {
	long := "data: " + strings.Repeat("x", 100) + " [DONE]\n\n"
	tests := []struct {
		name, body string
		done       bool
	}{
		{"plain", "data: {}\n\ndata: [DONE]\n\n", true},
		{"crlf", "data: {}\r\n\r\ndata: [DONE]\r\n\r\n", true},
		{"no space", "data:[DONE]\n\n", true},
		{"no final newline", "data: {}\n\ndata: [DONE]", true},
		{"missing", "data: {}\n\n", false},
		{"inside a long line", long, false},
		{"inside json", `data: {"content":"[DONE]"}` + "\n\n", false},
		{"comment", ": [DONE]\n\n", false},
	}
	for _, tt := range tests {
		for _, split := range []bool{false, true} {
			var r io.Reader = strings.NewReader(tt.body)
			if split {
				r = iotest.OneByteReader(r)
			}
			w := &doneWatcher{rc: io.NopCloser(r)}
			got, err := io.ReadAll(w)
			if err != nil || string(got) != tt.body {
				t.Fatalf("%s: the body changed: %q, %v", tt.name, got, err)
			}
			if w.done != tt.done {
				t.Errorf("%s (split=%t): done=%t, want %t", tt.name, split, w.done, tt.done)
			}
		}
	}
}
