package main

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	out := parse([]byte(`goos: linux
BenchmarkChat/openai/steady-2         	   35821	     34531 ns/op	   10823 B/op	      82 allocs/op
BenchmarkStream/openai/go-openai-2    	     943	   1252753 ns/op	        19.22 allocs/chunk	  321689 B/op	    3907 allocs/op
BenchmarkOpenStreams/anthropic/steady 	      16	  74231586 ns/op	      6174 B/stream
PASS
`))
	if len(out) != 3 {
		t.Fatalf("%d results: %v", len(out), out)
	}
	if r := out["BenchmarkChat/openai/steady"]; r["ns/op"] != 34531 || r["B/op"] != 10823 || r["allocs/op"] != 82 {
		t.Errorf("chat: %v", r)
	}
	if r := out["BenchmarkStream/openai/go-openai"]; r["allocs/chunk"] != 19.22 || r["allocs/op"] != 3907 {
		t.Errorf("stream: %v", r)
	}
	if r := out["BenchmarkOpenStreams/anthropic/steady"]; r["B/stream"] != 6174 {
		t.Errorf("open: %v", r)
	}
}

func TestMedianSpreadAndRatios(t *testing.T) {
	if m := median([]float64{5, 1, 3}); m != 3 {
		t.Errorf("median odd = %v", m)
	}
	if m := median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("median even = %v", m)
	}
	rs := []result{{"ns/op": 90}, {"ns/op": 100}, {"ns/op": 120}}
	if s := spread(rs); s != 30 {
		t.Errorf("spread = %v", s)
	}
	runs := map[string][]result{"a": {{"ns/op": 110}, {"ns/op": 220}}, "b": {{"ns/op": 100}, {"ns/op": 200}}}
	if r := perRound(runs, "a", "b", "ns/op", ratio); len(r) != 2 || r[0] != 1.1 || r[1] != 1.1 {
		t.Errorf("ratios = %v", r)
	}
	var b strings.Builder
	report(&b, []string{"a", "b"}, runs, 2, "1s")
	if !strings.Contains(b.String(), "| a | 165 |") {
		t.Errorf("report:\n%s", b.String())
	}
	if num(1234567) != "1 234 567" || num(19.22) != "19.22" {
		t.Errorf("num: %q %q", num(1234567), num(19.22))
	}
}
