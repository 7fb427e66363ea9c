package resilience

import (
	"math"
	"sync"
	"sync/atomic"
)

// A route whose tokenizer is unknown — Anthropic's models, an OpenAI-compatible server's own
// model — can still have estimates that match its bill: each answer reports the input tokens it
// was billed, and the client's local estimate of the same prompt, split in two — the tokens of
// its text, and those of its frame (the chat format's few tokens a message and a reply, tool
// framing, images) — teaches the route what each part is worth on its server:
//
//	billed ≈ Text × text + Frame × frame
//
// fitted by least squares over the route's recent answers (sums decayed so that an answer
// weighs a thirty-second part once the route has 32: it follows a model that changes). Two
// coefficients, not one ratio, because servers differ most in what a message costs: a ratio
// fitted to long prompts is far off for a chat of short turns. Until the answers differ enough
// in shape to tell the two apart (and for the first three), both are one ratio: billed input
// over the estimate, summed.
//
// A server's usage is input the client did not write: a sample whose billed count is outside
// [MinTokenSample, MaxTokenSample] times the estimate (a usage of 0, a hostile or corrupt
// count, a prompt the estimate could not see, such as a stored conversation) is dropped, not
// clamped; Text never leaves [MinTokenRatio, MaxTokenRatio], Frame [0, MaxTokenRatio], and an
// estimate never leaves [MinTokenRatio, MaxTokenRatio] times the local one.

// The bounds of what a route learns of its prompts' tokens.
const (
	// MinTokenSample and MaxTokenSample bound one answer's billed input over the estimate:
	// beyond them the sample is dropped as implausible.
	MinTokenSample = 1.0 / 16
	MaxTokenSample = 16.0
	// MinTokenRatio and MaxTokenRatio bound the learnt coefficients, and a learnt estimate
	// over the local one.
	MinTokenRatio = 0.25
	MaxTokenRatio = 4.0
	// minTokenEstimate is the smallest estimate a sample is learnt from: a prompt of a few
	// tokens says little.
	minTokenEstimate = 8
	// maxTokenBilled bounds a billed count believed at all: no context window holds more.
	maxTokenBilled = 100_000_000
	// tokenDecay is the weight of a new sample once the route has 1/tokenDecay of them.
	tokenDecay = 1.0 / 32
	// minTokenFit is the samples before the two coefficients are fitted apart.
	minTokenFit = 4
)

// tokenModel is what a route learnt. Writers take mu and update the sums; readers load the
// coefficients (two float32 packed in one word, so a reader never sees one without the other).
type tokenModel struct {
	mu                    sync.Mutex
	tt, tf, ff, ty, fy, y float64 // decayed sums of text², text·frame, frame², text·billed, frame·billed, billed
	b                     float64 // decayed sum of estimates (text + frame)
	coef                  atomic.Uint64
	samples               atomic.Int64
}

// TokenModel is what a route learnt of its prompts' tokens: billed ≈ Text × text + Frame ×
// frame, from Samples answers (and provider counts).
type TokenModel struct {
	Text, Frame float64
	Samples     int
}

// LearnTokens teaches the pipeline that a prompt the client estimated at text tokens of text
// and frame tokens of chat-format frame was billed billed input tokens (the answer's usage, or
// the provider's own count of it), and reports whether the sample was kept. A sample is dropped
// when text or frame is negative, their sum is below 8, billed is not positive or beyond
// 100,000,000, or billed over the sum is outside [MinTokenSample, MaxTokenSample]. Safe for
// concurrent use.
func (p *Pipeline) LearnTokens(text, frame, billed int) bool {
	est := text + frame
	if text < 0 || frame < 0 || est < minTokenEstimate || billed <= 0 || billed > maxTokenBilled {
		return false
	}
	if s := float64(billed) / float64(est); s < MinTokenSample || s > MaxTokenSample {
		return false
	}
	m := &p.tok
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.samples.Load() + 1
	w := max(1/float64(n), tokenDecay)
	t, f, y := float64(text), float64(frame), float64(billed)
	decay := func(sum *float64, v float64) { *sum += w * (v - *sum) }
	decay(&m.tt, t*t)
	decay(&m.tf, t*f)
	decay(&m.ff, f*f)
	decay(&m.ty, t*y)
	decay(&m.fy, f*y)
	decay(&m.y, y)
	decay(&m.b, t+f)
	a, c := m.fit(n)
	m.coef.Store(uint64(math.Float32bits(float32(a)))<<32 | uint64(math.Float32bits(float32(c))))
	m.samples.Store(n)
	return true
}

// fit returns the coefficients of text and frame the sums say, from n samples.
func (m *tokenModel) fit(n int64) (text, frame float64) {
	ratio := clamp(m.y/m.b, MinTokenRatio, MaxTokenRatio)
	det := m.tt*m.ff - m.tf*m.tf
	// Samples of one shape (text and frame in the same proportion) cannot tell the two
	// apart: the determinant is then small next to its terms.
	if n < minTokenFit || det <= 1e-3*m.tt*m.ff {
		return ratio, ratio
	}
	text = (m.ty*m.ff - m.fy*m.tf) / det
	frame = (m.fy*m.tt - m.ty*m.tf) / det
	switch {
	case frame < 0: // the frame costs nothing here: text alone, through the origin
		text, frame = m.ty/m.tt, 0
	case text < MinTokenRatio || text > MaxTokenRatio:
		return ratio, ratio
	}
	return clamp(text, MinTokenRatio, MaxTokenRatio), min(frame, MaxTokenRatio)
}

func clamp(v, lo, hi float64) float64 {
	if !(v >= lo) { // NaN too
		return lo
	}
	return min(v, hi)
}

// TokenModel returns what the pipeline learnt (LearnTokens): Text and Frame are 1 and Samples
// 0 before any. It takes no lock.
func (p *Pipeline) TokenModel() TokenModel {
	n := p.tok.samples.Load()
	if n == 0 {
		return TokenModel{Text: 1, Frame: 1}
	}
	c := p.tok.coef.Load()
	return TokenModel{Text: float64(math.Float32frombits(uint32(c >> 32))), Frame: float64(math.Float32frombits(uint32(c))),
		Samples: int(n)}
}

// Estimate returns the learnt estimate of a prompt the client estimates at text tokens of text
// and frame tokens of frame: Text × text + Frame × frame, rounded, within [MinTokenRatio,
// MaxTokenRatio] times text + frame; text + frame before any sample.
func (m TokenModel) Estimate(text, frame int) int {
	base := float64(text + frame)
	if m.Samples == 0 || base <= 0 {
		return text + frame
	}
	return int(math.Round(clamp(m.Text*float64(text)+m.Frame*float64(frame), MinTokenRatio*base, MaxTokenRatio*base)))
}
