package client

import (
	"fmt"
	"maps"
	"slices"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
	"github.com/steadyllm/steady/tokens"
)

// Token estimates. Pacing under a tokens-per-minute limit, a budget's pre-flight cost and a
// route's context window all start from one number: the client's estimate of a call's prompt
// tokens (plus the most it may answer). Each route estimates for itself, by the best method it
// has:
//
//   - EstimateTokenizer: the model's own encoding, counted in process in the chat format
//     (tokens.CountChatAs: each message's overhead, tool definitions and calls, images by the
//     documented tile rules). A route of any provider but Anthropic whose model the table of
//     tokens.EncodingForModel knows (gpt-4o, gpt-4.1, gpt-5, the o-series: o200k_base; gpt-4,
//     gpt-3.5: cl100k_base), or that WithTokenEncoding names an encoding for, counts this way
//     when the encoding is linked into the program: import _
//     "github.com/steadyllm/steady/tokens/tiktoken" (about 10 MB of vocabularies; the core
//     module links none).
//   - EstimateLearnt: every other route — Anthropic's models, an OpenAI-compatible server's
//     own, an OpenAI model whose encoding is not linked — counts the prompt with
//     tokens.Heuristic in the same chat format and multiplies it by the ratio the route learnt
//     of billed input tokens to those counts (resilience.Pipeline.LearnTokens): from the usage
//     every answer reports, and from the provider's own counts where it makes them (Anthropic's
//     count_tokens). The ratio is bounded and samples a server could forge are dropped.
//   - EstimateHeuristic: the same, before the route has learnt anything.
//   - EstimateProvider: the provider's own count of the prompt (providers.TokenCounter), made
//     before a try where configured (see count.go), or by CountTokens.
//
// Counting costs time (an exact count of 1,000 prompt tokens takes about 0.3 ms on first sight
// of its text; tokens/tiktoken caches the counts of long texts that repeat, such as a system
// prompt or a tool list), so a call counts only what something needs: a try on a route with a
// tokens-per-minute limit (its debit), a client with budgets (the pre-flight cost, priced on
// the chain's first route) or a context window declared for a route the call may take (that
// route's estimate). A call that needs none counts nothing, and learns nothing.

// DefaultAnswerTokens is the answer a request that sets no MaxTokens is assumed to need, for
// pacing, budgets and context windows.
const DefaultAnswerTokens = 256

// EstimateMethod says how a token estimate was made.
type EstimateMethod string

// The estimate methods, best first.
const (
	// EstimateProvider is the provider's own count (providers.TokenCounter: Anthropic's
	// count_tokens).
	EstimateProvider EstimateMethod = "provider"
	// EstimateTokenizer is the model's own encoding, counted in process in the chat format.
	EstimateTokenizer EstimateMethod = "tokenizer"
	// EstimateLearnt is tokens.Heuristic's count times the ratio the route learnt from the
	// usage its answers reported.
	EstimateLearnt EstimateMethod = "learnt"
	// EstimateHeuristic is tokens.Heuristic's count alone: the route has learnt nothing yet.
	EstimateHeuristic EstimateMethod = "heuristic"
)

// TokenEstimate is an estimate (or count) of the tokens a chat call uses on one route.
type TokenEstimate struct {
	// Input is the prompt's tokens: system prompt, messages, tool definitions and calls,
	// images, the chat format's overhead.
	Input int
	// Answer is the most the answer may use: the request's MaxTokens, or
	// DefaultAnswerTokens when it sets none. Pacing and budgets debit Input + Answer.
	Answer int
	// Method is how Input was made; Encoding names the encoding that counted it
	// (tokens.O200kBase…, tokens.Heuristic's "heuristic"), "" for a provider's count.
	Method   EstimateMethod
	Encoding string
	// Learnt is what the route learnt from its answers' usage (resilience.Pipeline.TokenModel):
	// the weights of the heuristic's count of the prompt's text and of its chat-format frame
	// that made Input for EstimateLearnt, and how many answers it learnt them from; 1, 1 and 0
	// before any, and for a route with a tokenizer, which learns nothing.
	Learnt resilience.TokenModel
	// Provider, Deployment and Model name the route: the chain's first that can serve the
	// call, and the model as it would be sent.
	Provider, Deployment, Model string
}

// Total returns Input + Answer: what pacing debits and a budget prices before the call.
func (e TokenEstimate) Total() int { return e.Input + e.Answer }

// EstimateTokens returns tokens.Heuristic's estimate of req: its prompt in the chat format
// (EstimateInputTokens) plus MaxTokens, or DefaultAnswerTokens when it sets none. It is what a
// route that has learnt nothing estimates; Client.EstimateTokens gives a route's own estimate.
func EstimateTokens(req *providers.ChatRequest) int {
	if req == nil {
		return 0
	}
	return EstimateInputTokens(req) + answerTokens(req)
}

// EstimateInputTokens is tokens.Heuristic's estimate of req's prompt tokens in the chat
// format: tokens.CountChat with the heuristic, plus the reasoning and provider blocks sent back
// with earlier answers, which the chat-format count leaves out. A nil request counts 0.
func EstimateInputTokens(req *providers.ChatRequest) int {
	if req == nil {
		return 0
	}
	return promptTokens(tokens.Heuristic, req.Model, req)
}

