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
`
	if got := out.String(); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}
