package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/internal/wire"
)

// The Responses API (Config.API Responses) is spoken here, by hand, as the Anthropic provider
// speaks the Messages API: go-openai has no Responses client. Requests go out over the same
// *http.Client as the chat completions (the resilience pipeline), with the same rules — one
// exchange, no redirect followed, every body bounded by Limits, every failure one
// *providers.Error classified by the rules every wire shares.
//
// The neutral request maps to it as follows:
//
//   - Messages become input items: a system message a "system" message, a user message a
//     "message" of its text or of input_text and input_image parts, an assistant message its
//     compaction item (of this provider's Origin; another's is dropped, or, in a pruned
//     conversation, refused), its reasoning items (the ThinkingBlocks with an ID of this
//     provider's Origin; others are dropped, see providers/state.go), then a "message" of its
//     text and a "function_call" per tool call, and a tool result a "function_call_output".
//   - Tools become function tools with strict false (the API's default is strict), the tool
//     choice tool_choice, a Schema text.format json_schema, FormatJSON text.format
//     json_object, Reasoning reasoning.effort and reasoning.summary, MaxTokens
//     max_output_tokens (at least 16, the least the API accepts: a smaller MaxTokens is sent
//     as 16), Temperature and TopP as they are, Previous previous_response_id, Conversation
//     conversation (its ID), CompactThreshold context_management [{"type":"compaction",
//     "compact_threshold":N}], Store store and Include include — plus reasoning.encrypted_content when Store is false, without
//     which the reasoning of a conversation that stores nothing cannot be sent back.
//     Background is background (see responses_background.go; a cut background stream
//     resumes, see responses_resume.go), refused with Store false.
//   - Stop sequences have no Responses form: a request with Stop is refused (bad_request).
//
// The answer maps back: output_text to Message.Content, function_call items to ToolCalls
// (call_id as ID), reasoning items to Message.Thinking (ID, summary text, encrypted content,
// the provider's Origin) and their summary to Reasoning, a compaction item to
// Message.Compaction (ID, encrypted content, Origin), conversation to ChatResponse.Conversation, usage with its cached, cache-written
// and reasoning tokens. Status "completed" is FinishStop (FinishToolCalls when the answer
// calls a tool); "incomplete" for max_output_tokens is FinishLength, for content_filter a
// KindContentFiltered error; a refusal part is a KindRefused error with its text as Message;
// "failed" is the error the response carries, classified like an HTTP error. An answer stored
// (Store not false) is named by ChatResponse.Stored for the next turn.

// minOutputTokens is the least max_output_tokens the Responses API accepts.
const minOutputTokens = 16

// responsesShapeFields are the body fields the Responses wire sets itself to decide the kind
// of call and how its answer is read, which a caller's extra fields may not replace:
// streaming, background mode (an answer this wire cannot wait for), the model (the route),
// and the stored state a call continues from (which pins its route).
var responsesShapeFields = []string{"stream", "background", "model", "previous_response_id", "conversation"}

// responsesWire is what the Responses API needs of the provider's configuration.
type responsesWire struct {
	url         string // BaseURL + /responses (Azure: /openai/v1/responses)
	apiKey      string
	azure       bool // the key goes in api-key, and models are mapped to deployments
	org         string
	deployments map[string]string
	sender      wire.Sender
}

func newResponsesWire(cfg Config, scope string) responsesWire {
	w := responsesWire{url: cfg.BaseURL + "/responses", apiKey: cfg.APIKey, org: cfg.Organization,
		sender: wire.NewSender(cfg.HTTPClient)}
	if cfg.Dialect == Azure {
		w.url, w.azure = cfg.BaseURL+"/openai/v1/responses", true
		w.deployments = make(map[string]string, len(cfg.AzureDeployments))
		for k, v := range cfg.AzureDeployments {
			w.deployments[k] = v
		}
	}
	return w
}

// responsesChat is Chat over the Responses API.
func (p *Provider) responsesChat(ctx context.Context, req *providers.ChatRequest) (*providers.ChatResponse, error) {
	body, err := p.responsesRequest(req, false)
	if err != nil {
		return nil, err
	}
	resp, err := p.responsesSend(ctx, body, false)
	if err != nil {
		return nil, err
	}
	return p.readResponse(ctx, resp, req, req.Background)
}

// readResponse reads the response object of a 2xx resp, and closes its body: the answer, or
// the error the response stands for. pending says whether a response that is not finished
// (queued, in progress, cancelled) is read as such (background mode) rather than as an error.
// req is the request it answers; nil for a stored answer read back (Retrieve, Cancel).
func (p *Provider) readResponse(ctx context.Context, resp *http.Response, req *providers.ChatRequest, pending bool) (*providers.ChatResponse, error) {
	defer resp.Body.Close()
	data, err := wire.ReadAll(resp.Body, p.limits.MaxResponseBytes, "MaxResponseBytes")
	if err != nil {
		return nil, p.errs.ReadFailure(ctx, resp, "reading the response", err)
	}
	var r respResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, p.errs.ReadFailure(ctx, resp, "decoding the response", err)
	}
	if !r.isAnswer() {
		return nil, p.notAResponse(resp, data)
	}
	msg, reasoning, refusal, refused := p.fromOutput(r.Output)
	u := r.Usage.neutral()
	var finish providers.FinishReason
	status := providers.ResponseStatus(p.errs.Field(r.Status))
	var e *providers.Error
	switch {
	case pending && (status.Pending() || status == providers.StatusCancelled):
		// Not the answer (yet): no finish reason, whatever content came so far.
	default:
		finish, e = p.responseEnd(&r, refusal, refused, len(msg.ToolCalls) > 0)
	}
	if e != nil {
		e.StatusCode, e.RequestID, e.Partial = resp.StatusCode, p.errs.Field(wire.RequestID(resp.Header)), msg.Content
		e.RateLimit = providers.ParseRateLimit(resp.Header, time.Now())
		if r.Usage != nil {
			e.Usage = &u
		}
		return nil, p.errs.Finish(e)
	}
	out := &providers.ChatResponse{
		Provider:     p.name,
		Model:        p.errs.Field(r.Model),
		ID:           p.errs.Field(r.ID),
		Message:      msg,
		FinishReason: finish,
		Usage:        u,
		RequestID:    p.errs.Field(wire.RequestID(resp.Header)),
		RateLimit:    providers.ParseRateLimit(resp.Header, time.Now()),
		Reasoning:    reasoning,
		Status:       status,
		Conversation: p.conversation(&r),
	}
	if status.Pending() {
		out.RetryAfter = wire.RetryAfter(resp.Header)
	}
	if req != nil {
		out.JSON = wire.Structured(req, msg.Content)
		out.Stored = p.stored(req, r.ID)
	} else if r.ID != "" {
		out.Stored = &providers.StoredResponse{ID: p.errs.Field(r.ID), Origin: p.scope}
	}
	return out, nil
}

