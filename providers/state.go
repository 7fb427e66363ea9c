package providers

import "errors"

// Provider state is what one provider hands back for the next turn of a conversation and only
// it can read: Anthropic's signed thinking blocks, the reasoning items of OpenAI's Responses API
// (their IDs and encrypted content), an answer the provider stored (previous_response_id).
// Sending it anywhere else fails at best (a 400 that stops a fallback chain) and at worst
// hands one endpoint's opaque data to another. The rules, on every wire:
//
//   - State is marked with where it came from. A Responses answer's reasoning blocks
//     (ThinkingBlock.ID, Encrypted) and its StoredResponse carry an Origin: the SharingScope of
//     the provider that produced them, a keyed hash of its endpoint and API key that reveals
//     neither and is the same on every machine (so a conversation saved in a database keeps
//     it).
//   - Reasoning is dropped, never sent, where it cannot be read: a wire sends back only the
//     blocks it can read (the Responses wire those of its own Origin; Anthropic's the signed
//     ones; chat completions none). A fallback to another provider therefore loses the earlier
//     turns' reasoning, which the model can do without, but never fails for it.
//   - A stored answer is never dropped, because the conversation lives there: a request with
//     Previous is refused (KindBadRequest, before sending) by every provider that keeps no
//     stored answers and by one of another Origin, and the client sends it only to the
//     route that stored it — after that route fails, it does not fall back (see client).

// StoredResponse names an answer its provider stored, from which the next turn continues
// without resending the conversation (ChatRequest.Previous; OpenAI Responses'
// previous_response_id). ChatResponse.Stored and the Done delta's Stored give it.
type StoredResponse struct {
	// ID is the stored answer's ID (OpenAI: "resp_…").
	ID string
	// Origin names, opaquely, the endpoint that stored it (see ThinkingBlock.Origin). ""
	// claims none: the client then sends the request to the first route that can continue
	// a stored answer and to no other; a provider takes it as its own.
	Origin string
}

// IncludeReasoningEncrypted is the ChatRequest.Include value that asks OpenAI's Responses API
// for the encrypted content of its reasoning items, which a conversation that stores nothing
// (Store false) must send back to keep the model's reasoning across turns. The Responses
// wire asks for it by itself when Store is false.
const IncludeReasoningEncrypted = "reasoning.encrypted_content"

// CodeResponseGone is the Code of the error for a stored answer its provider no longer holds:
// a background answer read (Retrieve), cancelled or resumed (a cut background stream) that the
// server answers with 404, a previous_response_id it does not find. Its retention ended, it
// was deleted, or it was stored under another API key or project. The Kind stays the one the
// status gives (KindNotFound for a 404, KindBadRequest for a 400).
//
// Such an error ends the call where it is: the client does not fall back, rescue, retry or
// restart it elsewhere — not even before any content was delivered — because the answer was
// produced, and billed, where it was stored, and asking for it again would produce and bill it
// twice and could deliver a second, different answer after the first one's Partial. A stream
// that fails so carries the text it delivered in Partial. To start over, call again (the
// client's WithRestartIfGone does it for a call that opts in). errors.Is(err, ErrResponseGone)
// finds it.
const CodeResponseGone = "response_gone"

// ErrResponseGone matches, with errors.Is, an *Error whose Code is CodeResponseGone. It is
// never returned by itself.
var ErrResponseGone = errors.New("the provider no longer holds the stored answer")

// CodeConversationGone is the Code of the error for a conversation its provider no longer
// holds (ChatRequest.Conversation): deleted, or created under another API key or project. As
// for CodeResponseGone, the call ends there. errors.Is(err, ErrConversationGone) finds it.
const CodeConversationGone = "conversation_gone"

// ErrConversationGone matches, with errors.Is, an *Error whose Code is CodeConversationGone.
// It is never returned by itself.
var ErrConversationGone = errors.New("the provider no longer holds the conversation")

// Gone reports whether err is, or wraps, the error for provider state its provider no longer
// holds (ErrResponseGone, ErrConversationGone).
func Gone(err error) bool {
	return errors.Is(err, ErrResponseGone) || errors.Is(err, ErrConversationGone)
}
