// Command benchreport runs the benchmarks of the bench module in interleaved rounds and
// prints the medians, the spread of each, and the comparisons the README reports.
//
//	cd bench && go run ./cmd/benchreport -rounds 5
//
// Each round runs every benchmark once (-count 1), in a rotating order, in a fresh process,
// so that a noisy period of the machine touches every benchmark a little instead of one
// benchmark a lot. Ratios between two benchmarks (steady over go-openai, say) are taken
// within each round, where both ran minutes apart at most, and the median of those ratios is
// reported. Allocations and bytes are exact and do not vary between rounds; time does, and
// the spread column says by how much.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

func main() {
	rounds := flag.Int("rounds", 5, "how many times each benchmark runs")
	benchtime := flag.String("benchtime", "1s", "-test.benchtime of each run")
	openTime := flag.String("opentime", "3x", "-test.benchtime of the open-stream benchmarks")
	filter := flag.String("bench", ".", "which benchmarks to run (a -test.bench pattern)")
	flag.Parse()
	if err := run(*rounds, *benchtime, *openTime, *filter, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

// result is one benchmark's figures from one run: unit → value.
type result map[string]float64

func run(rounds int, benchtime, openTime, filter string, out io.Writer) error {
	dir, err := os.MkdirTemp("", "benchreport")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "bench.test")
	build := exec.Command("go", "test", "-c", "-o", bin, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building the benchmarks: %w", err)
	}
	fmt.Fprintln(os.Stderr, "listing the benchmarks…")
	names, err := list(bin, filter)
	if err != nil {
		return err
	}
	runs := map[string][]result{}
	for r := range rounds {
		for i := range names {
			name := names[(i+r)%len(names)] // rotate, so no benchmark always runs first
			bt := benchtime
			if strings.HasPrefix(name, "BenchmarkOpenStreams/") {
				bt = openTime
			}
			fmt.Fprintf(os.Stderr, "round %d/%d: %s\n", r+1, rounds, name)
			res, err := runOne(bin, name, bt)
			if err != nil {
				return err
			}
			runs[name] = append(runs[name], res)
		}
	}
	report(out, names, runs, rounds, benchtime)
	return nil
}

var line = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

// parse reads `go test -bench` output into results by benchmark name.
func parse(b []byte) map[string]result {
	out := map[string]result{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		res := result{}
		f := strings.Fields(m[2])
		for i := 0; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				res[f[i+1]] = v
			}
		}
		out[m[1]] = res
	}
	return out
}

// list runs every benchmark once (-benchtime 1x) to learn the names of the sub-benchmarks.
func list(bin, filter string) ([]string, error) {
	b, err := exec.Command(bin, "-test.run", "^$", "-test.bench", filter, "-test.benchtime", "1x").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("listing: %w\n%s", err, b)
	}
	var names []string
	for name := range parse(b) {
		names = append(names, name)
	}
	slices.Sort(names)
	if len(names) == 0 {
		return nil, fmt.Errorf("no benchmark matches %q", filter)
	}
	return names, nil
}

// runOne runs one benchmark, named exactly, in a fresh process.
func runOne(bin, name, benchtime string) (result, error) {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	b, err := exec.Command(bin, "-test.run", "^$", "-test.bench", strings.Join(parts, "/"),
		"-test.benchmem", "-test.benchtime", benchtime, "-test.count", "1").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s: %w\n%s", name, err, b)
	}
	res, ok := parse(b)[name]
	if !ok {
		return nil, fmt.Errorf("%s: no result in\n%s", name, b)
	}
	return res, nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func values(rs []result, unit string) []float64 {
	var v []float64
	for _, r := range rs {
		if x, ok := r[unit]; ok {
			v = append(v, x)
		}
	}
	return v
}

// spread is (max − min) / median of a benchmark's times, in percent.
func spread(rs []result) float64 {
	v := values(rs, "ns/op")
	m := median(v)
	if m == 0 {
		return 0
	}
	return (slices.Max(v) - slices.Min(v)) / m * 100
}

