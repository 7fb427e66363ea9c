package main

import (
	"bytes"
	"strings"
	"testing"
)

// A stream with a passing package, a failing test, a skipped test and a package its TestMain
// skipped: the failure's whole output is printed, the skips are listed with their reasons, and
// the run does not pass.
func TestSummary_PrintsFailuresAndSkipsWithTheirReasons(t *testing.T) {
	stream := strings.Join([]string{
		`{"Action":"start","Package":"example/a"}`,
		`{"Action":"run","Package":"example/a","Test":"TestOK"}`,
		`{"Action":"pass","Package":"example/a","Test":"TestOK","Elapsed":0.01}`,
		`{"Action":"pass","Package":"example/a","Elapsed":1.5}`,
		`{"Action":"run","Package":"example/b","Test":"TestBroken"}`,
		`{"Action":"output","Package":"example/b","Test":"TestBroken","Output":"=== RUN   TestBroken\n"}`,
		`{"Action":"output","Package":"example/b","Test":"TestBroken","Output":"    b_test.go:9: got 2, want 3\n"}`,
		`{"Action":"output","Package":"example/b","Test":"TestBroken","Output":"--- FAIL: TestBroken (0.00s)\n"}`,
		`{"Action":"fail","Package":"example/b","Test":"TestBroken","Elapsed":0}`,
		`{"Action":"run","Package":"example/b","Test":"TestBrowser"}`,
		`{"Action":"output","Package":"example/b","Test":"TestBrowser","Output":"=== RUN   TestBrowser\n"}`,
		`{"Action":"output","Package":"example/b","Test":"TestBrowser","Output":"    b_test.go:20: chromium is not installed\n"}`,
		`{"Action":"output","Package":"example/b","Test":"TestBrowser","Output":"--- SKIP: TestBrowser (0.00s)\n"}`,
		`{"Action":"skip","Package":"example/b","Test":"TestBrowser","Elapsed":0}`,
		`{"Action":"output","Package":"example/b","Output":"FAIL\n"}`,
		`{"Action":"fail","Package":"example/b","Elapsed":2}`,
		`{"Action":"output","Package":"example/redis","Output":"skipping these tests: redis-server is not installed (apt-get install -y redis-server)\n"}`,
		`{"Action":"pass","Package":"example/redis","Elapsed":0.1}`,
		`{"Action":"skip","Package":"example/empty"}`,
		`not json: go's own line`,
	}, "\n")
	var out bytes.Buffer
	s := &summary{out: &out, module: "example", output: map[string][]string{}, builds: map[string][]string{}}
	if s.read(strings.NewReader(stream)) {
		t.Error("a run with a failed test passed")
	}
	got := out.String()
	for _, want := range []string{
		"ok    example/a", "b_test.go:9: got 2, want 3", "--- FAIL: TestBroken", "FAIL  example/b",
		"example/b TestBrowser: b_test.go:20: chromium is not installed",
		"example/redis (every test): skipping these tests: redis-server is not installed",
		"2 packages passed, 1 failed, 1 without tests (failed: example/b)", "not json: go's own line",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the summary lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "TestOK") {
		t.Errorf("a passing test's output was printed:\n%s", got)
	}
}

// A build that fails prints its output and fails the run.
func TestSummary_ABuildFailureFails(t *testing.T) {
	stream := `{"ImportPath":"example/c","Action":"build-output","Output":"c.go:3:1: syntax error\n"}
{"ImportPath":"example/c","Action":"build-fail"}
{"Action":"fail","Package":"example/c","Elapsed":0}`
	var out bytes.Buffer
	s := &summary{out: &out, module: "example", output: map[string][]string{}, builds: map[string][]string{}}
	if s.read(strings.NewReader(stream)) || !strings.Contains(out.String(), "c.go:3:1: syntax error") {
		t.Errorf("a failed build was not reported:\n%s", out.String())
	}
}
