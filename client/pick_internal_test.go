package client

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// "May this route serve this call?" has one answer, the picker's (pick.go): every place that
// needs it — the walk, hedging, the fail-over wait, the budgets' count and price, CountTokens,
// the pre-flight window check, the next route telemetry names — asks mayServe or takes, never
// the filters themselves. So a filter a caller forgot cannot exist: each filter's primitive is
// read in pick.go alone (and where it is defined).
func TestPick_OnlyThePickerReadsTheFilters(t *testing.T) {
	filters := map[string][]string{
		"Has":            {"pick.go"},                // a provider's capabilities (caps.Has)
		"Missing":        {"pick.go"},                // what it lacks
		"holds":          {"pick.go"},                // the provider state a pinned call needs
		"fits":           {"pick.go"},                // the context window
		"available":      {"pick.go", "strategy.go"}, // ready now (strategy.go puts the ready deployments first)
		"RawToolSystems": {"count.go"},               // the raw tools' system, read once by rawSystem for the ask
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if allowed, guarded := filters[sel.Sel.Name]; guarded && !slices.Contains(allowed, name) {
				if sel.Sel.Name == "Has" && !strings.Contains(types(sel.X), "caps") {
					return true // another Has (a header, a capability set of its own)
				}
				t.Errorf("%s: %s calls %s, a filter of the picker: ask mayServe, takes or ready (pick.go) instead",
					fset.Position(call.Pos()), name, sel.Sel.Name)
			}
			return true
		})
	}
}

// types renders an expression, for telling which Has a call is.
func types(x ast.Expr) string {
	switch x := x.(type) {
	case *ast.SelectorExpr:
		return types(x.X) + "." + x.Sel.Name
	case *ast.Ident:
		return x.Name
	}
	return ""
}