// promptTokens counts req's prompt with enc as model's (tokens.CountChatAs), and the thinking
// and provider blocks it carries back, which are sent and billed but which CountChatAs does not
// see.
func promptTokens(enc tokens.Encoding, model string, req *providers.ChatRequest) int {
	n := tokens.CountChatAs(enc, model, req)
	for i := range req.Messages {
		m := &req.Messages[i]
		for _, t := range m.Thinking {
			n += enc.Count(t.Text)
		}
		for _, b := range m.ProviderBlocks {
			n += enc.Count(string(b.Raw))
		}
	}
	return n
}

// answerTokens is the answer's share of a call's estimate: MaxTokens, or DefaultAnswerTokens.
func answerTokens(req *providers.ChatRequest) int {
	if req.MaxTokens > 0 {
		return req.MaxTokens
	}
	return DefaultAnswerTokens
}

// estimate is a route's estimate of a prompt: n tokens, made by method. text and frame are the
// heuristic's count of the prompt's text and of its chat-format frame, which the route's
// learnt model weighed (what the route learns from once the answer's usage is known), 0 for an
// exact count.
type estimate struct {
	n, text, frame int
	method         EstimateMethod
	enc            string
	model          resilience.TokenModel
}

// frameOnly is an encoding that counts no text: tokens.CountChatAs with it counts a prompt's
// frame alone — the chat format's tokens a message and a reply, tool framing, images.
type frameOnly struct{}

func (frameOnly) Name() string     { return "frame" }
func (frameOnly) Count(string) int { return 0 }

// promptParts is tokens.Heuristic's count of req's prompt as model's, in two parts: its text
// and its frame.
func promptParts(model string, req *providers.ChatRequest) (text, frame int) {
	frame = promptTokens(frameOnly{}, model, req)
	return promptTokens(tokens.Heuristic, model, req) - frame, frame
}

// encodingOf returns the encoding that counts route r's prompts exactly, nil when it has none
// (a learnt estimate): the one WithTokenEncoding names for it ("none": nil), else, for a
// provider other than Anthropic, the registered encoding of its model's name.
func (c *Client) encodingOf(r route) tokens.Encoding {
	model := r.modelName()
	if ov, ok := c.encodings[r.e.name]; ok {
		name, ok := ov.byModel[model]
		if !ok {
			name = ov.all
		}
		if name != "" {
			enc, _ := tokens.Lookup(name) // nil for TokenEncodingNone; New checked the rest
			return enc
		}
	}
	if r.e.system == providers.SystemAnthropic {
		return nil
	}
	enc, _ := tokens.ForModel(model)
	return enc
}

// modelName is the name of r's model: as sent, or, for a call that names none, the provider's
// default (the route's key).
func (r route) modelName() string {
	if r.model != "" {
		return r.model
	}
	return r.key
}

// estimatePrompt is route r's estimate of req's prompt (req asks for r.model).
func (c *Client) estimatePrompt(r route, req *providers.ChatRequest) estimate {
	if enc := c.encodingOf(r); enc != nil {
		return estimate{n: promptTokens(enc, r.modelName(), req), method: EstimateTokenizer, enc: enc.Name()}
	}
	text, frame := promptParts(r.modelName(), req)
	return learnt(r.d.pipeline.Route(r.key), text, frame)
}

// learnt is the estimate, on a route whose pipeline is pipe, of a prompt the heuristic counts
// text tokens of text and frame of frame: weighed by what the route learnt.
func learnt(pipe *resilience.Pipeline, text, frame int) estimate {
	m := pipe.TokenModel()
	e := estimate{n: m.Estimate(text, frame), text: text, frame: frame, method: EstimateHeuristic, enc: tokens.Heuristic.Name(), model: m}
	if m.Samples > 0 {
		e.method = EstimateLearnt
	}
	return e
}

// estimateEmbed is route r's estimate of the tokens of an embedding request's inputs.
func (c *Client) estimateEmbed(r route, req *providers.EmbedRequest) estimate {
	if enc := c.encodingOf(r); enc != nil {
		return estimate{n: tokens.CountEmbedding(enc, req.Inputs), method: EstimateTokenizer, enc: enc.Name()}
	}
	return learnt(r.d.pipeline.Route(r.key), tokens.CountEmbedding(tokens.Heuristic, req.Inputs), 0)
}

// learnt is what the route of e had learnt when it made e: nothing for an exact count.
func (e estimate) learnt() resilience.TokenModel {
	if e.model.Samples == 0 {
		return resilience.TokenModel{Text: 1, Frame: 1}
	}
	return e.model
}

// counts reports whether a try on the route whose pipeline is pipe estimates its prompt: to
// debit it from the route's tokens-per-minute limit, or, for a client that keeps budgets or
// declares context windows, so that the route learns what its next estimates need (and
// Deployments shows it).
func (c *Client) counts(pipe *resilience.Pipeline) bool {
	return c.estimating || pipe.PacesTokens()
}

