package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// The output docs/failures.md shows, line by line.
func TestFailures_EachFailureEndsAsTheGuideSays(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	want := `[continued after "one two three four five"]
"one two three four five six seven eight" from claude; 1 failed attempt(s) before it
"read it all" from large; small saw 1 request(s)
FallbackOn context_too_long: "read it all" from large; other saw 0 request(s)
FallbackOn false: refused by strict: "I can't help with that."
FallbackOn true: "Here is how." from other
claude failed: overloaded (HTTP 529, 4 attempts, gave up: exhausted); try later: true
  openai: quota_exhausted
  claude: overloaded
`
	if got := out.String(); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	if strings.Contains(out.String(), "sk-") {
		t.Fatal("a key reached the output")
	}
}
