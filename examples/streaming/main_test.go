package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestStreamingExample(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"[openai: status 529, retrying in", "Streams survive the real world when every layer plays its part.", "[done from openai", ": stop,"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
