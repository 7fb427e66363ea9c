package main

import (
	"bytes"
	"context"
	"testing"
)

// The output docs/wire.md shows.
func TestWire_EachFeatureReadsBack(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	want := `receipt: {Shop:text Total:1}; thought 1 block(s); cache written 17 tokens, read 0
rate limit: 499 of 500 requests left this minute
responses: stored true, the next turn served by openai (completed)
background: [queued in_progress], then completed: "Write a long report."
gone: not_found after "one two three"; with WithRestartIfGone, 1 restart then "a new answer"; claude asked 0 times
conversation: prompts of [4 10] tokens, the second turn reading the first
compaction: an item came back: true; OpenAI down: the whole transcript served by claude; the pruned one failed (openai overloaded), not sent elsewhere: true
server tools: served by claude (openai asked 0 times); kept server_tool_use, web_search_tool_result
`
	if got := out.String(); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}
