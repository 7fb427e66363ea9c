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

// The Responses comparisons of issue 26 are medians of per-round ratios, marked against
// their goals (≤ ×0.5 in time and allocations, ≤ ×1 in memory per open stream).
func TestReportComparesTheResponsesWire(t *testing.T) {
	runs := map[string][]result{
		"BenchmarkChat/responses/steady":           {{"ns/op": 40, "allocs/op": 80}},
		"BenchmarkChat/responses/openai-go":        {{"ns/op": 100, "allocs/op": 320}},
		"BenchmarkStream/responses/steady":         {{"ns/op": 60, "allocs/op": 850, "allocs/chunk": 12, "ns/chunk": 1}},
		"BenchmarkStream/responses/openai-go":      {{"ns/op": 100, "allocs/op": 3700, "allocs/chunk": 50, "ns/chunk": 1.5}},
		"BenchmarkOpenStreams/responses/steady":    {{"B/stream": 7000}},
		"BenchmarkOpenStreams/responses/openai-go": {{"B/stream": 16000}},
	}
	var b strings.Builder
	report(&b, []string{"BenchmarkChat/responses/steady"}, runs, 1, "1s")
	for _, want := range []string{
		"| Chat, Responses wire: steady ÷ openai-go, time | ×0.400 | ≤ ×0.5 ✅ |",
		"| Chat, Responses wire: steady ÷ openai-go, allocs/op | ×0.250 | ≤ ×0.5 ✅ |",
		"| Stream, Responses wire: steady ÷ openai-go, time | ×0.600 | ≤ ×0.5 ❌ |",
		"| Stream, Responses wire: steady ÷ openai-go, allocs/chunk | ×0.240 | ≤ ×0.5 ✅ |",
		"| Stream, Responses wire: steady ÷ openai-go, ns/chunk | ×0.667 | ≤ ×0.5 ❌ |",
		"| Open stream, Responses wire: steady ÷ openai-go, B/stream | ×0.44 | ≤ ×1 ✅ |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in\n%s", want, b.String())
		}
	}
}
