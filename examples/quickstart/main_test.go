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
		"attempt 1 of 4 -> 429 Too Many Requests",
		"waiting 1s before retrying (status 429; from the server's Retry-After)",
		"attempt 2 of 4 -> 503 Service Unavailable",
		"(status 503; from exponential backoff)",
		"attempt 3 of 4 -> 200 OK",
		`answer: "Hello from the fake LLM server!"`,
		"circuit is closed",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}

func TestQuickstart_LiveNeedsAKey(t *testing.T) {
	var out bytes.Buffer
	err := runLive(context.Background(), &out, func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Fatalf("got %v", err)
	}
}
