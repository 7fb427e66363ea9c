package providers

import (
	"encoding/json"
	"errors"
)

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
//     route that stored it — after that route fails, it does not fall back (see client). A
//     Conversation is the same.
//   - A compaction item (Message.Compaction) stands for the conversation before it. While the
//     caller keeps that conversation, the item is like reasoning: sent back to its Origin only,
//     dropped by every other provider, which gets the whole transcript instead — a fallback
//     replays what the caller kept. Once the caller drops the messages before it
//     (PruneCompacted marks the item Pruned), the item alone holds them: the request is pinned
//     to its Origin as Previous pins it, and refused (KindBadRequest, before sending) by every
//     other provider — a fallback cannot replay what is not there, and says so.
//
// Pin says which state, if any, pins a request, and where.

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

// Conversation names a conversation its provider keeps (OpenAI's Conversations API:
// "conv_…"): a call that names it (ChatRequest.Conversation) gets the conversation's items
// before its own input, and adds its input and answer to it. It is provider state.
type Conversation struct {
	// ID is the conversation's ID.
	ID string
	// Origin names, opaquely, the endpoint that keeps it (see ThinkingBlock.Origin); "" claims
	// none, as for StoredResponse.
	Origin string
}

// Compaction is a compaction item: the provider's opaque, encrypted summary of the
// conversation before it, produced by server-side compaction (ChatRequest.CompactThreshold;
// OpenAI Responses' compaction output item), which stands for that part of the conversation on
// the next turns. An answer carries it in Message.Compaction; send it back with that message.
type Compaction struct {
	// ID is the item's ID (OpenAI: "cmp_…"), "" when the provider gave none.
	ID string
	// Encrypted is the item's encrypted_content: only its Origin can read it.
	Encrypted string
	// Origin names, opaquely, the endpoint that produced it (see ThinkingBlock.Origin).
	Origin string
	// Pruned marks an item whose earlier conversation the caller no longer sends
	// (PruneCompacted sets it): the item alone holds it, so the request is pinned to Origin.
	Pruned bool
}

// PruneCompacted returns the conversation msgs without what its last compaction item stands
// for: the system messages, then the assistant message that carries the item and everything
// after it, with that item marked Pruned (in a copy: msgs and its messages are not changed). A
// conversation without a compaction item is returned as it is. Pruning keeps requests small
// (OpenAI advises it for stateless chaining), at a price: the request can then go only to the
// item's Origin (see Pin), where a whole transcript could fall back anywhere.
func PruneCompacted(msgs []Message) []Message {
	last := -1
	for i := range msgs {
		if msgs[i].Compaction != nil {
			last = i
		}
	}
	if last < 0 {
		return msgs
	}
	out := make([]Message, 0, len(msgs)-last+2)
	for _, m := range msgs[:last] {
		if m.Role == RoleSystem {
			out = append(out, m)
		}
	}
	m := msgs[last]
	c := *m.Compaction
	c.Pruned = true
	m.Compaction = &c
	out = append(out, m)
	return append(out, msgs[last+1:]...)
}

// Pin is the provider state that pins a request to the provider holding it: What names it
// ("the stored answer resp_…", "the conversation conv_…", "the compaction item cmp_…"), Origin
// the provider ("" claims none: the first route that can hold it, and no other).
type Pin struct {
	What   string
	Origin string
}

// Pin returns the state that pins r (see state.go): Previous, else Conversation, else the last
// pruned compaction item; false when none does. Validate refuses a request whose pinning
// states name different origins.
func (r *ChatRequest) Pin() (Pin, bool) {
	switch {
	case r == nil:
		return Pin{}, false
	case r.Previous != nil:
		return Pin{What: "the stored answer " + clip(r.Previous.ID), Origin: r.Previous.Origin}, true
	case r.Conversation != nil:
		return Pin{What: "the conversation " + clip(r.Conversation.ID), Origin: r.Conversation.Origin}, true
	}
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if c := r.Messages[i].Compaction; c != nil && c.Pruned {
			what := "the compaction item"
			if c.ID != "" {
				what += " " + clip(c.ID)
			}
			return Pin{What: what + " of a pruned conversation", Origin: c.Origin}, true
		}
	}
	return Pin{}, false
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
