package providers

import "time"

// The GenAI systems a provider reports in Description.System, spelled as the OpenTelemetry GenAI
// semantic conventions spell gen_ai.provider.name. A server that speaks OpenAI's protocol is
// SystemOpenAI, as the conventions ask, whoever runs it.
const (
	SystemOpenAI      = "openai"
	SystemAzureOpenAI = "azure.ai.openai"
	SystemAnthropic   = "anthropic"
)

// Description is what a provider says about itself, to the client and to telemetry.
type Description struct {
	// System is the GenAI system the provider calls (SystemOpenAI…), "" when unknown.
	System string
	// DefaultModel is the model the provider uses when a request names none, "" when none.
	DefaultModel string
	// Capabilities is what the provider can do; zero means "not declared": everything is
	// tried.
	Capabilities Capabilities
}

// Describer is implemented by providers that can describe themselves, so that a fallback
// chain knows what they can do and telemetry can name the system and the model of a call that
// left them to the provider. It is optional: a provider without it is tried for everything and
// reported with an unknown system.
type Describer interface {
	Describe() Description
}

// Operation is the kind of a logical call, named as the GenAI semantic conventions name
// gen_ai.operation.name.
type Operation string

// The operations of the client.
const (
	OperationChat       Operation = "chat"
	OperationEmbeddings Operation = "embeddings"
)

// CallStart describes a logical call of the client as it begins, for telemetry. It holds the
// request's parameters, never its messages.
type CallStart struct {
	Operation Operation
	Stream    bool // ChatStream
	// Provider, System and Model are those of the chain's first provider: its name, its GenAI
	// system and the model it is asked for ("" when neither the request nor the provider names
	// one).
	Provider, System, Model string
	MaxTokens               int      // 0 when unset
	Temperature, TopP       *float64 // nil when unset
}

// TryResult is how one provider of the fallback chain handled a logical call.
type TryResult struct {
	Provider, System, Model string // as in CallStart, for this provider
	// ResponseModel and ResponseID are the provider's model and response ID, when it says.
	ResponseModel, ResponseID string
	FinishReason              FinishReason
	// Usage is the provider's token count; zero when it reported none.
	Usage Usage
	// Err is the failure, nil when the provider served the call.
	Err *Error
	// Attempts is the number of HTTP attempts the resilience pipeline made, retries
	// included; 0 when it rejected the call before any (open circuit, full bulkhead).
	Attempts int
	// Duration is the time from the start of the try to its end: for a stream, to the end of
	// the stream.
	Duration time.Duration
	// TimeToFirstChunk is, for a stream, the time from the start of the try until its first
	// content arrived; 0 for other calls and for streams that failed before any content.
	TimeToFirstChunk time.Duration
	// Closed reports a stream that the caller closed before it ended.
	Closed bool
	// Next is the provider the chain tries after this failure, "" when it stops here.
	Next string
}

// CallTracker follows one logical call for telemetry. The client calls TryDone once for each
// provider it tried, in chain order, then End once. Both are called on the goroutine of the
// call, except for a stream that ends by Close from another goroutine.
type CallTracker interface {
	// TryDone reports how one provider handled the call.
	TryDone(r TryResult)
	// End reports the end of the call: err is nil when a provider served it, otherwise the
	// error the call returned. A stream's call ends when the stream does (Done, a failure, or
	// Close).
	End(err error)
}
