package openai

import (
	"context"
	"fmt"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/internal/wire"
)

// Provider is a providers.Provider for one OpenAI-protocol endpoint, built on go-openai. It
// is safe for concurrent use. Every call makes exactly one HTTP exchange over the configured
// *http.Client (go-openai never retries) and returns a *providers.Error on failure.
type Provider struct {
	scope       string // providers.Scoper
	name        string
	dialect     Dialect
	vendorHost  bool // Description.VendorHost: api.openai.com itself
	api         API
	responses   responsesWire // the Responses API's own wire (api == Responses)
	model       string
	streamUsage bool
	prefill     PrefillFlavor
	caps        providers.Capabilities // Config.Capabilities
	limits      providers.Limits
	errs        wire.Errors // knows the API key, to scrub it from errors
	client      *goopenai.Client
}

var (
	_ providers.Provider  = (*Provider)(nil)
	_ providers.Describer = (*Provider)(nil)
	_ providers.Scoper    = (*Provider)(nil)
)

// New builds a Provider from cfg. It returns an error, never containing the API key, when
// cfg names an unknown Dialect or lacks a required BaseURL or APIKey.
func New(cfg Config) (*Provider, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	var cc goopenai.ClientConfig
	if cfg.Dialect == Azure {
		cc = goopenai.DefaultAzureConfig(cfg.APIKey, cfg.BaseURL)
		cc.APIVersion = cfg.APIVersion
		deps := make(map[string]string, len(cfg.AzureDeployments))
		for k, v := range cfg.AzureDeployments {
			deps[k] = v
		}
		// Replaces go-openai's mapper, which strips "." from "3.5" model names.
		cc.AzureModelMapperFunc = func(model string) string {
			if d, ok := deps[model]; ok {
				return d
			}
			return model
		}
	} else {
		cc = goopenai.DefaultConfig(cfg.APIKey)
		cc.BaseURL = cfg.BaseURL
		cc.APIVersion = ""
	}
	errs := wire.NewErrors(cfg.Name, cfg.APIKey)
	cc.OrgID = cfg.Organization
	cc.HTTPClient = doer{client: wire.NewSender(cfg.HTTPClient), limits: cfg.Limits, errs: errs}
	cc.EmptyMessagesLimit = emptyMessagesLimit
	scope := providers.SharingScope(cfg.APIKey, string(cfg.Dialect), cfg.BaseURL, cfg.Organization)
	return &Provider{
		scope:       scope,
		caps:        cfg.Capabilities,
		name:        cfg.Name,
		dialect:     cfg.Dialect,
		vendorHost:  cfg.Dialect == OpenAI && wire.HostOf(cfg.BaseURL) == wire.HostOf(DefaultBaseURL),
		api:         cfg.API,
		responses:   newResponsesWire(cfg, scope),
		model:       cfg.Model,
		streamUsage: !cfg.OmitStreamUsage,
		prefill:     cfg.Prefill,
		limits:      cfg.Limits,
		errs:        errs,
		client:      goopenai.NewClientWithConfig(cc),
	}, nil
}

// SharingScope names what the provider calls, for shared state (providers.Scoper): a keyed
// hash of its dialect, base URL, organization and API key, never the key itself.
func (p *Provider) SharingScope() string { return p.scope }

// Name returns the configured provider name.
func (p *Provider) Name() string { return p.name }

// Describe names the provider's GenAI system for telemetry: providers.SystemAzureOpenAI for
// the Azure kind, providers.SystemOpenAI for OpenAI and for compatible servers (the GenAI
// semantic conventions name a system by the protocol its client speaks), and the default model.
// Unless Config.Capabilities says otherwise, it can do everything, stored responses only over
// the Responses API.
func (p *Provider) Describe() providers.Description {
	system := providers.SystemOpenAI
	if p.dialect == Azure {
		system = providers.SystemAzureOpenAI
	}
	caps := p.caps
	if caps == 0 {
		caps = providers.AllCapabilities
		if p.api != Responses {
			caps &^= providers.CapStoredResponses
		}
	}
	return providers.Description{System: system, DefaultModel: p.model, Capabilities: caps, VendorHost: p.vendorHost}
}

// ShapeFields names the body fields the provider sets itself to decide the kind of call, which
// a caller's extra fields may not replace (providers.Shaper).
func (p *Provider) ShapeFields() []string {
	if p.api == Responses {
		return responsesShapeFields
	}
	return shapeFields
}

// shapeFields are the body fields this provider writes to decide the kind of call and how its
// answer is read: streaming and its usage chunk, the number of choices (only the first is
// read, all are billed), the embeddings' encoding (the answer is read as floats), and the
// model (the route the call was paced and counted for).
var shapeFields = []string{"stream", "stream_options", "n", "encoding_format", "model"}

// Client returns the underlying go-openai client, for features the neutral API lacks
// (images, audio, files, assistants…). It runs over the same *http.Client, so its calls go
// through the resilience pipeline too, and its error bodies are closed by this package.
// Its errors are go-openai's own, not *providers.Error.
func (p *Provider) Client() *goopenai.Client { return p.client }

