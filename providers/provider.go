package providers

import "context"

// EmbedRequest asks for one embedding per input.
type EmbedRequest struct {
	Model  string
	Inputs []string
}

// EmbedResponse holds the embeddings in input order.
type EmbedResponse struct {
	Provider string
	// Deployment is the deployment that served it, as in ChatResponse.
	Deployment string
	// Model is the model that served the call, as in ChatResponse.
	Model      string
	Embeddings [][]float32
	Usage      Usage
	RateLimit  *RateLimit
	// ClientRequestID is the call's own ID, as the caller gave it (client.WithRequestID).
	ClientRequestID string
	// FailedAttempts is the number of HTTP attempts that failed before the one that served
	// (set by the client).
	FailedAttempts int
	// Cost is what the call cost, as ChatResponse.Cost (set by a client that prices calls:
	// the input tokens the server reported at the model's input price, estimated from the
	// inputs when it reported none).
	Cost CallCost
}

// Provider turns neutral requests into calls to one LLM API. It is the contract between
// steady's client and every provider, in-tree or not:
//
//   - Concurrency: a Provider is safe for concurrent use.
//   - Transport: it makes exactly one HTTP exchange per call, over the *http.Client it was
//     built with (the client gives it one whose transport is the provider's resilience
//     pipeline). It never retries, never follows a redirect, and never sleeps: the pipeline is
//     the only retry layer.
//   - Requests: it refuses a request it cannot express before sending anything, with a *Error
//     of KindBadRequest (ChatRequest.Validate and EmbedRequest.Validate check the neutral
//     rules); it never modifies req.
//   - Bodies: it closes every response body it receives, on every path, and reads each within
//     its Limits (a LimitError past them).
//   - Errors: a failure the API reported (an error status, an error envelope, a 200 that is
//     not an answer, a refusal, an answer cut by a content filter) is a *Error with the kind
//     that fits (ErrorKind), the HTTP status, the server's hint and request ID, and no secret
//     in any field. Any other failure — a network
//     error, the pipeline's rejection (circuit open, bulkhead full, timeout, redirect), the
//     caller's cancellation — is either mapped to its kind (KindCanceled when ctx has ended)
//     or returned as the http.Client gave it, and the client maps it.
//   - Streams: ChatStream returns once the response headers arrived (an error status is
//     returned there, never as a stream). The Stream's Recv yields deltas in order, then a
//     last delta with Done, FinishReason and Usage, then io.EOF; a stream that ends before its
//     finish reason is KindStreamTruncated, never io.EOF, and one that ends after it is
//     complete (see Stream for every rule); every failure carries the text delivered so far in
//     Error.Partial and the usage reported so far in Error.Usage. A failing Recv leaves the
//     connection open so the caller can report the failure to the pipeline before it calls
//     Close; Close releases the connection, may be called more than once and from another
//     goroutine, and must be called.
//   - Capabilities: it says what it can do through Describer (Description.Capabilities); a
//     provider that says nothing is tried for everything but stored answers.
//   - Provider state: it sends back only the state it can read (ThinkingBlock, by its fields
//     and Origin) and drops the rest; it refuses a request that continues from a stored answer
//     (Previous) it does not hold, or cannot hold at all, with KindBadRequest before sending
//     (see state.go).
type Provider interface {
	// Name is the provider's configured name, e.g. "openai" or "azure-eu".
	Name() string
	// Chat sends req and waits for the whole answer.
	Chat(ctx context.Context, req *ChatRequest) (*ChatResponse, error)
	// ChatStream sends req and returns the answer as it is generated.
	ChatStream(ctx context.Context, req *ChatRequest) (Stream, error)
	// Embed returns one embedding per input of req, in input order.
	Embed(ctx context.Context, req *EmbedRequest) (*EmbedResponse, error)
}
