package wire

import (
	"strconv"

	"github.com/steadyllm/steady/providers"
)

// The errors of an exchange that went well at the HTTP level (a 200, a whole body or stream)
// but whose answer is not the one asked for: a refusal, an answer a content filter cut, an
// event that cannot be read. The providers make them here, so that each reads the same on
// every wire.

// KeepText is how much of a server's text a reader keeps for an error's message (a refusal
// streamed in pieces): more than the message's bound, so that the scrubbing, which comes
// before the bound, sees every secret whole.
const KeepText = 4 * maxMessage

// Refused is the error of an answer the model declined to give: KindRefused, with the
// refusal's text (OpenAI's refusal, Anthropic's stop_details.explanation) as the message and
// its category (Anthropic's stop_details.category) as the code, both scrubbed and bounded.
// With no text, the message says that the model refused, and under which category if any.
// The caller sets StatusCode, RequestID, Partial and Usage.
func (x Errors) Refused(text, category string) *providers.Error {
	if text == "" {
		text = "the model declined to answer"
		if category != "" {
			text += " (category " + category + ")"
		}
	}
	return x.Finish(&providers.Error{Kind: providers.KindRefused, Code: category, Message: text})
}

// Filtered is the error of an answer a content filter ended (OpenAI's finish_reason
// "content_filter"): KindContentFiltered, not a success, since what came is not the whole
// answer. text is what the provider said with it (a refusal's text), "" for none. The caller
// sets StatusCode, RequestID, Partial (what came before the filter struck) and Usage.
func (x Errors) Filtered(text string) *providers.Error {
	return x.FilteredBy("finish_reason content_filter", text)
}

// FilteredBy is Filtered for a wire that says so in another way than a finish_reason (signal
// names it, as OpenAI Responses' "incomplete_details.reason content_filter").
func (x Errors) FilteredBy(signal, text string) *providers.Error {
	msg := "the provider's content filter ended the answer (" + signal + ")"
	if text != "" {
		msg += ": " + text
	}
	return x.Finish(&providers.Error{Kind: providers.KindContentFiltered, Code: "content_filter", Message: msg})
}

// Malformed is the error of the n-th event of a stream (counting from 1, every event) whose
// data is not the JSON it must be: KindUnavailable, a fault of the server, wrapping err. The
// stream ends there: reading on past it would present an answer with a piece missing as whole.
// The caller sets StatusCode, RequestID, Partial and Usage.
func (x Errors) Malformed(n int, err error) *providers.Error {
	msg := "the stream's event " + strconv.Itoa(n) + " is not valid JSON"
	if err != nil {
		msg += " (" + err.Error() + ")"
	}
	return x.Finish(&providers.Error{Kind: providers.KindUnavailable, Message: msg + "; the stream ends there", Err: err})
}
