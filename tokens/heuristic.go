package tokens

import "unicode/utf8"

// HeuristicName is the name Heuristic is registered under.
const HeuristicName = "heuristic"

// Heuristic estimates token counts without a vocabulary, for a model whose tokenizer is
// unknown (Anthropic's, Gemini's, an open model behind a compatible server) or not linked
// (tokens/tiktoken not imported). It reads the text once, rune by rune, and counts what a
// byte-pair tokenizer of the GPT-4o generation splits text into: words (an ASCII camelCase
// name is several), groups of up to three digits, punctuation runs, line breaks,
// indentation, letters of other scripts, CJK characters and emoji. Each class has a weight
// fitted to o200k_base on the corpus in testdata (the fit is in heuristic_fit_test.go; how
// to redo it, and the accuracy it reaches per kind of text, are in the package doc).
//
// It is an estimate. On the corpus's English, code, JSON, chat and tool prompts its median
// error against o200k_base is within 3 % and its worst within 10 %, on prompts left out of
// the fit too (15 % on its edge cases: runs of blanks, special-token markers as text); a
// script the corpus lacks can be off by a factor of two or three; and cl100k_base, which
// splits non-Latin scripts into more tokens, is underestimated there by about 30 % (the
// table is in the package doc). A non-empty text counts at least 1. Invalid UTF-8 counts as
// the U+FFFD each bad byte becomes. It allocates nothing, is safe for concurrent use, and is
// registered under HeuristicName, so Lookup(HeuristicName) finds it.
var Heuristic Encoding = heuristic{}

func init() { Register(Heuristic) }

type heuristic struct{}

// Name returns HeuristicName.
func (heuristic) Name() string { return HeuristicName }

// Count returns the estimated token count of text.
func (heuristic) Count(text string) int { return heuristicCount(&heuristicWeights, text) }

// heuristicCount is the count of text with the given weights: the weighted sum of its
// features, rounded, and at least 1 for a non-empty text.
func heuristicCount(weights *[hFeatures]int32, text string) int {
	if text == "" {
		return 0
	}
	f := heuristicFeatures(text)
	milli := 0
	for i, n := range f {
		milli += int(weights[i]) * n
	}
	return max((milli+500)/1000, 1)
}

// The features Heuristic counts. Each is a count of pieces or characters of one class; the
// estimate is their sum weighted by heuristicWeights.
const (
	hWord      = iota // runs of Latin letters, split where a lower-case letter meets an upper-case one
	hLetter           // Latin letters
	hAccent           // Latin letters outside ASCII (é, ß, ñ)
	hDigits           // groups of up to three digits
	hPunct            // ASCII punctuation and symbols
	hPunctRun         // runs of them
	hNewline          // runs of line breaks (with the blanks between them)
	hSpace            // whitespace standing as a piece of its own: indentation, a blank before a digit or at the end
	hOtherWord        // runs of letters of other alphabets (Greek, Cyrillic, Arabic, Hebrew, Indic…)
	hCyrillic         // Cyrillic letters
	hGreek            // Greek letters
	hArabic           // Arabic and Hebrew letters and marks
	hIndic            // Indic letters and marks, and letters of alphabets no other feature names
	hHan              // CJK ideographs
	hKana             // hiragana and katakana
	hHangul           // Hangul syllables and jamo
	hEmoji            // pictographs, regional indicators, skin-tone modifiers
	hJoiner           // zero-width joiners and variation selectors
	hSymbol           // other non-ASCII punctuation and symbols (— “ ” … 。), and invalid bytes
	hFeatures
)

// heuristicWeights are the tokens, in thousandths, each feature adds: the weighted
// least-squares fit of o200k_base's counts of the corpus's texts (TestHeuristicFit prints
// them; see the package doc). A feature the fit gives no weight (hOtherWord, hJoiner: the
// letters and emoji around them carry it) is still counted, for a refit on other data.
var heuristicWeights = [hFeatures]int32{
	hWord:      970,
	hLetter:    18,
	hAccent:    819,
	hDigits:    1092,
	hPunct:     255,
	hPunctRun:  318,
	hNewline:   519,
	hSpace:     1139,
	hOtherWord: 0,
	hCyrillic:  261,
	hGreek:     467,
	hArabic:    409,
	hIndic:     438,
	hHan:       689,
	hKana:      700,
	hHangul:    713,
	hEmoji:     1891,
	hJoiner:    0,
	hSymbol:    918,
}

// Character classes of the scan. A feature's piece begins where the class changes.
const (
	cNone = iota
	cLatin
	cDigit
	cBlank // space or tab
	cNewline
	cPunct
	cOther // a letter of another alphabet
	cIdeo  // CJK: each character is counted alone
	cSym   // emoji and non-ASCII symbols
)

// asciiClass is the class of each ASCII character.
var asciiClass = func() (t [utf8.RuneSelf]uint8) {
	for c := range t {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
			t[c] = cLatin
		case '0' <= c && c <= '9':
			t[c] = cDigit
		case c == ' ' || c == '\t':
			t[c] = cBlank
		case c == '\n' || c == '\r':
			t[c] = cNewline
		case c < ' ' || c == 0x7f:
			t[c] = cSym
		default:
			t[c] = cPunct
		}
	}
	return t
}()

