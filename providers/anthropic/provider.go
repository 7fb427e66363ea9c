package anthropic

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/internal/wire"
)

// Provider is a providers.Provider for the Anthropic Messages API. It is safe for concurrent
// use. Every call makes exactly one HTTP exchange over the configured *http.Client (this
// package never retries; the resilience pipeline underneath does) and returns a
// *providers.Error on failure.
type Provider struct {
	scope    string // providers.Scoper
	name     string
	url      string // BaseURL + /v1/messages
	countURL string // BaseURL + /v1/messages/count_tokens
	// countOn and countTimeout are Config.CountTokens and Config.CountTimeout
	// (providers.TokenCounter's PreflightCount).
	countOn      bool
	countTimeout time.Duration
	apiKey       string
	version      string
	beta         string // the anthropic-beta header, "" for none
	model        string
	maxTokens    int
	limits       providers.Limits
	// schemaByTool sends structured outputs as forced tool use (Config.SchemaByTool).
	schemaByTool bool
	thinking     map[string]ThinkingMode // Config.ThinkingModes, a copy
	caps         providers.Capabilities  // Config.Capabilities
	errs         wire.Errors             // knows the API key, to scrub it from errors
	client       wire.Sender
	given        *http.Client // the client of Config.HTTPClient, for HTTPClient
}

var (
	_ providers.Provider     = (*Provider)(nil)
	_ providers.Describer    = (*Provider)(nil)
	_ providers.Scoper       = (*Provider)(nil)
	_ providers.TokenCounter = (*Provider)(nil)
)

// New builds a Provider from cfg. It returns an error, never containing the API key, when
// cfg lacks the API key or holds an invalid value.
func New(cfg Config) (*Provider, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Provider{
		scope:        providers.SharingScope(cfg.APIKey, "anthropic", cfg.BaseURL),
		name:         cfg.Name,
		url:          cfg.BaseURL + "/v1/messages",
		countURL:     cfg.BaseURL + "/v1/messages/count_tokens",
		countOn:      cfg.CountTokens,
		countTimeout: cfg.CountTimeout,
		apiKey:       cfg.APIKey,
		version:      cfg.Version,
		beta:         strings.Join(cfg.Beta, ","),
		model:        cfg.Model,
		maxTokens:    cfg.DefaultMaxTokens,
		schemaByTool: cfg.SchemaByTool,
		thinking:     cfg.ThinkingModes,
		caps:         cfg.Capabilities,
		limits:       cfg.Limits,
		errs:         wire.NewErrors(cfg.Name, cfg.APIKey),
		client:       wire.NewSender(cfg.HTTPClient),
		given:        cfg.HTTPClient,
	}, nil
}

// SharingScope names what the provider calls, for shared state (providers.Scoper): a keyed
// hash of its base URL and API key, never the key itself.
func (p *Provider) SharingScope() string { return p.scope }

// Name returns the configured provider name.
func (p *Provider) Name() string { return p.name }

// Describe names the provider's GenAI system (providers.SystemAnthropic), its default model,
// and what it can do: everything but embeddings and stored responses.
func (p *Provider) Describe() providers.Description {
	caps := p.caps
	if caps == 0 {
		caps = providers.AllCapabilities &^ providers.CapEmbeddings &^ providers.CapStoredResponses
	}
	return providers.Description{System: providers.SystemAnthropic, DefaultModel: p.model, Capabilities: caps,
		VendorHost: wire.HostOf(p.url) == wire.HostOf(DefaultBaseURL)}
}

// ShapeFields names the body fields the provider sets itself to decide the kind of call, which
// a caller's extra fields may not replace (providers.Shaper).
func (p *Provider) ShapeFields() []string { return shapeFields }

// shapeFields are the body fields this provider writes to decide the kind of call and how its
// answer is read: streaming, and the model (the route the call was paced and counted for).
var shapeFields = []string{"stream", "model"}

// HTTPClient returns the *http.Client this provider sends through. When the provider was
// built by the client package, that is the provider's resilience pipeline: hand it to the
// official anthropic-sdk-go (option.WithHTTPClient, with option.WithMaxRetries(0) so the
// pipeline stays the only retry layer) for API features the neutral types lack.
func (p *Provider) HTTPClient() *http.Client { return p.given }

