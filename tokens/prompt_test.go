package tokens_test

import (
	"os"
	"testing"
)

// readSystemPrompt returns testdata/system-prompt.txt: a long system prompt of the kind a
// service sends on every call (rules, a FAQ, a JSON example), counted in the benchmarks.
func readSystemPrompt(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile("testdata/system-prompt.txt")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
