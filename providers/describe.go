package providers

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
	// VendorHost is true when the provider calls its vendor's own service (api.openai.com,
	// api.anthropic.com), whose models go by the vendor's names; false for a compatible server,
	// a proxy or gateway (which may serve any vendor's models) and for Azure (whose models are
	// deployment names). The client's configuration warnings (client.Client.Warnings) trust a
	// model's name only on a vendor's own host.
	VendorHost bool
}

// Shaper is implemented by providers that write JSON request bodies, to name the top-level
// fields they set themselves because those decide the kind of call and how its answer is read
// ("stream", "stream_options", "model"…). A caller's extra fields (client.WithExtraFields) may
// not replace them: a call asked for as a whole answer cannot be turned into a stream, nor a
// route into another one, behind the client's back. It is optional: a provider without it
// protects no field.
type Shaper interface {
	ShapeFields() []string
}

// Describer is implemented by providers that can describe themselves, so that a fallback
// chain knows what they can do and telemetry can name the system and the model of a call that
// left them to the provider. It is optional: a provider without it is tried for everything and
// reported with an unknown system.
type Describer interface {
	Describe() Description
}
