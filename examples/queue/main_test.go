package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// Every job finishes; the failed calls went back to the queue with their due times (the
// server's hint for the 429, the backoff for the overload); no call held a worker for the
// hint.
func TestQueue(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if strings.Count(text, ": done:") != 3 || !strings.Contains(text, "all jobs finished") {
		t.Fatalf("not every job finished:\n%s", text)
	}
	for _, want := range []string{"rate_limited; back at", "(server_hint)", "overloaded; back at", "(backoff)"} {
		if !strings.Contains(text, want) {
			t.Errorf("the output lacks %q:\n%s", want, text)
		}
	}
	// The hint is 1.5 s: a worker that slept through it would have spent that long on a call.
	_, after, _ := strings.Cut(text, "the longest a worker spent on one call: ")
	longest, err := time.ParseDuration(strings.Fields(after)[0])
	if err != nil || longest >= time.Second {
		t.Errorf("longest call %v (%v): a worker waited", longest, err)
	}
}
