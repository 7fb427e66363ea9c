package tokens

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"testing"
)

var fit = flag.Bool("fit", false, "print heuristicWeights fitted to testdata/heuristic.json")

// fitText is one text of testdata/heuristic.json: a text CountChat counts on the corpus and
// o200k_base's count of it (written by the tokens/tiktoken tests, -heuristic-data).
type fitText struct {
	Case  string `json:"case"`
	Text  string `json:"text"`
	O200k int    `json:"o200k_base"`
}

// featureNames are the features' names in heuristicWeights' source.
var featureNames = [hFeatures]string{
	"hWord", "hLetter", "hAccent", "hDigits", "hPunct", "hPunctRun", "hNewline", "hSpace",
	"hOtherWord", "hCyrillic", "hGreek", "hArabic", "hIndic", "hHan", "hKana", "hHangul",
	"hEmoji", "hJoiner", "hSymbol",
}

// fitWeights fits heuristicWeights to texts: least squares over the texts, each weighted by
// the inverse of its token count (so that the squared error minimised is relative, and a
// long text does not outweigh every short one), with every weight held non-negative (a
// weight that comes out negative is fixed at 0 and the rest refitted), rounded to
// thousandths of a token. Features that no text has are left at 0.
func fitWeights(texts []fitText) [hFeatures]int32 {
	const n = hFeatures
	var ata [n][n]float64
	var aty [n]float64
	for _, x := range texts {
		f := heuristicFeatures(x.Text)
		w := 1 / math.Max(float64(x.O200k), 1)
		for i := 0; i < n; i++ {
			aty[i] += w * float64(f[i]) * float64(x.O200k)
			for j := 0; j < n; j++ {
				ata[i][j] += w * float64(f[i]) * float64(f[j])
			}
		}
	}
	free := [n]bool{}
	for i := range free {
		free[i] = ata[i][i] > 0
	}
	var sol [n]float64
	for {
		sol = solve(ata, aty, free)
		worst := -1
		for i := range sol {
			if free[i] && sol[i] < 0 && (worst < 0 || sol[i] < sol[worst]) {
				worst = i
			}
		}
		if worst < 0 {
			break
		}
		free[worst] = false
	}
	var out [n]int32
	for i, v := range sol {
		out[i] = int32(math.Round(v * 1000))
	}
	return out
}

// solve solves the normal equations restricted to the free features (the others are 0), by
// Gaussian elimination with partial pivoting.
func solve(ata [hFeatures][hFeatures]float64, aty [hFeatures]float64, free [hFeatures]bool) [hFeatures]float64 {
	var idx []int
	for i, f := range free {
		if f {
			idx = append(idx, i)
		}
	}
	m := len(idx)
	a := make([][]float64, m)
	for r, i := range idx {
		a[r] = make([]float64, m+1)
		for c, j := range idx {
			a[r][c] = ata[i][j]
		}
		a[r][m] = aty[i]
	}
	for col := 0; col < m; col++ {
		p := col
		for r := col + 1; r < m; r++ {
			if math.Abs(a[r][col]) > math.Abs(a[p][col]) {
				p = r
			}
		}
		a[col], a[p] = a[p], a[col]
		for r := 0; r < m; r++ {
			if r == col || a[col][col] == 0 {
				continue
			}
			k := a[r][col] / a[col][col]
			for c := col; c <= m; c++ {
				a[r][c] -= k * a[col][c]
			}
		}
	}
	var out [hFeatures]float64
	for r, i := range idx {
		if a[r][r] != 0 {
			out[i] = a[r][m] / a[r][r]
		}
	}
	return out
}

func readFitTexts(t *testing.T) []fitText {
	t.Helper()
	b, err := os.ReadFile("testdata/heuristic.json")
	if err != nil {
		t.Fatal(err)
	}
	var texts []fitText
	if err := json.Unmarshal(b, &texts); err != nil {
		t.Fatal(err)
	}
	if len(texts) < 300 {
		t.Fatalf("testdata/heuristic.json has %d texts", len(texts))
	}
	return texts
}

// TestHeuristicFit refits Heuristic's weights to testdata/heuristic.json and fails unless
// heuristicWeights are that fit, to within rounding: the weights in the source are
// reproducible from the data. go test -run TestHeuristicFit -fit prints the fitted weights
// as Go source to paste over heuristicWeights.
func TestHeuristicFit(t *testing.T) {
	texts := readFitTexts(t)
	got := fitWeights(texts)
	var src strings.Builder
	for i, w := range got {
		fmt.Fprintf(&src, "\t%s: %d,\n", featureNames[i], w)
	}
	if *fit {
		t.Logf("fitted to %d texts:\n%s", len(texts), src.String())
	}
	for i, w := range got {
		if d := w - heuristicWeights[i]; d > 2 || d < -2 {
			t.Errorf("%s: the fit gives %d, heuristicWeights has %d: run go test -run TestHeuristicFit -fit and paste:\n%s", featureNames[i], w, heuristicWeights[i], src.String())
			break
		}
	}
}

// TestHeuristicFit_LeaveOneOut estimates how the weights do on prompts they were not fitted
// to: for each corpus prompt, the weights are fitted to every other prompt's texts and the
// prompt is counted with them (its chat-format constants taken from expected.json's total).
// It logs per category the median and worst error against o200k_base (the package doc's
// held-out column). A script only one prompt has (Greek, Hindi, Korean…) gets no weight
// when that prompt is held out, so the multi category's worst case is the cost of a script
// the corpus does not know.
func TestHeuristicFit_LeaveOneOut(t *testing.T) {
	texts := readFitTexts(t)
	b, err := os.ReadFile("testdata/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var totals []struct {
		Name  string `json:"name"`
		O200k int    `json:"o200k_base"`
	}
	if err := json.Unmarshal(b, &totals); err != nil {
		t.Fatal(err)
	}
	errs := map[string][]float64{}
	for _, c := range totals {
		var train, held []fitText
		for _, x := range texts {
			if x.Case == c.Name {
				held = append(held, x)
			} else {
				train = append(train, x)
			}
		}
		w := fitWeights(train)
		est := c.O200k
		for _, x := range held {
			est += heuristicCount(&w, x.Text) - x.O200k
		}
		e := 100 * float64(est-c.O200k) / float64(c.O200k)
		cat, _, _ := strings.Cut(c.Name, "/")
		errs[cat] = append(errs[cat], e)
		errs["all"] = append(errs["all"], e)
		if e > 25 || e < -25 {
			t.Logf("held out %s: %+.1f%%", c.Name, e)
		}
	}
	cats := make([]string, 0, len(errs))
	for k := range errs {
		cats = append(cats, k)
	}
	sort.Strings(cats)
	t.Logf("leave-one-out, CountChat per prompt vs o200k_base, signed error:")
	for _, k := range cats {
		med, worst := medianWorst(errs[k])
		t.Logf("%-6s %5d %+7.1f%% %+7.1f%%", k, len(errs[k]), med, worst)
		if k == "all" {
			worst = 0 // the multi category's
		}
		if k != "multi" && (med > 10 || med < -10 || worst > 35 || worst < -35) {
			t.Errorf("%s: held out, median %+.1f%%, worst %+.1f%%", k, med, worst)
		}
	}
}

// medianWorst returns the median of errs and the one farthest from zero.
func medianWorst(errs []float64) (median, worst float64) {
	s := append([]float64(nil), errs...)
	sort.Float64s(s)
	median = s[len(s)/2]
	if len(s)%2 == 0 {
		median = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	for _, e := range s {
		if e*e > worst*worst {
			worst = e
		}
	}
	return median, worst
}
