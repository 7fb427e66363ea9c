package config

import (
	"os"
	"strings"
	"testing"
)

// The README shows examples/config/appsettings.json, which the tests load: the two must not
// drift apart.
func TestReadme_ShowsTheExampleConfiguration(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```json\n"+string(example)+"```") {
		t.Fatalf("the README's configuration block differs from %s: copy the file into it", exampleFile)
	}
}
