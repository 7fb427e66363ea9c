package providers

import (
	"context"
	"errors"
)

// Background mode (OpenAI Responses' background: true) lets a long answer be worked on by the
// provider without a held connection: the request comes back at once with the answer queued,
// stored under an ID (ChatResponse.Stored), and the caller retrieves it later — polling until
// it is no longer pending — or cancels it. The stored answer is provider state (see state.go):
// Retrieve and Cancel are refused, before sending, by a provider of another Origin.

// ResponseStatus is where a provider's stored answer stands. "" is an answer whose wire states
// no status (every wire but OpenAI's Responses API): complete by construction.
type ResponseStatus string

// The statuses of a stored answer (OpenAI Responses' status).
const (
	// StatusQueued: the answer waits to be worked on; it has no content yet.
	StatusQueued ResponseStatus = "queued"
	// StatusInProgress: the answer is being worked on; its content so far may be absent.
	StatusInProgress ResponseStatus = "in_progress"
	// StatusCompleted: the answer is complete.
	StatusCompleted ResponseStatus = "completed"
	// StatusIncomplete: the answer stopped early (FinishLength or FinishOther says why).
	StatusIncomplete ResponseStatus = "incomplete"
	// StatusCancelled: the answer was cancelled before it was complete; its content is what
	// was produced until then, if anything.
	StatusCancelled ResponseStatus = "cancelled"
)

// Pending reports whether the answer is not finished yet (queued or in progress): its Message
// is not the answer, and the caller retrieves it again later. A failed answer is never a
// response with a status: it is the *Error it failed with.
func (s ResponseStatus) Pending() bool { return s == StatusQueued || s == StatusInProgress }

// ErrResponseFailed is the cause (Error.Err; errors.Is finds it) of the error for an answer
// that itself failed — OpenAI Responses' status "failed", whatever its error's kind — rather
// than an exchange that failed: reading a stored answer that failed again gives the same
// failure, and only a new call may succeed.
var ErrResponseFailed = errors.New("the answer failed")

// BackgroundResponder is implemented by a provider that can answer in background mode
// (ChatRequest.Background): OpenAI's provider on the Responses API. The client's Retrieve and
// Cancel reach it on the route that stored the answer.
//
// Both methods take the StoredResponse of the answer (ChatResponse.Stored) and return it as it
// stands: a *ChatResponse whose Status says whether it is pending, complete, incomplete or
// cancelled, or the *Error it failed with (a failed answer, an unknown ID: KindNotFound or
// KindBadRequest as the server says, a transport failure). A StoredResponse whose Origin names
// another provider is refused with KindBadRequest before anything is sent; an empty Origin is
// taken as the provider's own. Neither retries: the client's pipeline does.
type BackgroundResponder interface {
	// Retrieve reads the stored answer's current state (OpenAI: GET /responses/{id}).
	Retrieve(ctx context.Context, stored StoredResponse) (*ChatResponse, error)
	// Cancel cancels the stored answer if it is pending and returns its state (OpenAI: POST
	// /responses/{id}/cancel). Cancelling a finished answer is not an error of this
	// interface: the server's answer (the response as it was, or its error) is returned.
	Cancel(ctx context.Context, stored StoredResponse) (*ChatResponse, error)
}

// ConversationKeeper is implemented by a provider that keeps conversations
// (ChatRequest.Conversation): OpenAI's provider on the Responses API (its Conversations API).
// The client's NewConversation reaches it.
type ConversationKeeper interface {
	// NewConversation creates an empty conversation (OpenAI: POST /conversations) and names it
	// with the provider's Origin, for ChatRequest.Conversation. It does not retry: the client's
	// pipeline does.
	NewConversation(ctx context.Context) (*Conversation, error)
}