// learn teaches route r's pipeline, from an answer whose usage billed input tokens, what its
// estimate e of the prompt was worth: nothing for an exact count or a usage of none.
func learn(pipe *resilience.Pipeline, e estimate, input int) {
	if e.text+e.frame > 0 && input > 0 {
		pipe.LearnTokens(e.text, e.frame, input)
	}
}

// TokenEncodingNone, given to WithTokenEncoding, has a provider's or a model's prompts
// estimated by the heuristic and the learnt ratio even where the model's name says which
// encoding it uses (a fine-tune or a server that bills its own way).
const TokenEncodingNone = "none"

// encodingChoice is what WithTokenEncoding chose for a provider: all for every model ("" for
// the table's), byModel for the models named.
type encodingChoice struct {
	all     string
	byModel map[string]string
}

// WithTokenEncoding names the encoding that counts the prompts of provider name's models
// exactly: encoding is a registered encoding (tokens.O200kBase, tokens.Cl100kBase — registered
// by importing github.com/steadyllm/steady/tokens/tiktoken — or one of the program's own,
// tokens.Register) or TokenEncodingNone, for models, or every model of the provider when none
// are named. It replaces the model table (tokens.EncodingForModel) for them: for an Azure
// deployment or a server whose model names the table does not know, or a model that bills its
// own way. An encoding not registered when New runs is an error naming the import that
// registers it.
func WithTokenEncoding(name, encoding string, models ...string) Option {
	return func(b *builder) error {
		if b.spec(name) == nil {
			return fmt.Errorf("client: WithTokenEncoding: unknown provider %q", name)
		}
		if encoding == "" {
			return fmt.Errorf("client: WithTokenEncoding(%q, %q): the encoding must be named (%s, %s, or %q)",
				name, encoding, tokens.O200kBase, tokens.Cl100kBase, TokenEncodingNone)
		}
		if b.c.encodings == nil {
			b.c.encodings = map[string]encodingChoice{}
		}
		ch := b.c.encodings[name]
		if len(models) == 0 {
			ch.all = encoding
		}
		for _, m := range models {
			if ch.byModel == nil {
				ch.byModel = map[string]string{}
			}
			ch.byModel[m] = encoding
		}
		b.c.encodings[name] = ch
		return nil
	}
}

// checkEncodings reports the encodings WithTokenEncoding names that no package registered.
func (c *Client) checkEncodings() []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(c.encodings)) {
		ch := c.encodings[name]
		check := func(model, enc string) {
			if enc == "" || enc == TokenEncodingNone {
				return
			}
			if _, ok := tokens.Lookup(enc); ok {
				return
			}
			what := fmt.Sprintf("provider %q", name)
			if model != "" {
				what += fmt.Sprintf(", model %q", model)
			}
			hint := "register it with tokens.Register"
			if enc == tokens.O200kBase || enc == tokens.Cl100kBase {
				hint = `import _ "github.com/steadyllm/steady/tokens/tiktoken" to link it`
			}
			errs = append(errs, fmt.Errorf("client: WithTokenEncoding: %s: encoding %q is not registered (%s)", what, enc, hint))
		}
		check("", ch.all)
		for _, m := range slices.Sorted(maps.Keys(ch.byModel)) {
			check(m, ch.byModel[m])
		}
	}
	return errs
}

// EstimateTokens returns the estimate of req's tokens on the route the call would be sent to
// first — the first provider of its chain (WithProviders, WithPolicy… as for Chat) that can
// serve it, its first deployment that can, for the model it would be asked for — by that
// route's best method (see TokenEstimate.Method): what pacing would debit, a budget price and a
// context window hold. Nothing is sent; the provider's own count is CountTokens. A request
// that fails validation, or a chain with no route that can serve it, is an error.
func (c *Client) EstimateTokens(req *providers.ChatRequest, opts ...CallOption) (TokenEstimate, error) {
	if err := req.Validate(); err != nil {
		return TokenEstimate{}, err
	}
	pl, err := c.planFor(collect(opts))
	if err != nil {
		return TokenEstimate{}, err
	}
	w := walk{c: c, ask: askOf(req, false), cur: cursor{chain: pl.chain}}
	r, ok := w.first()
	if !ok {
		return TokenEstimate{}, &providers.Error{Kind: providers.KindBadRequest,
			Message: "no provider of the chain can serve the request"}
	}
	sent := withModel(req, r.model)
	e := c.estimatePrompt(r, sent)
	return TokenEstimate{Input: e.n, Answer: answerTokens(req), Method: e.method, Encoding: e.enc,
		Learnt: e.learnt(), Provider: r.e.name, Deployment: r.d.name, Model: r.modelName()}, nil
}

// imagesOf counts the image parts of req's messages.
func imagesOf(req *providers.ChatRequest) int {
	n := 0
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			if p.Image != nil {
				n++
			}
		}
	}
	return n
}

// textTokens estimates the tokens of n bytes of answer text whose text is gone (a stream
// counts what it delivered, not what): four bytes a token, rounded up.
func textTokens(n int) int { return (n + 3) / 4 }
