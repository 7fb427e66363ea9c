// Command testsum reads the JSON stream of `go test -json` on its standard input and says, as
// it goes, what the test command is doing: each package as it ends (ok, FAIL, and how long it
// took), the whole output of every test and build that failed, and at the end what was
// skipped and why — a test's t.Skip reason, or a package whose TestMain skipped it for a
// missing service ("skipping these tests: …"). scripts/test.sh runs every module's tests
// through it. It exits 1 when anything failed, 0 otherwise; a line that is not JSON (go's own
// messages) is printed as it is.
//
// Usage: go test -json ./... | go run ./internal/testkit/testsum -module NAME
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// event is one record of test2json (go doc test2json), with the build events of go 1.24.
type event struct {
	Action     string
	Package    string
	ImportPath string // build-output, build-fail
	Test       string
	Elapsed    float64
	Output     string
}

// skip is one test or package skipped, with the reason it gave.
type skip struct {
	what, why string
}

// summary follows one module's run.
type summary struct {
	out    io.Writer
	module string
	// output buffers the lines of each test ("pkg\x00test") and package ("pkg\x00") until it
	// ends: printed whole when it fails, read for the reason when it skips.
	output  map[string][]string
	builds  map[string][]string // build output by import path
	skips   []skip
	passed  int
	failed  []string
	noTests int
}

func main() {
	module := flag.String("module", ".", "the module's name, for the summary")
	flag.Parse()
	s := &summary{out: os.Stdout, module: *module, output: map[string][]string{}, builds: map[string][]string{}}
	if !s.read(os.Stdin) {
		os.Exit(1)
	}
}

// read follows the stream r to its end and reports whether nothing failed.
func (s *summary) read(r io.Reader) bool {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20) // a test may print long lines
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(s.out, "%s\n", line)
			continue
		}
		s.handle(e)
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(s.out, "testsum: reading the test output: %v\n", err)
		s.failed = append(s.failed, "(the test output could not be read)")
	}
	s.report()
	return len(s.failed) == 0
}

func (s *summary) handle(e event) {
	key := e.Package + "\x00" + e.Test
	switch e.Action {
	case "output":
		s.output[key] = append(s.output[key], e.Output)
	case "build-output":
		s.builds[e.ImportPath] = append(s.builds[e.ImportPath], e.Output)
	case "build-fail":
		fmt.Fprintf(s.out, "BUILD FAILED %s\n%s", e.ImportPath, strings.Join(s.builds[e.ImportPath], ""))
		s.failed = append(s.failed, e.ImportPath+" (build)")
		delete(s.builds, e.ImportPath)
	case "skip":
		if e.Test != "" {
			s.skips = append(s.skips, skip{what: e.Package + " " + e.Test, why: reason(s.output[key])})
		} else {
			s.noTests++
		}
		delete(s.output, key)
	case "pass":
		if e.Test == "" {
			s.passed++
			fmt.Fprintf(s.out, "ok    %-60s %s\n", e.Package, seconds(e.Elapsed))
			if why := packageSkip(s.output[key]); why != "" {
				s.skips = append(s.skips, skip{what: e.Package + " (every test)", why: why})
			}
		}
		delete(s.output, key)
	case "fail":
		lines := s.output[key]
		delete(s.output, key)
		if e.Test != "" {
			fmt.Fprint(s.out, strings.Join(lines, ""))
			return
		}
		s.failed = append(s.failed, e.Package)
		fmt.Fprintf(s.out, "%sFAIL  %-60s %s\n", strings.Join(lines, ""), e.Package, seconds(e.Elapsed))
	}
}

// report prints what the module's run came to, and what it skipped.
func (s *summary) report() {
	fmt.Fprintf(s.out, "== %s: %d packages passed, %d failed, %d without tests", s.module, s.passed, len(s.failed), s.noTests)
	if len(s.failed) > 0 {
		fmt.Fprintf(s.out, " (failed: %s)", strings.Join(s.failed, ", "))
	}
	fmt.Fprintln(s.out)
	if len(s.skips) == 0 {
		return
	}
	slices.SortFunc(s.skips, func(a, b skip) int { return strings.Compare(a.what, b.what) })
	fmt.Fprintf(s.out, "== %s: skipped %d:\n", s.module, len(s.skips))
	for _, k := range s.skips {
		fmt.Fprintf(s.out, "   %s: %s\n", k.what, k.why)
	}
}

// reason is the reason a skipped test gave: what it printed before its "--- SKIP" line (t.Skip's
// message, with its file and line, which say where), "no reason given" when it printed nothing.
func reason(lines []string) string {
	var why []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		why = append(why, t)
	}
	if len(why) == 0 {
		return "no reason given"
	}
	return strings.Join(why, " ")
}

// packageSkip finds the line a TestMain prints when it skips its package's tests for a
// missing service, "" when there is none.
func packageSkip(lines []string) string {
	for _, l := range lines {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "skipping ") {
			return t
		}
	}
	return ""
}

func seconds(s float64) string {
	return (time.Duration(s * float64(time.Second))).Round(10 * time.Millisecond).String()
}
