package wire

import (
	"strings"

	"github.com/steadyllm/steady/providers"
)

// Answer bounds one streamed answer by Limits.MaxResponseBytes, as a whole answer read at once
// is bounded: every byte of content a stream delivers (text, reasoning, refusal, the names and
// arguments of tool calls) and everything it keeps beside them (signatures, blocks to send
// back) is counted as it comes, and the first byte past the limit ends the stream. A server
// that streams forever in tiny pieces then costs the limit, not the process's memory. The zero
// value counts nothing: call Init first.
type Answer struct {
	max  int64
	used int64
}

// Init starts counting an answer of at most max bytes.
func (a *Answer) Init(max int64) { *a = Answer{max: max} }

// Take counts n more bytes of the answer. Past the limit it counts nothing and returns the
// *providers.LimitError naming MaxResponseBytes.
func (a *Answer) Take(n int) error {
	if n <= 0 {
		return nil
	}
	if a.used+int64(n) > a.max {
		return &providers.LimitError{Limit: "MaxResponseBytes", Max: a.max}
	}
	a.used += int64(n)
	return nil
}

// Add appends s, which Take counted already, to t.
func (a *Answer) Add(t *Text, s string) {
	t.add(s, int64(t.Len())+int64(len(s))+a.max-a.used)
}

// Size is what delta d counts for against the answer's limit: its text, its reasoning, and
// the IDs, names and arguments of its tool calls.
func Size(d *providers.Delta) int {
	n := len(d.Text) + len(d.Reasoning)
	for _, tc := range d.ToolCalls {
		n += len(tc.ID) + len(tc.Name) + len(tc.Arguments)
	}
	return n
}

// BlockOverhead is what a stream counts, beyond its bytes, for each block or call it keeps a
// record of (a thinking block, a tool call's index, a block kept verbatim): a server that
// opens a million empty blocks costs their records, and those records count as well.
const BlockOverhead = 128

// Text is text a stream keeps of its answer (the text it delivered, its reasoning), appended
// to only. Its buffer grows by doubling, as strings.Builder's does, but never past what the
// stream's Answer could still let it hold: a builder left to itself doubles past the limit
// and holds up to twice what the answer may. The zero value is empty and ready to use.
type Text struct {
	b *strings.Builder // nil until the first byte
}

// minText is the first buffer of a Text: a short answer needs no more, and a long one skips
// the smallest doublings.
const minText = 256

// add appends s; the text will never hold more than most bytes.
func (t *Text) add(s string, most int64) {
	if s == "" {
		return
	}
	if t.b == nil {
		t.b = new(strings.Builder)
	}
	if need := t.b.Len() + len(s); need > t.b.Cap() {
		size := int64(max(2*t.b.Cap(), need, minText))
		size = max(min(size, most), int64(need))
		// A fresh builder grown once holds exactly size bytes; the old buffer stays valid for
		// the strings String returned from it.
		b := new(strings.Builder)
		b.Grow(int(size))
		b.WriteString(t.b.String())
		t.b = b
	}
	t.b.WriteString(s)
}

// String returns the text kept so far, without copying it.
func (t *Text) String() string {
	if t.b == nil {
		return ""
	}
	return t.b.String()
}

// Len returns the length of the text kept so far.
func (t *Text) Len() int {
	if t.b == nil {
		return 0
	}
	return t.b.Len()
}

// TooLong is the error of a stream whose answer went past Limits.MaxResponseBytes (err, the
// *providers.LimitError of Answer.Take): KindUnavailable, as a whole answer past the limit is,
// wrapping it. The caller sets StatusCode, RequestID, Partial and Usage.
func (x Errors) TooLong(err error) *providers.Error {
	return x.Finish(&providers.Error{Kind: providers.KindUnavailable,
		Message: "the streamed answer exceeds Limits.MaxResponseBytes; the stream ends there", Err: err})
}
