package wire

import (
	"errors"
	"strings"
	"testing"

	"github.com/steadyllm/steady/providers"
)

// A kept text grows by doubling but never past what its answer may still hold: at the limit,
// its buffer is the limit, not the next power of two past it.
func TestAnswer_TextGrowsToTheLimitNotPastIt(t *testing.T) {
	const max = 3<<20 + 17
	var a Answer
	a.Init(max)
	var text, other Text
	piece := strings.Repeat("z", 61)
	var err error
	for i := 0; err == nil; i++ {
		if err = a.Take(len(piece)); err == nil {
			if i%10 == 0 {
				a.Add(&other, piece) // another text of the same answer takes its share
			} else {
				a.Add(&text, piece)
			}
		}
	}
	var le *providers.LimitError
	if !errors.As(err, &le) || le.Limit != "MaxResponseBytes" || le.Max != max {
		t.Fatalf("Take past the limit: %v", err)
	}
	if n := text.Len() + other.Len(); n > max || n <= max-len(piece) {
		t.Fatalf("the texts hold %d bytes, want the answer up to %d", n, max)
	}
	if c := text.b.Cap() + other.b.Cap(); c > max+max/8 {
		t.Fatalf("the texts' buffers hold %d bytes for %d of text, a limit of %d", c, text.Len()+other.Len(), max)
	}
	if !strings.HasPrefix(text.String(), piece+piece) || text.String()[len(text.String())-len(piece):] != piece {
		t.Fatalf("the text is not what was added")
	}
}

// What a delta counts for: its text, reasoning and tool calls, each byte once.
func TestAnswer_SizeCountsEveryByteOfADelta(t *testing.T) {
	d := providers.Delta{Text: "abc", Reasoning: "de", ToolCalls: []providers.ToolCallDelta{{ID: "f", Name: "gh", Arguments: "ijkl"}}}
	if n := Size(&d); n != 12 {
		t.Fatalf("Size = %d, want 12", n)
	}
	var a Answer
	a.Init(5)
	if a.Take(5) != nil || a.Take(1) == nil || a.Take(0) != nil {
		t.Fatal("Take does not stop exactly at the limit")
	}
}
