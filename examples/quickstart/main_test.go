package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestQuickstart_SurvivesTheScriptedFailures(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		"attempt 1/4 -> 503",
		"retrying after", "status 503, backoff",
		"attempt 2/4 -> 429",
		"(status 429, server hint)",
		"attempt 3/4 -> 200",
		`answer: "Hello from the fake LLM server!"`,
		"survived 2 failures",
		"circuit is closed",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}
