package resilience

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"
)

// A server that bills a·text + b·frame is learnt exactly once its prompts differ in shape; one
// of a single shape is learnt as one ratio, which estimates that shape exactly.
func TestTokens_LearnsTheServersWeights(t *testing.T) {
	p, err := New(testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if m := p.TokenModel(); m != (TokenModel{Text: 1, Frame: 1}) || m.Estimate(100, 10) != 110 {
		t.Fatalf("before any sample: %+v", m)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 40 {
		text, frame := 20+rng.IntN(2000), 7+3*rng.IntN(30)
		if !p.LearnTokens(text, frame, int(math.Round(1.3*float64(text)+0.5*float64(frame)))) {
			t.Fatal("a plausible sample was dropped")
		}
	}
	m := p.TokenModel()
	if math.Abs(m.Text-1.3) > 0.01 || math.Abs(m.Frame-0.5) > 0.05 || m.Samples != 40 {
		t.Fatalf("learnt %+v, want text ×1.3 and frame ×0.5", m)
	}
	if got, want := m.Estimate(1000, 100), 1350; math.Abs(float64(got-want)) > 15 {
		t.Fatalf("estimate %d, want about %d", got, want)
	}

	one, _ := New(testOptions())
	for range 10 {
		one.LearnTokens(300, 30, 660) // always the same shape: twice the estimate
	}
	if m := one.TokenModel(); m.Text != 2 || m.Frame != 2 || m.Estimate(300, 30) != 660 {
		t.Fatalf("one shape: %+v", m)
	}
	// A server that bills nothing for the frame (the fake's four bytes a token).
	free, _ := New(testOptions())
	for i := range 30 {
		text, frame := 10+i*37%400, 6+3*(i%7)
		free.LearnTokens(text, frame, text)
	}
	if m := free.TokenModel(); math.Abs(m.Text-1) > 0.01 || m.Frame > 0.05 {
		t.Fatalf("a free frame: %+v", m)
	}
}

// Implausible samples are dropped, whatever their number; the weights and every estimate stay
// within their bounds.
func TestTokens_RefusesImplausibleSamples(t *testing.T) {
	p, _ := New(testOptions())
	for _, s := range [][3]int{{-1, 10, 10}, {10, -1, 10}, {3, 4, 7}, {100, 0, 0}, {100, 0, -3}, {100, 0, 1601},
		{100, 0, 6}, {100, 0, maxTokenBilled + 1}, {math.MaxInt32, 0, 1 << 40}} {
		if p.LearnTokens(s[0], s[1], s[2]) {
			t.Errorf("sample %v kept", s)
		}
	}
	if m := p.TokenModel(); m.Samples != 0 {
		t.Fatalf("learnt %+v from implausible samples", m)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		text, frame := rng.IntN(5000), rng.IntN(200)
		est := text + frame
		p.LearnTokens(text, frame, max(1, int(float64(est)*(1.0/16+rng.Float64()*(16-1.0/16)))))
		m := p.TokenModel()
		if m.Text < MinTokenRatio || m.Text > MaxTokenRatio || m.Frame < 0 || m.Frame > MaxTokenRatio {
			t.Fatalf("weights %+v out of bounds", m)
		}
		if e := float64(m.Estimate(1000, 50)); e < MinTokenRatio*1050-1 || e > MaxTokenRatio*1050+1 {
			t.Fatalf("estimate %v of 1050 out of bounds (%+v)", e, m)
		}
	}
}

// Learning and reading race freely: a reader never sees one weight without the other.
func TestTokens_LearnsConcurrently(t *testing.T) {
	p, _ := New(testOptions())
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				text := 50 + (g*500+i)%900
				p.LearnTokens(text, 10, 2*(text+10))
				if m := p.TokenModel(); m.Samples > 0 && (m.Text != 2 || m.Frame != 2) && m.Samples < minTokenFit {
					t.Errorf("weights %+v", m)
				}
			}
		}()
	}
	wg.Wait()
	if m := p.TokenModel(); m.Samples != 2000 || math.Abs(m.Text-2) > 1e-3 || math.Abs(m.Frame-2) > 1e-2 {
		t.Fatalf("after 2000 samples of twice the estimate: %+v", m)
	}
}
