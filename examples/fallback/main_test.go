package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestFallbackExample(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		`call 1: "Answered by the secondary." from secondary (model llama-3.3-70b); primary saw 3 requests, its circuit is closed`,
		`call 2: "Answered by the secondary." from secondary (model llama-3.3-70b); primary saw 2 requests, its circuit is open`,
		`call 3: "Answered by the secondary." from secondary (model llama-3.3-70b); primary saw 0 requests, its circuit is open`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}