// perRound returns f applied to the results of round i of benchmarks a and b.
func perRound(runs map[string][]result, a, b, unit string, f func(x, y float64) float64) []float64 {
	var out []float64
	for i := range min(len(runs[a]), len(runs[b])) {
		x, okx := runs[a][i][unit]
		y, oky := runs[b][i][unit]
		if okx && oky {
			out = append(out, f(x, y))
		}
	}
	return out
}

func ratio(x, y float64) float64 { return x / y }

func report(w io.Writer, names []string, runs map[string][]result, rounds int, benchtime string) {
	fmt.Fprintf(w, "%s, %d CPUs (GOMAXPROCS %d), %s %s/%s; %d interleaved rounds, -benchtime %s (open streams: 2 000 at once)\n\n",
		cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH, rounds, benchtime)

	fmt.Fprintln(w, "| benchmark | ns/op (median) | spread | B/op | allocs/op | other |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---|")
	var spreads []float64
	for _, name := range names {
		rs := runs[name]
		s := spread(rs)
		spreads = append(spreads, s)
		var other []string
		for _, unit := range []string{"allocs/chunk", "ns/chunk", "B/stream"} {
			if v := values(rs, unit); len(v) > 0 {
				other = append(other, fmt.Sprintf("%s %s", num(median(v)), unit))
			}
		}
		fmt.Fprintf(w, "| %s | %s | ±%.0f %% | %s | %s | %s |\n", strings.TrimPrefix(name, "Benchmark"),
			num(median(values(rs, "ns/op"))), s/2, num(median(values(rs, "B/op"))),
			num(median(values(rs, "allocs/op"))), strings.Join(other, ", "))
	}
	fmt.Fprintf(w, "\nNoise: the median benchmark's times spread over ±%.0f %% of its median across rounds (widest ±%.0f %%).\n\n",
		median(spreads)/2, slices.Max(spreads)/2)

	fmt.Fprintln(w, "| comparison (medians of per-round ratios) | value | goal |")
	fmt.Fprintln(w, "|---|---:|---|")
	cmp := func(label string, v []float64, format string, goal string, ok func(float64) bool) {
		if len(v) == 0 {
			return
		}
		m := median(v)
		mark := ""
		if ok != nil {
			mark = " ❌"
			if ok(m) {
				mark = " ✅"
			}
		}
		fmt.Fprintf(w, "| %s | "+format+" | %s%s |\n", label, m, goal, mark)
	}
	diff := func(x, y float64) float64 { return x - y }
	for _, k := range []string{"Chat", "Stream"} {
		a, b := "Benchmark"+k+"/openai/steady", "Benchmark"+k+"/openai/go-openai"
		cmp(k+", OpenAI wire: steady ÷ go-openai, time", perRound(runs, a, b, "ns/op", ratio), "×%.3f", "≤ ×1.05", func(x float64) bool { return x <= 1.05 })
		cmp(k+", OpenAI wire: steady − go-openai, allocs/op", perRound(runs, a, b, "allocs/op", diff), "%+.0f", "≤ +7", func(x float64) bool { return x <= 7 })
		cmp(k+", OpenAI wire: steady ÷ openai-go, time", perRound(runs, a, "Benchmark"+k+"/openai/openai-go", "ns/op", ratio), "×%.3f", "", nil)
		cmp(k+", Anthropic wire: steady ÷ anthropic-sdk-go, time", perRound(runs, "Benchmark"+k+"/anthropic/steady", "Benchmark"+k+"/anthropic/anthropic-sdk-go", "ns/op", ratio), "×%.3f", "", nil)
	}
	cmp("Stream, OpenAI wire: steady − go-openai, allocs/chunk", perRound(runs, "BenchmarkStream/openai/steady", "BenchmarkStream/openai/go-openai", "allocs/chunk", diff),
		"%+.2f", "≤ 0", func(x float64) bool { return x <= 0.005 })
	// Issue 26: the Responses wire against openai-go's Responses client.
	half := func(x float64) bool { return x <= 0.5 }
	for _, k := range []string{"Chat", "Stream"} {
		a, b := "Benchmark"+k+"/responses/steady", "Benchmark"+k+"/responses/openai-go"
		cmp(k+", Responses wire: steady ÷ openai-go, time", perRound(runs, a, b, "ns/op", ratio), "×%.3f", "≤ ×0.5", half)
		cmp(k+", Responses wire: steady ÷ openai-go, allocs/op", perRound(runs, a, b, "allocs/op", ratio), "×%.3f", "≤ ×0.5", half)
	}
	for _, unit := range []string{"ns/chunk", "allocs/chunk"} {
		cmp("Stream, Responses wire: steady ÷ openai-go, "+unit, perRound(runs, "BenchmarkStream/responses/steady", "BenchmarkStream/responses/openai-go", unit, ratio),
			"×%.3f", "≤ ×0.5", half)
	}
	cmp("Open stream, Responses wire: steady ÷ openai-go, B/stream", perRound(runs, "BenchmarkOpenStreams/responses/steady", "BenchmarkOpenStreams/responses/openai-go", "B/stream", ratio),
		"×%.2f", "≤ ×1", func(x float64) bool { return x <= 1 })
	cmp("Open stream, OpenAI wire: steady ÷ openai-go, B/stream", perRound(runs, "BenchmarkOpenStreams/openai/steady", "BenchmarkOpenStreams/openai/openai-go", "B/stream", ratio),
		"×%.2f", "≤ ×1", func(x float64) bool { return x <= 1 })
	cmp("Open stream, Anthropic wire: steady ÷ anthropic-sdk-go, B/stream", perRound(runs, "BenchmarkOpenStreams/anthropic/steady", "BenchmarkOpenStreams/anthropic/anthropic-sdk-go", "B/stream", ratio),
		"×%.2f", "≤ ×1", func(x float64) bool { return x <= 1 })

	var over []float64
	for i := range min(len(runs["BenchmarkSuccess/base"]), len(runs["BenchmarkSuccess/steady"]), len(runs["BenchmarkSuccess/failsafe"])) {
		base := runs["BenchmarkSuccess/base"][i]["ns/op"]
		over = append(over, (runs["BenchmarkSuccess/steady"][i]["ns/op"]-base)/(runs["BenchmarkSuccess/failsafe"][i]["ns/op"]-base))
	}
	cmp("Pipeline overhead: steady ÷ failsafe-go (each minus the bare transport), time", over, "×%.2f", "≤ ×0.35", func(x float64) bool { return x <= 0.35 })
	cmp("Pipeline: steady − bare transport, allocs/op", perRound(runs, "BenchmarkSuccess/steady", "BenchmarkSuccess/base", "allocs/op", diff), "%+.0f", "≤ 4", func(x float64) bool { return x <= 4 })
	for _, name := range []string{"BenchmarkCircuitOpen/steady", "BenchmarkBulkheadFull/steady"} {
		cmp("Fast fail "+strings.TrimPrefix(name, "Benchmark")+", ns/op", values(runs[name], "ns/op"), "%.0f", "< 300", func(x float64) bool { return x < 300 })
		cmp("Fast fail "+strings.TrimPrefix(name, "Benchmark")+", allocs/op", values(runs[name], "allocs/op"), "%.0f", "1", func(x float64) bool { return x <= 1 })
	}
}

// num formats v with thin grouping of thousands, without decimals for large numbers.
func num(v float64) string {
	if v < 100 && v != float64(int64(v)) {
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	s := strconv.FormatInt(int64(v+0.5), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + " " + s[i:]
	}
	return s
}

// cpuModel names the processor, from /proc/cpuinfo where there is one.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err == nil {
		for l := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				return strings.TrimSpace(v)
			}
		}
	}
	return runtime.GOARCH
}
