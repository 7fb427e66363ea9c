package anthropic

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/steadyllm/steady/providers"
)

// The answer side of the wire format: a message as the API sends it, and its reading into the
// neutral answer.

// respBlock is a content block of an answer. It is not wireBlock because blocks this package
// keeps verbatim (server tool results, say) may carry fields of other shapes under the same
// names (see decodeAnswer).
type respBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
}

// wireResponse is a message: the body of a non-streamed answer and the "message" of a
// message_start event.
type wireResponse struct {
	Type        string           `json:"type"`
	ID          string           `json:"id"`
	Model       string           `json:"model"`
	Content     []respBlock      `json:"content"`
	StopReason  string           `json:"stop_reason"`
	StopDetails *wireStopDetails `json:"stop_details"`
	Usage       wireUsage        `json:"usage"`
}

// isAnswer reports whether r is a message: its type says so, or (for servers that leave the
// type out) it has content or a stop reason. {}, null and error envelopes are not answers.
func (r *wireResponse) isAnswer() bool {
	return r.Type == "message" || r.Type == "" && (len(r.Content) > 0 || r.StopReason != "")
}

// wireUsage counts tokens. input_tokens excludes the prompt tokens written to or read from
// the prompt cache, which are reported apart.
type wireUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokensDetails      *struct {
		ThinkingTokens int `json:"thinking_tokens"`
	} `json:"output_tokens_details"`
}

// neutral returns the neutral usage: the whole prompt as InputTokens, its cached parts apart.
func (u wireUsage) neutral() providers.Usage {
	out := providers.Usage{InputTokens: u.input(), OutputTokens: u.OutputTokens,
		CachedInputTokens: u.CacheReadInputTokens, CacheWriteInputTokens: u.CacheCreationInputTokens}
	if d := u.OutputTokensDetails; d != nil {
		out.ReasoningTokens = d.ThinkingTokens
	}
	return out
}

// input is the whole prompt: uncached, cache-written and cache-read tokens together, which is
// what OpenAI's prompt_tokens counts too.
func (u wireUsage) input() int {
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
}

// fromResponse turns a message, whose JSON body is data, into the neutral assistant message:
// the text blocks joined, the tool_use blocks as tool calls in order, the thinking blocks as
// Thinking. With forced tool use for a structured answer (schemaTool, not ""), that tool's
// input is the answer's text. Every other block (a server tool's call and result, a type added
// to the API later) is kept verbatim in ProviderBlocks, marked with p's origin.
func (p *Provider) fromResponse(r *wireResponse, data []byte, schemaTool string) providers.Message {
	msg := providers.Message{Role: providers.RoleAssistant}
	var text strings.Builder
	var raws []json.RawMessage // the content block by block, read only for a block kept verbatim
	for i, b := range r.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			args := "{}"
			if len(b.Input) > 0 {
				var c bytes.Buffer
				if json.Compact(&c, b.Input) == nil {
					args = c.String()
				}
			}
			if schemaTool != "" && b.Name == schemaTool {
				text.WriteString(args)
				continue
			}
			msg.ToolCalls = append(msg.ToolCalls, providers.ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		case "thinking":
			msg.Thinking = append(msg.Thinking, providers.ThinkingBlock{Text: b.Thinking, Signature: b.Signature})
		case "redacted_thinking":
			msg.Thinking = append(msg.Thinking, providers.ThinkingBlock{Redacted: b.Data})
		case "":
			// No type: nothing the API would take back.
		default:
			if raws == nil {
				raws = rawContent(data)
			}
			if i < len(raws) {
				msg.ProviderBlocks = append(msg.ProviderBlocks, providers.ProviderBlock{Type: b.Type, Raw: raws[i],
					Origin: p.scope, At: text.Len(), Calls: len(msg.ToolCalls)})
			}
		}
	}
	msg.Content = text.String()
	return msg
}

// reasoningText joins the text of the thinking blocks of msg.
func reasoningText(msg providers.Message) string {
	var b strings.Builder
	for _, t := range msg.Thinking {
		b.WriteString(t.Text)
	}
	return b.String()
}

// finishReason maps Anthropic's stop_reason. A refusal never gets here: it is an error
// (stopRefusal).
func finishReason(stop string) providers.FinishReason {
	switch stop {
	case "end_turn", "stop_sequence":
		return providers.FinishStop
	case "max_tokens", "model_context_window_exceeded":
		return providers.FinishLength
	case "tool_use":
		return providers.FinishToolCalls
	}
	return providers.FinishOther
}
