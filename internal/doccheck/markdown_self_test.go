package doccheck

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The checks below would pass on anything if their readers found nothing: these tests show
// what each reader finds, and that a drifted block, a wrong anchor and a missing source fail.

func TestBlocks_FindFencesLanguagesAndSources(t *testing.T) {
	md := "intro\n\n<!-- source: a/b.go#x -->\n```go\nfunc f() {}\n```\n\n" +
		"```sh\ngo test ./...\n```\n" +
		"- a list item:\n\n  <!-- source: c.json -->\n  ```json\n  {\"LLM\": {}}\n  ```\n" +
		"<!-- source: not/this.go -->\ntext between\n```go\nx := 1\n```\n"
	got, err := blocks(md)
	if err != nil {
		t.Fatal(err)
	}
	want := []block{
		{line: 4, lang: "go", text: "func f() {}\n", source: "a/b.go#x"},
		{line: 8, lang: "sh", text: "go test ./...\n"},
		{line: 14, lang: "json", text: "{\"LLM\": {}}\n", source: "c.json"},
		{line: 19, lang: "go", text: "x := 1\n"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	if _, err := blocks("```go\nnever closed\n"); err == nil {
		t.Fatal("an unclosed block was accepted")
	}
}

func TestRegion_DedentsAndDropsNestedMarkers(t *testing.T) {
	src := "package p\n\nfunc f() {\n\t// docs:begin outer\n\tif x {\n\t\t// docs:begin inner\n\t\ty()\n\t\t// docs:end inner\n\t}\n\n\tz()\n\t// docs:end outer\n}\n"
	got, err := region(src, "outer")
	if err != nil {
		t.Fatal(err)
	}
	if want := "if x {\n\ty()\n}\n\nz()\n"; got != want {
		t.Fatalf("outer: got %q, want %q", got, want)
	}
	if got, _ := region(src, "inner"); got != "y()\n" {
		t.Fatalf("inner: got %q", got)
	}
	if _, err := region(src, "missing"); err == nil {
		t.Fatal("a missing region was found")
	}
	if _, err := region(src+"// docs:begin outer\n", "outer"); err == nil {
		t.Fatal("a region that begins twice was accepted")
	}
}

func TestMatchSource_FailsOnDriftAndOnAMissingSource(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "x.go")
	if err := os.WriteFile(src, []byte("package x\n\n// docs:begin r\nvar A = 1\n// docs:end r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// root is relative, the temporary directory absolute: the path from one to the other goes
	// through the absolute root (filepath.Rel cannot mix them, and the test was skipped).
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(abs, src)
	if err != nil {
		t.Fatal(err)
	}
	rel = filepath.ToSlash(rel)
	if err := matchSource(block{lang: "go", text: "var A = 1\n", source: rel + "#r"}); err != nil {
		t.Fatalf("the same text failed: %v", err)
	}
	if err := matchSource(block{lang: "go", text: "var A = 2\n", source: rel + "#r"}); err == nil {
		t.Fatal("a drifted block passed")
	}
	if err := matchSource(block{lang: "go", text: "var A = 1\n"}); err == nil {
		t.Fatal("a Go block without a source passed")
	}
	if err := matchSource(block{lang: "sh", text: "go test\n"}); err != nil {
		t.Fatalf("a shell block needs no source: %v", err)
	}
}

func TestSlug_IsGitHubs(t *testing.T) {
	for heading, want := range map[string]string{
		"Several instances, one view (Redis)":                   "several-instances-one-view-redis",
		"Configuration (`LLM.Resilience`)":                      "configuration-llmresilience",
		"Overload: priorities and adaptive concurrency":         "overload-priorities-and-adaptive-concurrency",
		"`LLM.Providers.<name>`":                                "llmprovidersname",
		"go-retryablehttp, and how its defects are neutralised": "go-retryablehttp-and-how-its-defects-are-neutralised",
		"[Streams](x.md) and rescue":                            "streams-and-rescue",
		"What `HedgeQuantile` means":                            "what-hedgequantile-means",
	} {
		if got := slug(heading); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}
}

func TestAnchorsAndLinks_SkipCodeAndNumberDuplicates(t *testing.T) {
	md := "# Title\n## Keys\n## Keys\n```md\n## Not a heading\n[x](nowhere.md)\n```\n" +
		"See [keys](#keys), `[not](a-link.md)` and [the other](other.md#keys-1).\n<a id=\"here\"></a>\n"
	a := anchors(md)
	for _, want := range []string{"title", "keys", "keys-1", "here"} {
		if !a[want] {
			t.Errorf("no anchor %q in %v", want, a)
		}
	}
	if a["not-a-heading"] {
		t.Error("a heading inside a code block became an anchor")
	}
	var targets []string
	for _, l := range links(md) {
		targets = append(targets, l.target)
	}
	if want := []string{"#keys", "other.md#keys-1"}; strings.Join(targets, " ") != strings.Join(want, " ") {
		t.Fatalf("links %v, want %v", targets, want)
	}
}
