package openai

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"sync"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/steadyllm/steady/providers"
)

// emptySchema is sent for a tool without parameters: go-openai would send "parameters": null.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// chatRequest maps a neutral request to go-openai's.
//
// Max tokens: the OpenAI dialect sends max_completion_tokens (max_tokens is deprecated there and
// refused by reasoning models); Azure and compatible servers get max_tokens, which older
// api-versions and most OpenAI-compatible servers understand, except for model names that
// go-openai treats as reasoning models (o1, o3, o4, gpt-5…), which get max_completion_tokens.
//
// Temperature and top-p: go-openai drops a zero float32 (omitempty), so an explicit 0 is
// sent as the smallest positive float32, which every server treats as 0.
//
// msgs is the room for the messages, len(req.Messages) long (see getMessages).
func (p *Provider) chatRequest(req *providers.ChatRequest, msgs []goopenai.ChatCompletionMessage) (goopenai.ChatCompletionRequest, error) {
	if err := req.Validate(); err != nil {
		return goopenai.ChatCompletionRequest{}, p.refuse(err)
	}
	model := req.Model
	if model == "" {
		model = p.model
	}
	if model == "" {
		return goopenai.ChatCompletionRequest{}, p.badRequest("the request names no model and Config.Model is empty")
	}
	if req.Previous != nil {
		// The conversation lives with the provider that stored it: answering without it would
		// be answering another question (see providers/state.go).
		return goopenai.ChatCompletionRequest{}, p.badRequest("Previous: the chat completions API keeps no stored answers to continue from; " +
			"send the whole conversation, or use the Responses API (Config.API)")
	}
	if req.Background {
		return goopenai.ChatCompletionRequest{}, p.badRequest("Background: the chat completions API has no background mode; " +
			"use the Responses API (Config.API)")
	}
	if pin, ok := req.Pin(); ok {
		// A conversation kept by a provider, or one pruned at a compaction item: its earlier
		// messages are not in the request.
		return goopenai.ChatCompletionRequest{}, p.badRequest("the request continues from " + pin.What +
			", which the chat completions API cannot read; send the whole conversation, or use the Responses API (Config.API)")
	}
	if err := p.refuseRawTools(req); err != nil {
		return goopenai.ChatCompletionRequest{}, err
	}
	if len(req.Messages) == 0 {
		return goopenai.ChatCompletionRequest{}, p.badRequest("the request has no messages")
	}
	out := goopenai.ChatCompletionRequest{
		Model:    model,
		Messages: msgs,
		Stop:     req.Stop,
	}
	for i, m := range req.Messages {
		out.Messages[i] = toMessage(m)
	}
	if req.MaxTokens > 0 {
		if p.dialect == OpenAI || needsMaxCompletionTokens(model) {
			out.MaxCompletionTokens = req.MaxTokens
		} else {
			out.MaxTokens = req.MaxTokens
		}
	}
	if req.Temperature != nil {
		out.Temperature = nonZero(*req.Temperature)
	}
	if req.TopP != nil {
		out.TopP = nonZero(*req.TopP)
	}
	switch {
	case req.Schema != nil:
		name := req.Schema.Name
		if name == "" {
			name = "response"
		}
		out.ResponseFormat = &goopenai.ChatCompletionResponseFormat{
			Type: goopenai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &goopenai.ChatCompletionResponseFormatJSONSchema{
				Name: name, Description: req.Schema.Description, Schema: req.Schema.Schema, Strict: req.Schema.Strict,
			},
		}
	case req.Format == providers.FormatJSON:
		out.ResponseFormat = &goopenai.ChatCompletionResponseFormat{Type: goopenai.ChatCompletionResponseFormatTypeJSONObject}
	}
	switch tc := req.ToolChoice; tc.Mode {
	case providers.ToolChoiceAuto, providers.ToolChoiceNone, providers.ToolChoiceRequired:
		out.ToolChoice = string(tc.Mode)
	case providers.ToolChoiceTool:
		out.ToolChoice = goopenai.ToolChoice{Type: goopenai.ToolTypeFunction, Function: goopenai.ToolFunction{Name: tc.Name}}
	}
	if req.ParallelToolCalls != nil && len(req.Tools) > 0 {
		out.ParallelToolCalls = *req.ParallelToolCalls
	}
	if r := req.Reasoning; r != nil && r.Effort != "" {
		out.ReasoningEffort = r.Effort
		if out.MaxTokens > 0 { // reasoning models refuse max_tokens, whatever the dialect
			out.MaxCompletionTokens, out.MaxTokens = out.MaxTokens, 0
		}
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if len(params) == 0 {
			params = emptySchema
		}
		out.Tools = append(out.Tools, goopenai.Tool{Type: goopenai.ToolTypeFunction, Function: &goopenai.FunctionDefinition{
			Name: t.Name, Description: t.Description, Parameters: params,
		}})
	}
	return out, nil
}

// messagePool keeps the message slices of go-openai requests between calls: go-openai encodes
// a request before it sends it and keeps nothing of it, so the slice is free again once the
// call that built it has returned.
var messagePool sync.Pool

