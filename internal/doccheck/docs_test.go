package doccheck

import (
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// root is the repository's top directory, seen from this package's.
const root = "../.."

// maxReadmeLines is the front door's size: what a newcomer reads in five minutes.
const maxReadmeLines = 350

// guides returns README.md and every docs/*.md, as paths relative to root.
func guides(t *testing.T) []string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"README.md"}
	for _, m := range matches {
		rel, err := filepath.Rel(root, m)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, filepath.ToSlash(rel))
	}
	return files
}

// markdownFiles returns every Markdown file of the repository that links to others: the
// guides and the READMEs of packages and examples.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	files := guides(t)
	for _, extra := range []string{"health/README.md", "bench/README.md", "examples/health/README.md"} {
		if _, err := os.Stat(filepath.Join(root, extra)); err == nil {
			files = append(files, extra)
		}
	}
	return files
}

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checked says which blocks must name a source: Go code and JSON configuration. Shell
// commands and program output are shown as they are.
func checked(lang string) bool { return lang == "go" || lang == "json" }

// Every Go and JSON block of the README and the guides is the text of a file the test suite
// compiles, runs or loads — a whole file or a marked region of one — so none can drift.
func TestDocs_CodeBlocksAreTheirSources(t *testing.T) {
	for _, file := range guides(t) {
		bs, err := blocks(read(t, file))
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		for _, b := range bs {
			if err := matchSource(b); err != nil {
				t.Errorf("%s:%d: %v", file, b.line, err)
			}
		}
	}
}

// matchSource checks one block against the source it names.
func matchSource(b block) error {
	if b.source == "" {
		if checked(b.lang) {
			return fmt.Errorf("a %s block without a source: put <!-- source: path#region --> on the line before it", b.lang)
		}
		return nil
	}
	file, name, isRegion := strings.Cut(b.source, "#")
	src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
	if err != nil {
		return fmt.Errorf("source %s: %v", b.source, err)
	}
	want := string(src)
	if isRegion {
		if want, err = region(want, name); err != nil {
			return fmt.Errorf("source %s: %v", b.source, err)
		}
	}
	if b.text != want {
		return fmt.Errorf("the block differs from %s; it should read:\n%s", b.source, want)
	}
	return nil
}

// Every relative link of the Markdown files leads to a file that exists, and every anchor to
// a heading of the file it names.
func TestDocs_LinksResolve(t *testing.T) {
	anchorsOf := map[string]map[string]bool{}
	for _, file := range markdownFiles(t) {
		for _, l := range links(read(t, file)) {
			if err := resolve(t, file, l.target, anchorsOf); err != nil {
				t.Errorf("%s:%d: link %s: %v", file, l.line, l.target, err)
			}
		}
	}
}

func resolve(t *testing.T, from, target string, anchorsOf map[string]map[string]bool) error {
	u, err := url.Parse(target)
	if err != nil {
		return err
	}
	if u.Scheme != "" || u.Host != "" {
		if u.Scheme != "https" && u.Scheme != "http" && u.Scheme != "mailto" {
			return fmt.Errorf("scheme %q", u.Scheme)
		}
		return nil // not followed: the test suite stays offline
	}
	file := from
	if u.Path != "" {
		file = path.Clean(path.Join(path.Dir(from), u.Path))
		if strings.HasPrefix(file, "../") {
			return fmt.Errorf("leads outside the repository")
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(file))); err != nil {
			return fmt.Errorf("no such file %s", file)
		}
	}
	if u.Fragment == "" {
		return nil
	}
	if !strings.HasSuffix(file, ".md") {
		return fmt.Errorf("an anchor into %s, which is not Markdown", file)
	}
	a, ok := anchorsOf[file]
	if !ok {
		a = anchors(read(t, file))
		anchorsOf[file] = a
	}
	if !a[u.Fragment] {
		return fmt.Errorf("%s has no heading for #%s", file, u.Fragment)
	}
	return nil
}

// The README is a front door: short, and leading to every guide.
func TestDocs_ReadmeIsAFrontDoorToEveryGuide(t *testing.T) {
	readme := read(t, "README.md")
	if n := strings.Count(readme, "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines, more than %d: move the detail into a guide in docs/", n, maxReadmeLines)
	}
	linked := map[string]bool{}
	for _, l := range links(readme) {
		p, _, _ := strings.Cut(l.target, "#")
		linked[path.Clean(p)] = true
	}
	var missing []string
	for _, g := range guides(t)[1:] {
		if !linked[g] {
			missing = append(missing, g)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("README.md links to no part of %v", missing)
	}
}
