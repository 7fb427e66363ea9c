package observe_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/steadyllm/steady/resilience"
)

// metricsGuide holds the metrics table: the operating guide.
const metricsGuide = "../docs/operating.md"

// metricConstants returns the value of every exported Metric… constant of this package, read
// from its source, so that an instrument added later is checked without a change here.
func metricConstants(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !strings.HasPrefix(n.Name, "Metric") || !n.IsExported() || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s: %s is not a string literal", f, n.Name)
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out[n.Name] = v
				}
			}
		}
	}
	if len(out) < 20 {
		t.Fatalf("found %d Metric constants in the source, fewer than the 20 this test was written with", len(out))
	}
	return out
}

// The operating guide's metric table lists every instrument and every reason a give-up, a
// bulkhead refusal and a time limit are counted under, so the documentation cannot fall behind
// the code.
func TestGuide_ListsEveryMetricAndReason(t *testing.T) {
	b, err := os.ReadFile(metricsGuide)
	if err != nil {
		t.Fatal(err)
	}
	guide := string(b)
	for name, m := range metricConstants(t) {
		if !strings.Contains(guide, "| `"+m+"` |") {
			t.Errorf("%s: the metric table has no row for %s (%s)", metricsGuide, m, name)
		}
	}
	for _, g := range []resilience.GaveUp{resilience.GaveUpExhausted, resilience.GaveUpBudget, resilience.GaveUpHintTooLong,
		resilience.GaveUpDeadline, resilience.GaveUpCircuitOpen, resilience.GaveUpWaitTooLong, resilience.GaveUpProbe,
		resilience.GaveUpSilent, resilience.GaveUpNotRetryable} {
		if !strings.Contains(guide, "`"+string(g)+"`") {
			t.Errorf("%s does not name the give-up reason %s", metricsGuide, g)
		}
	}
	for _, r := range []resilience.BulkheadRejection{resilience.RejectedFull, resilience.RejectedTimeout, resilience.RejectedShed} {
		if !strings.Contains(guide, "`"+string(r)+"`") {
			t.Errorf("%s does not name the bulkhead rejection %s", metricsGuide, r)
		}
	}
	for _, l := range []resilience.TimeLimit{resilience.TimeoutTotal, resilience.TimeoutAttempt, resilience.TimeoutStreamIdle,
		resilience.TimeoutFirstToken, resilience.TimeoutProbe} {
		if !strings.Contains(guide, "`"+string(l)+"`") {
			t.Errorf("%s does not name the time limit %s", metricsGuide, l)
		}
	}
}

// Every steady metric the README and the guides name exists: an alert or a dashboard written
// from the docs never waits on a series that is never exported. A Prometheus exporter's
// suffixes (_seconds, _bucket, _count, _sum) are allowed on the names.
func TestGuides_NameOnlyMetricsThatExist(t *testing.T) {
	known := map[string]bool{}
	for _, m := range metricConstants(t) {
		known[m] = true
	}
	docs, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`llm_resilience_[a-z_]*[a-z]`)
	var unknown []string
	for _, f := range append(docs, "../README.md") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range name.FindAllString(string(b), -1) {
			base := m
			for _, suffix := range []string{"_bucket", "_count", "_sum", "_seconds"} {
				base = strings.TrimSuffix(base, suffix)
			}
			if !known[m] && !known[base] {
				unknown = append(unknown, f+": "+m)
			}
		}
	}
	sort.Strings(unknown)
	for _, u := range unknown {
		t.Errorf("names a metric that does not exist: %s", u)
	}
}