// heuristicFeatures counts the features of text in one pass.
func heuristicFeatures(text string) (f [hFeatures]int) {
	var (
		run      = cNone // class of the current run
		runLen   = 0     // its length in runes
		before   = cNone // class of the run before the current blank run
		lower    = false // the previous rune was a lower-case Latin letter
		joinNext = false // the next newline continues the newline run the blanks interrupted
	)
	// end closes the current run, next being the class that follows it (cNone at the end).
	end := func(next int) {
		switch run {
		case cDigit:
			f[hDigits] += (runLen + 2) / 3
		case cBlank:
			switch {
			case next == cNewline:
				// Blanks before a line break belong to its piece.
				joinNext = before == cNewline
			case runLen >= 2, next == cDigit, next == cNone:
				f[hSpace]++
			}
		}
	}
	for i := 0; i < len(text); {
		c, cls := rune(text[i]), cNone
		size := 1
		if c < utf8.RuneSelf {
			cls = int(asciiClass[c])
		} else {
			c, size = utf8.DecodeRuneInString(text[i:])
			cls = classify(c, &f)
		}
		if cls != run {
			end(cls)
			if cls == cBlank {
				before = run
			}
			switch cls {
			case cLatin:
				f[hWord]++
			case cPunct:
				f[hPunctRun]++
			case cNewline:
				if !joinNext {
					f[hNewline]++
				}
			case cOther:
				f[hOtherWord]++
			}
			if cls != cBlank {
				joinNext = false
			}
			run, runLen = cls, 0
		} else if cls == cLatin && lower && 'A' <= c && c <= 'Z' {
			f[hWord]++ // camelCase: "getUserName" is three words
		}
		runLen++
		switch cls {
		case cLatin:
			f[hLetter]++
			lower = 'a' <= c && c <= 'z' || c >= utf8.RuneSelf
		case cPunct:
			f[hPunct]++
		}
		i += size
	}
	end(cNone)
	return f
}

// classify returns the class of a non-ASCII rune and counts its per-character feature.
func classify(c rune, f *[hFeatures]int) int {
	switch {
	case c == utf8.RuneError:
		f[hSymbol]++
		return cSym
	case c >= 0xC0 && c <= 0x24F && c != 0xD7 && c != 0xF7, c >= 0x1E00 && c <= 0x1EFF:
		f[hAccent]++
		return cLatin
	case c < 0xC0:
		if c == 0xA0 {
			return cBlank
		}
		f[hSymbol]++
		return cSym
	case c >= 0x370 && c <= 0x3FF, c >= 0x1F00 && c <= 0x1FFF:
		f[hGreek]++
		return cOther
	case c >= 0x400 && c <= 0x52F:
		f[hCyrillic]++
		return cOther
	case c >= 0x590 && c <= 0x6FF, c >= 0x750 && c <= 0x77F:
		if c >= 0x600 && c <= 0x60F || c == 0x61B || c == 0x61F || c == 0x6D4 || c == 0x5BE {
			f[hSymbol]++ // Arabic comma, semicolon, question mark, full stop
			return cSym
		}
		f[hArabic]++
		return cOther
	case c >= 0x900 && c <= 0xDFF:
		if c == 0x964 || c == 0x965 {
			f[hSymbol]++ // danda
			return cSym
		}
		f[hIndic]++
		return cOther
	case c >= 0x1100 && c <= 0x11FF, c >= 0x3130 && c <= 0x318F, c >= 0xAC00 && c <= 0xD7AF:
		f[hHangul]++
		return cIdeo
	case c >= 0x3040 && c <= 0x30FF:
		f[hKana]++
		return cIdeo
	case c >= 0x3400 && c <= 0x4DBF, c >= 0x4E00 && c <= 0x9FFF, c >= 0xF900 && c <= 0xFAFF, c >= 0x20000 && c <= 0x3FFFF:
		f[hHan]++
		return cIdeo
	case c == 0x200D, c >= 0xFE00 && c <= 0xFE0F:
		f[hJoiner]++
		return cSym
	case c >= 0x1F000 && c <= 0x1FAFF, c >= 0x2600 && c <= 0x27BF, c >= 0x2B00 && c <= 0x2BFF:
		f[hEmoji]++
		return cSym
	case c == 0x3000:
		return cBlank // ideographic space
	case c >= 0x2000 && c <= 0x2BFF, c >= 0x3000 && c <= 0x303F, c >= 0xFF00 && c <= 0xFFEF, c >= 0xE000 && c <= 0xF8FF, c >= 0xFFF0:
		f[hSymbol]++
		return cSym
	}
	// Every other letter: Armenian, Georgian, Thai, Ethiopic and the rest, which the
	// vocabularies cover about as thinly as the Indic scripts.
	f[hIndic]++
	return cOther
}