// Chat sends a message and waits for the whole answer. The answer's text blocks are joined
// into Message.Content and its tool_use blocks become Message.ToolCalls; Usage.InputTokens
// counts the whole prompt, cached parts included. An answer whose stop_reason is "refusal" is
// a *providers.Error of KindRefused (stop_details' category in Code, its explanation in
// Message), with the text that came before the refusal in Partial, the usage in Usage and the
// rate-limit snapshot of its headers in RateLimit.
func (p *Provider) Chat(ctx context.Context, req *providers.ChatRequest) (*providers.ChatResponse, error) {
	if ctx == nil {
		return nil, p.badRequest(providers.NilContext)
	}
	body, err := p.buildRequest(req, false)
	if err != nil {
		return nil, err
	}
	resp, err := p.send(ctx, p.url, body, false)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := wire.ReadAll(resp.Body, p.limits.MaxResponseBytes, "MaxResponseBytes")
	if err != nil {
		return nil, p.errs.ReadFailure(ctx, resp, "reading the response", err)
	}
	var w wireResponse
	if err := decodeAnswer(data, &w); err != nil {
		return nil, p.errs.ReadFailure(ctx, resp, "decoding the response", err)
	}
	if !w.isAnswer() {
		return nil, p.notAnAnswer(resp, data)
	}
	forced := ""
	if req.Schema != nil && p.schemaByTool {
		forced = schemaTool(req.Schema)
	}
	msg := p.fromResponse(&w, data, forced)
	if w.StopReason == stopRefusal {
		// Declined, at once or part way: an outcome with its kind, never a success. Its usage
		// was billed all the same.
		e := p.refusal(w.StopDetails)
		u := w.Usage.neutral()
		e.StatusCode, e.RequestID, e.Partial, e.Usage = resp.StatusCode, p.errs.Field(wire.RequestID(resp.Header)), msg.Content, &u
		e.RateLimit = providers.ParseRateLimit(resp.Header, time.Now())
		return nil, e
	}
	finish := finishReason(w.StopReason)
	if forced != "" && finish == providers.FinishToolCalls && len(msg.ToolCalls) == 0 {
		finish = providers.FinishStop // the "tool call" was the answer
	}
	return &providers.ChatResponse{
		Provider:     p.name,
		Model:        p.errs.Field(w.Model),
		ID:           p.errs.Field(w.ID),
		Message:      msg,
		FinishReason: finish,
		Usage:        w.Usage.neutral(),
		RequestID:    p.errs.Field(wire.RequestID(resp.Header)),
		RateLimit:    providers.ParseRateLimit(resp.Header, time.Now()),
		Reasoning:    reasoningText(msg),
		JSON:         wire.Structured(req, msg.Content),
	}, nil
}

// ChatStream sends a message with stream: true and returns the answer as it is generated.
// It returns once the response headers arrived: an HTTP error status is returned here, as a
// *providers.Error, and never as a stream. The caller must Close the stream.
func (p *Provider) ChatStream(ctx context.Context, req *providers.ChatRequest) (providers.Stream, error) {
	if ctx == nil {
		return nil, p.badRequest(providers.NilContext)
	}
	body, err := p.buildRequest(req, true)
	if err != nil {
		return nil, err
	}
	resp, err := p.send(ctx, p.url, body, true)
	if err != nil {
		return nil, err
	}
	if wire.IsJSON(resp.Header) {
		// A JSON 2xx cannot be the answer to a stream request: a gateway's error envelope,
		// usually. Classify it as such.
		defer resp.Body.Close()
		data, _, err := wire.ReadError(resp.Body, p.limits.MaxErrorBodyBytes)
		if err != nil { // cut short (the pipeline's timeout, say): not the server's answer
			return nil, p.errs.ReadFailure(ctx, resp, "reading the response", err)
		}
		return nil, p.notAnAnswer(resp, data)
	}
	forced := ""
	if req.Schema != nil && p.schemaByTool {
		forced = schemaTool(req.Schema)
	}
	return newStream(ctx, p, resp, forced), nil
}

// Embed always fails with a bad_request *providers.Error: Anthropic has no embeddings API
// (it points to Voyage AI). Use an OpenAI-compatible provider for embeddings.
func (p *Provider) Embed(context.Context, *providers.EmbedRequest) (*providers.EmbedResponse, error) {
	return nil, p.badRequest("Anthropic has no embeddings API; use an OpenAI-compatible provider for embeddings")
}

// send POSTs body to url (/v1/messages, or its count_tokens). It returns the response only for a 2xx status, with its
// body open for the caller to close; every other outcome is a *providers.Error, and the body
// of an error response is read and closed here.
//
// The body is a *bytes.Reader, so http.NewRequestWithContext sets GetBody and the resilience
// pipeline can replay the request on retry.
func (p *Provider) send(ctx context.Context, url string, body []byte, stream bool) (*http.Response, error) {
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, p.errs.Finish(&providers.Error{Kind: providers.KindBadRequest, Message: "building the request: " + err.Error(), Err: err})
	}
	r.Header.Set("X-Api-Key", p.apiKey)
	r.Header.Set("Anthropic-Version", p.version)
	r.Header.Set("Content-Type", "application/json")
	if stream {
		r.Header.Set("Accept", "text/event-stream")
	} else {
		r.Header.Set("Accept", "application/json")
	}
	if p.beta != "" {
		r.Header.Set("Anthropic-Beta", p.beta)
	}
	resp, err := p.client.Do(r)
	if err != nil {
		return nil, p.transportError(ctx, err)
	}
	if e := p.errs.Redirect(resp); e != nil {
		_ = resp.Body.Close()
		return nil, e
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, p.httpError(resp)
	}
	return resp, nil
}
