package mocks

import "strings"

// A refusal is an answer, not a failure: the call succeeds (200), and what tells the client
// that the answer is not the one it asked for is a field (OpenAI's refusal), a finish reason
// (content_filter) or a stop reason (Anthropic's refusal). A client that reads only the
// content presents a refusal, or the part of an answer sent before a filter struck, as the
// answer.

// Refusal is a 200 whose whole answer is a refusal: OpenAI's refusal field, Anthropic's
// stop_reason "refusal" with text as the explanation (see [Step.Refuse]). An empty text is
// refused as "I can't help with that."
func Refusal(text string) Step { return RefuseAfter(0, text) }

// RefuseAfter is a 200 whose answer turns into a refusal after n content events (see
// [Step.Refuse]); n <= 0 refuses at once. An empty text is refused as "I can't help with
// that."
func RefuseAfter(n int, text string) Step {
	if text == "" {
		text = defaultRefusal
	}
	return Step{Refuse: text, RefuseAfter: n}
}

// defaultRefusal is what Refusal and RefuseAfter refuse with when given no text.
const defaultRefusal = "I can't help with that."

// ContentFiltered is a 200 whose answer stops after n content events with OpenAI's
// finish_reason "content_filter" (Anthropic: stop_reason "refusal"); see [Step.ContentFilter].
// n <= 0 filters the whole answer.
func ContentFiltered(n int) Step { return Step{ContentFilter: true, RefuseAfter: n} }

// WithRefusalCategory returns a copy of st whose Anthropic refusal names category ("" = a null
// category); it refuses nothing by itself (see [Step.RefuseCategory]).
func (st Step) WithRefusalCategory(category string) Step { st.RefuseCategory = category; return st }

// refuses reports whether st turns its answer into a refusal or a content filter.
func (st Step) refuses() bool { return st.Refuse != "" || st.ContentFilter }

// beforeRefusal returns the pieces of the answer sent before st's refusal, and their text:
// all of pieces when st does not refuse, else its first RefuseAfter pieces.
func (st Step) beforeRefusal(pieces []string) ([]string, string) {
	if st.refuses() {
		pieces = pieces[:min(max(st.RefuseAfter, 0), len(pieces))]
	}
	return pieces, strings.Join(pieces, "")
}

// anthropicStopDetails is the stop_details of an Anthropic refusal: its category and
// explanation, null when st names none.
func (st Step) anthropicStopDetails() obj {
	d := obj{"type": "refusal", "category": nil, "explanation": nil}
	if st.RefuseCategory != "" {
		d["category"] = st.RefuseCategory
	}
	if st.Refuse != "" {
		d["explanation"] = st.Refuse
	}
	return d
}
