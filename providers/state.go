package providers

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
