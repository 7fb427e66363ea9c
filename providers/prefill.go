package providers

import (
	"strings"
	"unicode"
)

// Prefiller is implemented by a provider that can continue an answer from its beginning
// (ChatRequest.Prefill): an assistant prefill.
type Prefiller interface {
	// Prefills reports whether the provider continues a final assistant message of req sent
	// to model ("" for its default): false when the model refuses a prefill, when req asks for
	// something the prefill cannot go with (Anthropic: extended thinking), or when the
	// provider declares no way to send one. It reads req only.
	Prefills(model string, req *ChatRequest) bool
}

// PrefillOf returns what the provider needs sent for a continuation of text (the part of an
// answer already delivered): text without its trailing whitespace, which Anthropic refuses at
// the end of a prefill and no wire needs, and the whitespace cut off, which the caller has
// already received and the continuation may send again.
func PrefillOf(text string) (prefill, trimmed string) {
	prefill = strings.TrimRightFunc(text, unicode.IsSpace)
	return prefill, text[len(prefill):]
}
