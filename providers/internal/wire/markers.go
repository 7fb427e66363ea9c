package wire

import (
	"strings"

	"github.com/steadyllm/steady/providers"
)

// The phrases by which steady recognizes what a server's error says, beyond its status, in
// one place: Classify reads the kinds' phrases, Errors.Finish the details' (a prefill refused,
// the sizes of a context overflow). Each phrase is matched in lower case, anywhere in the
// error's type, code or message. Add a provider's wording here, nowhere else.
var (
	// contextPhrases mark a prompt past the model's context window: OpenAI's code and
	// wording, Anthropic's two messages ("prompt is too long: N tokens > M maximum", and
	// "input length and `max_tokens` exceed context limit: A + B > C, …"), and the 413 type.
	contextPhrases = []string{"context_length_exceeded", "string_above_max_length", "prompt is too long",
		"maximum context length", "context window", "exceed context limit", "request_too_large"}
	// filterPhrases mark a safety filter's verdict on the prompt or the output: OpenAI's code,
	// Azure's inner code ResponsibleAIPolicyViolation, the policy codes of a failed OpenAI
	// response (bio_policy, misalignment_policy_violation, image_content_policy_violation).
	filterPhrases = []string{"content_filter", "content_policy", "responsibleaipolicyviolation", "safety",
		"bio_policy", "policy_violation"}
	// overloadPhrases mark an overloaded server, whatever the status.
	overloadPhrases = []string{"overloaded"}
	// prefillPhrases mark a model that refuses a conversation ending with an assistant message
	// (Anthropic's newer models, and the OpenAI-compatible proxies in front of them).
	prefillPhrases = []string{"does not support assistant message prefill", "conversation must end with a user message"}
)

// mentions reports whether one of phrases is in one of texts, which are in lower case.
func mentions(phrases []string, texts ...string) bool {
	for _, p := range phrases {
		for _, t := range texts {
			if strings.Contains(t, p) {
				return true
			}
		}
	}
	return false
}

// recognize fills in, from e's message, the details a caller acts on that the kind does not
// say: CodePrefillUnsupported on a bad_request refusing a prefill, the sizes of a
// context_too_long. It runs before the message is scrubbed and bounded, and only on those
// kinds, so it costs nothing on the errors that are neither.
func recognize(e *providers.Error) {
	switch e.Kind {
	case providers.KindBadRequest:
		if e.Code != providers.CodePrefillUnsupported && mentions(prefillPhrases, strings.ToLower(e.Message)) {
			e.Code = providers.CodePrefillUnsupported
		}
	case providers.KindContextTooLong:
		if e.Overflow == nil {
			e.Overflow = Overflow(e.Message)
		}
	}
}

// Overflow reads the sizes a context_too_long message states, nil when it states none that
// this package knows how to read. It knows
//
//   - Anthropic's "prompt is too long: N tokens > M maximum": Input and Requested N, Window M;
//   - Anthropic's "input length and `max_tokens` exceed context limit: A + B > C, …": Input A,
//     Output B, Requested A+B, Window C;
//   - OpenAI's (and Azure's, vLLM's) "maximum context length is W tokens. However, you
//     requested R tokens (P in the messages, C in the completion)": Window W, Requested R,
//     Output C and Input R-C (functions and tools count with the prompt); and "…However, your
//     messages resulted in R tokens": Window W, Requested and Input R.
//
// A message whose numbers do not add up (a window larger than what was requested) is not
// read: a caller must not choose a route on sizes that contradict the error.
func Overflow(msg string) *providers.ContextOverflow {
	m := strings.ToLower(msg)
	var o providers.ContextOverflow
	switch {
	case afterPhrase(m, "prompt is too long") != "":
		n := numbers(afterPhrase(m, "prompt is too long"), 2)
		if len(n) < 2 {
			return nil
		}
		o = providers.ContextOverflow{Window: n[1], Requested: n[0], Input: n[0]}
	case afterPhrase(m, "exceed context limit") != "":
		n := numbers(afterPhrase(m, "exceed context limit"), 3)
		if len(n) < 3 {
			return nil
		}
		o = providers.ContextOverflow{Window: n[2], Requested: n[0] + n[1], Input: n[0], Output: n[1]}
	case afterPhrase(m, "maximum context length") != "":
		rest := afterPhrase(m, "maximum context length")
		n := numbers(rest, 2)
		if len(n) < 2 {
			return nil
		}
		o = providers.ContextOverflow{Window: n[0], Requested: n[1]}
		switch {
		case strings.Contains(rest, "in the completion"):
			// "(P in the messages[, F in the functions], C in the completion)": C is the last.
			all := numbers(rest, 8)
			o.Output = all[len(all)-1]
			if o.Output < o.Requested {
				o.Input = o.Requested - o.Output
			} else {
				o.Output = 0
			}
		case strings.Contains(rest, "messages resulted in"), strings.Contains(rest, "input tokens"):
			o.Input = o.Requested
		}
	default:
		return nil
	}
	if o.Window <= 0 || o.Requested <= o.Window {
		return nil
	}
	return &o
}

// afterPhrase returns what follows phrase in m, "" when m lacks it.
func afterPhrase(m, phrase string) string {
	i := strings.Index(m, phrase)
	if i < 0 {
		return ""
	}
	return m[i+len(phrase):]
}

// maxTokenCount bounds a number read from a message: no model's window comes near it, and it
// keeps a sum of two far from overflowing an int on 32-bit platforms.
const maxTokenCount = 1 << 29

// numbers returns the first (at most max) whole numbers in s, in order; a comma between digits
// groups thousands ("200,000"). A number past maxTokenCount ends the reading.
func numbers(s string, max int) []int {
	var out []int
	for i := 0; i < len(s) && len(out) < max; {
		if s[i] < '0' || s[i] > '9' {
			i++
			continue
		}
		n := 0
		for ; i < len(s); i++ {
			c := s[i]
			if c == ',' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9' && i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
				continue
			}
			if c < '0' || c > '9' {
				break
			}
			n = n*10 + int(c-'0')
			if n > maxTokenCount {
				return out
			}
		}
		out = append(out, n)
	}
	return out
}