// stored names the answer id for the next turn when the request let the provider store it.
func (p *Provider) stored(req *providers.ChatRequest, id string) *providers.StoredResponse {
	if id == "" || (req.Store != nil && !*req.Store) {
		return nil
	}
	return &providers.StoredResponse{ID: p.errs.Field(id), Origin: p.scope}
}

// responseEnd reads how a whole response ended: its finish reason, or the error of a response
// that is not the answer (failed, filtered, refused). calls says whether it calls a tool.
func (p *Provider) responseEnd(r *respResponse, refusal string, refused, calls bool) (providers.FinishReason, *providers.Error) {
	switch r.Status {
	case "failed":
		if r.Error == nil {
			return "", &providers.Error{Kind: providers.KindUnavailable, Message: "the response failed without saying why",
				Err: providers.ErrResponseFailed}
		}
		e := p.responseError(r.Error)
		e.Err = providers.ErrResponseFailed
		return "", e
	case "incomplete":
		reason := ""
		if r.IncompleteDetails != nil {
			reason = r.IncompleteDetails.Reason
		}
		switch reason {
		case "content_filter":
			return "", p.errs.FilteredBy("incomplete_details.reason content_filter", refusal)
		case "max_output_tokens", "":
			// An incomplete response that says not why (as some servers send it) stopped at
			// the only limit a request sets.
			if !refused {
				return providers.FinishLength, nil
			}
		default:
			if !refused {
				return providers.FinishOther, nil
			}
		}
	case "completed", "":
	default: // queued, in_progress, cancelled: no answer to read (outside background mode)
		return "", &providers.Error{Kind: providers.KindUnavailable, Message: fmt.Sprintf("the response is %q, not complete", p.errs.Field(r.Status))}
	}
	if refused {
		return "", p.errs.Refused(refusal, "")
	}
	if calls {
		return providers.FinishToolCalls, nil
	}
	return providers.FinishStop, nil
}

// fromOutput turns output items into the assistant message: the output_text parts joined, the
// function calls in order, the reasoning items as thinking blocks of this provider's origin.
// It returns the reasoning text (the summaries, or the reasoning text of servers that show
// it) and the refusal, if any part was one.
func (p *Provider) fromOutput(items []respOutItem) (msg providers.Message, reasoning, refusal string, refused bool) {
	msg.Role = providers.RoleAssistant
	var text, why, thought strings.Builder
	for i := range items {
		it := &items[i]
		switch it.Type {
		case "message":
			for _, c := range it.Content {
				switch c.Type {
				case "output_text":
					text.WriteString(c.Text)
				case "refusal":
					refused = true
					why.WriteString(c.Refusal)
				}
			}
		case "function_call":
			args := it.Arguments
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			msg.ToolCalls = append(msg.ToolCalls, providers.ToolCall{ID: it.CallID, Name: it.Name, Arguments: args})
		case "reasoning":
			b := p.thinkingBlock(it)
			thought.WriteString(b.Text)
			msg.Thinking = append(msg.Thinking, b)
		case "compaction":
			msg.Compaction = p.compaction(it)
		}
	}
	msg.Content = text.String()
	return msg, thought.String(), why.String(), refused
}

// compaction is the compaction item it, of this provider's origin.
func (p *Provider) compaction(it *respOutItem) *providers.Compaction {
	return &providers.Compaction{ID: p.errs.Field(it.ID), Encrypted: it.EncryptedContent, Origin: p.scope}
}

// conversation is the conversation a response names, of this provider's origin; nil for none.
func (p *Provider) conversation(r *respResponse) *providers.Conversation {
	if r.Conversation == nil || r.Conversation.ID == "" {
		return nil
	}
	return &providers.Conversation{ID: p.errs.Field(r.Conversation.ID), Origin: p.scope}
}

// thinkingBlock is the thinking block of reasoning item it: its summary (or its reasoning
// text) as Text, its ID and encrypted content, this provider's origin.
func (p *Provider) thinkingBlock(it *respOutItem) providers.ThinkingBlock {
	b := providers.ThinkingBlock{ID: it.ID, Encrypted: it.EncryptedContent, Origin: p.scope}
	var t strings.Builder
	for _, s := range it.Summary {
		t.WriteString(s.Text)
	}
	if t.Len() == 0 {
		for _, c := range it.Content {
			t.WriteString(c.Text)
		}
	}
	b.Text = t.String()
	return b
}
