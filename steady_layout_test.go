package steady_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Test support lives in internal/testkit and is imported by tests alone: no code a user's
// program builds may depend on it. And the provider kit (providers/internal/wire) serves the
// providers only, which Go's internal rule already enforces.
func TestLayout_TestSupportIsImportedByTestsOnly(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
			strings.HasPrefix(filepath.ToSlash(path), "internal/testkit/") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); strings.Contains(p, "/internal/testkit") {
				t.Errorf("%s imports %s: test support is for tests only", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