// getMessages returns room for the messages of req; putMessages gives it back.
func getMessages(req *providers.ChatRequest) *[]goopenai.ChatCompletionMessage {
	n := 0
	if req != nil {
		n = len(req.Messages)
	}
	m, _ := messagePool.Get().(*[]goopenai.ChatCompletionMessage)
	if m == nil {
		m = new([]goopenai.ChatCompletionMessage)
	}
	if cap(*m) < n {
		*m = make([]goopenai.ChatCompletionMessage, n)
	}
	*m = (*m)[:n]
	return m
}

// maxPooledMessages bounds the slices kept, so one long conversation does not pin its room.
const maxPooledMessages = 64

func putMessages(m *[]goopenai.ChatCompletionMessage) {
	clear(*m) // keep none of the caller's text
	if cap(*m) <= maxPooledMessages {
		*m = (*m)[:0]
		messagePool.Put(m)
	}
}

// needsMaxCompletionTokens reports whether go-openai refuses max_tokens for model: its
// ReasoningValidator goes by model-name prefix, so ask it rather than copy its list.
func needsMaxCompletionTokens(model string) bool {
	probe := goopenai.ChatCompletionRequest{Model: model, MaxTokens: 1}
	return goopenai.NewReasoningValidator().Validate(probe) != nil
}

// nonZero converts v to float32, replacing 0 (which go-openai would omit) by the smallest
// positive float32.
func nonZero(v float64) float32 {
	if v == 0 {
		return math.SmallestNonzeroFloat32
	}
	return float32(v)
}

// toMessage maps a neutral message; roles pass through unchanged. Parts become content parts
// (an image by URL, or as a data: URL of its base64 bytes); thinking blocks and cache marks
// have no Chat Completions form and are left out.
func toMessage(m providers.Message) goopenai.ChatCompletionMessage {
	out := goopenai.ChatCompletionMessage{Role: string(m.Role), Content: m.Content, ToolCallID: m.ToolCallID}
	for _, p := range m.Parts {
		if p.Image == nil {
			out.MultiContent = append(out.MultiContent, goopenai.ChatMessagePart{Type: goopenai.ChatMessagePartTypeText, Text: p.Text})
			continue
		}
		u := p.Image.URL
		if u == "" {
			u = "data:" + p.Image.MediaType + ";base64," + base64.StdEncoding.EncodeToString(p.Image.Data)
		}
		out.MultiContent = append(out.MultiContent, goopenai.ChatMessagePart{Type: goopenai.ChatMessagePartTypeImageURL,
			ImageURL: &goopenai.ChatMessageImageURL{URL: u, Detail: goopenai.ImageURLDetail(p.Image.Detail)}})
	}
	for _, tc := range m.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, goopenai.ToolCall{
			ID: tc.ID, Type: goopenai.ToolTypeFunction,
			Function: goopenai.FunctionCall{Name: tc.Name, Arguments: tc.Arguments},
		})
	}
	return out
}

// fromMessage maps the assistant's answer (never a refusal: Chat makes that an error); a
// legacy function_call becomes a tool call without an ID.
func fromMessage(m goopenai.ChatCompletionMessage) providers.Message {
	out := providers.Message{Role: providers.RoleAssistant, Content: m.Content}
	if m.ReasoningContent != "" {
		out.Thinking = []providers.ThinkingBlock{{Text: m.ReasoningContent}}
	}
	for _, tc := range m.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, providers.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	if fc := m.FunctionCall; fc != nil && len(out.ToolCalls) == 0 {
		out.ToolCalls = []providers.ToolCall{{Name: fc.Name, Arguments: fc.Arguments}}
	}
	return out
}

// toolCallDeltas maps streamed tool-call fragments. A fragment without an index (some
// compatible servers omit it) takes its position in the chunk.
func toolCallDeltas(d goopenai.ChatCompletionStreamChoiceDelta) []providers.ToolCallDelta {
	var out []providers.ToolCallDelta
	for i, tc := range d.ToolCalls {
		idx := i
		if tc.Index != nil {
			idx = *tc.Index
		}
		out = append(out, providers.ToolCallDelta{Index: idx, ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	if fc := d.FunctionCall; fc != nil && len(out) == 0 {
		out = []providers.ToolCallDelta{{Name: fc.Name, Arguments: fc.Arguments}}
	}
	return out
}

// finishReason maps OpenAI's finish reasons; "" stays "" (not finished yet).
func finishReason(r goopenai.FinishReason) providers.FinishReason {
	switch r {
	case "", goopenai.FinishReasonNull:
		return ""
	case goopenai.FinishReasonStop:
		return providers.FinishStop
	case goopenai.FinishReasonLength:
		return providers.FinishLength
	case goopenai.FinishReasonToolCalls, goopenai.FinishReasonFunctionCall:
		return providers.FinishToolCalls
	case goopenai.FinishReasonContentFilter:
		return providers.FinishContentFilter
	}
	return providers.FinishOther
}

// usage maps token counts; nil means none were reported.
func usage(u *goopenai.Usage) providers.Usage {
	if u == nil {
		return providers.Usage{}
	}
	out := providers.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	if d := u.PromptTokensDetails; d != nil {
		out.CachedInputTokens = d.CachedTokens
	}
	if d := u.CompletionTokensDetails; d != nil {
		out.ReasoningTokens = d.ReasoningTokens
	}
	return out
}
