package providers_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"testing"

	"github.com/steadyllm/steady/providers"
)

// Kinds lists every ErrorKind constant the package declares, once, sorted: a kind added to the
// const block but not to the table of traits would be missing from it.
func TestKinds_ListsEveryDeclaredKindOnce(t *testing.T) {
	pkgs, err := parser.ParseDir(token.NewFileSet(), ".", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []providers.ErrorKind
	for _, f := range pkgs["providers"].Files {
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "ErrorKind" {
				return true
			}
			for _, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, _ := strconv.Unquote(lit.Value)
					declared = append(declared, providers.ErrorKind(s))
				}
			}
			return true
		})
	}
	if len(declared) < 16 {
		t.Fatalf("found only %d declared kinds: %v", len(declared), declared)
	}
	slices.Sort(declared)
	if got := providers.Kinds(); !slices.Equal(got, declared) {
		t.Fatalf("Kinds() = %v, want the declared %v", got, declared)
	}
	k := providers.Kinds()
	k[0] = "changed"
	if providers.Kinds()[0] == "changed" {
		t.Fatal("Kinds shares its slice")
	}
}
