package providers

import "encoding/json"

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
//   - Blocks a wire does not model (Message.ProviderBlocks: Anthropic's server tool calls and
//     results, block types added later) carry the Origin of the provider that wrote them and
//     go back, verbatim, only to a provider of that Origin; every other drops them and sends
//     the rest of the message — its text and its tool calls — as it would without them. A
//     fallback therefore loses what a server tool found (the answer's text that used it stays),
//     but never fails for it and never shows one endpoint's data to another.
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

// ProviderBlock is one block of an assistant answer that the neutral message does not model,
// kept verbatim so that its provider reads it back (Message.ProviderBlocks): Anthropic's
// server_tool_use and the *_tool_result blocks of its server tools, and any content block type
// an API adds later. A streamed block is kept as the provider's start event gave it, with what
// its deltas added (a server tool's input), as the provider's own SDK accumulates it.
type ProviderBlock struct {
	// Type is the block's type, as in Raw ("server_tool_use", "web_search_tool_result"…).
	Type string
	// Raw is the block, a JSON object, as the provider sent it. Treat it as opaque: a server
	// tool's result may hold encrypted content that the provider checks when it comes back.
	Raw json.RawMessage
	// Origin names, opaquely, the endpoint that produced the block (its SharingScope): the
	// block is sent back only to a provider of the same origin and dropped by every other
	// (see ThinkingBlock.Origin). "" claims none: every wire that reads such blocks sends it.
	Origin string
	// At and Calls say where the block stood in the answer: after the first At bytes of
	// Message.Content and the first Calls of Message.ToolCalls. The wire puts it back there,
	// splitting the text around it; values past the message's text or calls mean its end.
	At, Calls int
}