// Chat sends a chat completion (or, with Config.API Responses, a response: see responses.go)
// and waits for the whole answer. An answer that is not the one asked for is a
// *providers.Error, with what content it held in Partial, its usage in Usage and the rate-limit
// snapshot of its headers in RateLimit: a finish_reason "content_filter" is
// KindContentFiltered (the answer was cut), a message whose refusal field is set is KindRefused
// with the refusal as Message.
func (p *Provider) Chat(ctx context.Context, req *providers.ChatRequest) (*providers.ChatResponse, error) {
	if ctx == nil {
		return nil, p.badRequest(providers.NilContext)
	}
	if err := p.checkPrefill(req); err != nil {
		return nil, err
	}
	if p.api == Responses {
		return p.responsesChat(ctx, req)
	}
	msgs := getMessages(req)
	defer putMessages(msgs)
	creq, err := p.chatRequest(req, *msgs)
	if err != nil {
		return nil, err
	}
	call := newChatCall(ctx)
	defer call.done()
	x := &call.exchange
	x.prefill = p.prefillOf(req)
	resp, err := p.client.CreateChatCompletion(x, creq)
	if err != nil {
		return nil, p.toError(x, x, err)
	}
	if len(resp.Choices) == 0 {
		return nil, p.noAnswer(x, "no choices")
	}
	c := resp.Choices[0]
	if e := p.notTheAnswer(c, x); e != nil {
		u := usage(&resp.Usage)
		e.Usage = &u
		return nil, e
	}
	return &providers.ChatResponse{
		Provider:     p.name,
		Model:        p.errs.Field(resp.Model),
		ID:           p.errs.Field(resp.ID),
		Message:      fromMessage(c.Message),
		FinishReason: finishReason(c.FinishReason),
		Usage:        usage(&resp.Usage),
		RequestID:    p.errs.Field(wire.RequestID(x.header)),
		RateLimit:    providers.ParseRateLimit(x.header, time.Now()),
		Reasoning:    c.Message.ReasoningContent,
		JSON:         wire.Structured(req, c.Message.Content),
	}, nil
}

// Embed returns one float embedding per input, in input order.
func (p *Provider) Embed(ctx context.Context, req *providers.EmbedRequest) (*providers.EmbedResponse, error) {
	if ctx == nil {
		return nil, p.badRequest(providers.NilContext)
	}
	if err := req.Validate(); err != nil {
		return nil, p.refuse(err)
	}
	model := req.Model
	if model == "" {
		model = p.model
	}
	if model == "" || len(req.Inputs) == 0 {
		return nil, p.badRequest("an embedding request needs a model (or Config.Model) and at least one input")
	}
	call := newChatCall(ctx)
	defer call.done()
	x := &call.exchange
	resp, err := p.client.CreateEmbeddings(x, goopenai.EmbeddingRequest{
		Input:          req.Inputs,
		Model:          goopenai.EmbeddingModel(model),
		EncodingFormat: goopenai.EmbeddingEncodingFormatFloat,
	})
	if err != nil {
		return nil, p.toError(x, x, err)
	}
	if len(resp.Data) == 0 {
		return nil, p.noAnswer(x, "no embeddings")
	}
	out := &providers.EmbedResponse{
		Provider:   p.name,
		Model:      p.errs.Field(string(resp.Model)),
		Embeddings: make([][]float32, len(req.Inputs)),
		Usage:      usage(&resp.Usage),
		RateLimit:  providers.ParseRateLimit(x.header, time.Now()),
	}
	for _, d := range resp.Data {
		if d.Index < 0 || d.Index >= len(out.Embeddings) {
			return nil, p.errs.Finish(&providers.Error{Kind: providers.KindUnavailable, StatusCode: x.status,
				Message: fmt.Sprintf("embedding index %d out of range for %d inputs", d.Index, len(req.Inputs))})
		}
		out.Embeddings[d.Index] = d.Embedding
	}
	for i, v := range out.Embeddings {
		if v == nil {
			return nil, p.errs.Finish(&providers.Error{Kind: providers.KindUnavailable, StatusCode: x.status,
				Message: fmt.Sprintf("no embedding for input %d", i)})
		}
	}
	return out, nil
}

// notTheAnswer returns the error of a choice that holds no answer although the exchange went
// well (see Chat), nil for an answer. x is the call's exchange.
func (p *Provider) notTheAnswer(c goopenai.ChatCompletionChoice, x *exchange) *providers.Error {
	var e *providers.Error
	switch {
	case c.FinishReason == goopenai.FinishReasonContentFilter:
		e = p.errs.Filtered(c.Message.Refusal)
	case c.Message.Refusal != "":
		e = p.errs.Refused(c.Message.Refusal, "")
	default:
		return nil
	}
	e.StatusCode, e.RequestID, e.Partial = x.status, p.errs.Field(wire.RequestID(x.header)), c.Message.Content
	e.RateLimit = providers.ParseRateLimit(x.header, time.Now())
	return e
}

// refuse finishes the error of a request's Validate as this provider's.
func (p *Provider) refuse(err error) *providers.Error {
	return p.errs.Finish(err.(*providers.Error))
}

// badRequest is the error for a request this package refuses before sending it.
func (p *Provider) badRequest(msg string) *providers.Error {
	return p.errs.New(providers.KindBadRequest, msg)
}

// refuseRawTools refuses a request with a tool given in a provider's own shape
// (providers.Tool.Raw): both of OpenAI's wires send function tools only, and an Anthropic
// server tool means nothing here. The client skips this provider for such a request; a direct
// call learns why, before anything is sent.
func (p *Provider) refuseRawTools(req *providers.ChatRequest) *providers.Error {
	for i, t := range req.Tools {
		if t.Raw != nil {
			return p.badRequest(fmt.Sprintf("Tools[%d] (%s) is a tool of %q: this provider sends function tools only; "+
				"send the request to a provider of %q", i, t.RawType(), t.System, t.System))
		}
	}
	return nil
}
