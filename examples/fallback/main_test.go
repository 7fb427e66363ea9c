package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestFallbackExample(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	want := strings.Join([]string{
		`call 1: "Answered by the primary." from primary (model gpt-4o); primary saw 1 requests, its circuit is closed`,
		`-- the primary goes down: every call 503`,
		`call 2: "Answered by the secondary." from secondary (model llama-3.3-70b); primary saw 3 requests, its circuit is closed`,
		`call 3: "Answered by the secondary." from secondary (model llama-3.3-70b); primary saw 2 requests, its circuit is open`,
		`call 4: "Answered by the secondary." from secondary (model llama-3.3-70b); primary saw 0 requests, its circuit is open`,
		`-- the primary comes back`,
		`call 5: "Answered by the primary." from primary (model gpt-4o); primary saw 1 requests, its circuit is closed`,
	}, "\n") + "\n"
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
}
