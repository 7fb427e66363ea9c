package interop

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/steadyllm/steady/providers"
	steadyopenai "github.com/steadyllm/steady/providers/openai"
)

var pngBytes = []byte("\x89PNG\r\n\x1a\n not really an image")

// The full neutral request — an image, a cached system prompt, extended thinking, a
// structured output, a tool choice without parallel calls — sends the body the official SDK
// sends for the same request, and both read the thinking and the structured answer alike.
func TestAnthropicProvider_FullRequestMeansWhatTheSDKs(t *testing.T) {
	s := newServer(t)
	no := false
	schema := json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`)
	ours, err := newSteadyAnthropic(t, s).Chat(context.Background(), &providers.ChatRequest{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 4096,
		Messages: []providers.Message{
			{Role: providers.RoleSystem, Content: "Be brief.", Cache: providers.Cache1h},
			{Role: providers.RoleUser, Parts: []providers.Part{
				providers.TextPart("Where was this taken?"),
				providers.ImagePart(providers.Image{Data: pngBytes, MediaType: "image/png"}),
			}},
		},
		Tools:             []providers.Tool{{Name: "lookup", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}},
		ToolChoice:        providers.ToolChoice{Mode: providers.ToolChoiceAuto},
		ParallelToolCalls: &no,
		Schema:            &providers.JSONSchema{Name: "place", Schema: schema},
		Reasoning:         &providers.Reasoning{BudgetTokens: 2048},
	})
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := newAnthropic(s, 0).Messages.New(context.Background(), anthropic.MessageNewParams{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 4096,
		System: []anthropic.TextBlockParam{{Text: "Be brief.",
			CacheControl: anthropic.CacheControlEphemeralParam{TTL: anthropic.CacheControlEphemeralTTLTTL1h}}},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(
			anthropic.NewTextBlock("Where was this taken?"),
			anthropic.NewImageBlockBase64("image/png", base64.StdEncoding.EncodeToString(pngBytes)),
		)},
		Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "lookup",
			InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{}}}}},
		ToolChoice: anthropic.ToolChoiceUnionParam{OfAuto: &anthropic.ToolChoiceAutoParam{
			DisableParallelToolUse: anthropic.Bool(true)}},
		OutputConfig: anthropic.OutputConfigParam{Format: anthropic.JSONOutputFormatParam{Schema: map[string]any{
			"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}},
			"required": []any{"city"}, "additionalProperties": false}}},
		Thinking: anthropic.ThinkingConfigParamOfEnabled(2048),
	})
	if err != nil {
		t.Fatal(err)
	}
	steady, sdk := twoBodies(t, s)
	if steady != sdk {
		t.Errorf("request bodies differ\nsteady:\n%s\nSDK:\n%s", steady, sdk)
	}
	var sdkThinking, sdkText string
	for _, b := range theirs.Content {
		switch b.Type {
		case "thinking":
			sdkThinking = b.Thinking
		case "text":
			sdkText = b.Text
		}
	}
	if ours.Reasoning == "" || ours.Reasoning != sdkThinking || ours.Message.Content != sdkText || ours.JSON == nil ||
		len(ours.Message.Thinking) != 1 || ours.Message.Thinking[0].Signature == "" ||
		int64(ours.Usage.ReasoningTokens) != theirs.Usage.OutputTokensDetails.ThinkingTokens ||
		int64(ours.Usage.CacheWriteInputTokens+ours.Usage.CachedInputTokens) !=
			theirs.Usage.CacheCreationInputTokens+theirs.Usage.CacheReadInputTokens {
		t.Errorf("answers differ: steady %+v, SDK %+v", ours, theirs)
	}
}

// The same full request on the OpenAI wire — an image as a data URL, a strict json_schema
// response format, a named tool choice without parallel calls, a reasoning effort — sends the
// body openai-go sends, and both read the structured answer and the usage details alike.
func TestOpenAIProvider_FullRequestMeansWhatTheSDKs(t *testing.T) {
	s := newServer(t)
	p, err := steadyopenai.New(steadyopenai.Config{Name: "openai", BaseURL: s.OpenAIBaseURL(), APIKey: "sk-test",
		HTTPClient: s.Client(), Model: "o4-mini"})
	if err != nil {
		t.Fatal(err)
	}
	no := false
	schema := json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`)
	params := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)
	ours, err := p.Chat(context.Background(), &providers.ChatRequest{
		MaxTokens: 2000,
		Messages: []providers.Message{
			{Role: providers.RoleSystem, Content: "Be brief."},
			{Role: providers.RoleUser, Parts: []providers.Part{
				providers.TextPart("Where was this taken?"),
				providers.ImagePart(providers.Image{Data: pngBytes, MediaType: "image/png", Detail: "low"}),
			}},
		},
		Tools:             []providers.Tool{{Name: "lookup", Description: "Looks a place up.", Parameters: params}},
		ToolChoice:        providers.ToolChoice{Mode: providers.ToolChoiceTool, Name: "lookup"},
		ParallelToolCalls: &no,
		Schema:            &providers.JSONSchema{Name: "place", Schema: schema, Strict: true},
		Reasoning:         &providers.Reasoning{Effort: "low"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var schemaMap, paramsMap map[string]any
	_ = json.Unmarshal(schema, &schemaMap)
	_ = json.Unmarshal(params, &paramsMap)
	theirs, err := newOpenAI(s, 0).Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:               "o4-mini",
		MaxCompletionTokens: openai.Int(2000),
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("Be brief."),
			openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
				openai.TextContentPart("Where was this taken?"),
				openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{
					URL: "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes), Detail: "low"}),
			}),
		},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "lookup", Description: openai.String("Looks a place up."), Parameters: paramsMap})},
		ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfFunctionToolChoice: &openai.ChatCompletionNamedToolChoiceParam{
			Function: openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "lookup"}}},
		ParallelToolCalls: openai.Bool(false),
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "place", Schema: schemaMap, Strict: openai.Bool(true)}}},
		ReasoningEffort: shared.ReasoningEffortLow,
	})
	if err != nil {
		t.Fatal(err)
	}
	reqs := s.Journal().Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	// go-openai writes "stream": false where openai-go leaves it out: the same default.
	ourBody := bytes.Replace(reqs[0].Body, []byte(`"stream":false,`), nil, 1)
	if steady, sdk := canonical(t, ourBody), canonical(t, reqs[1].Body); steady != sdk {
		t.Errorf("request bodies differ\nsteady:\n%s\nSDK:\n%s", steady, sdk)
	}
	c := theirs.Choices[0]
	if len(ours.Message.ToolCalls) != 1 || len(c.Message.ToolCalls) != 1 ||
		ours.Message.ToolCalls[0].Name != c.Message.ToolCalls[0].Function.Name ||
		ours.Message.ToolCalls[0].Arguments != c.Message.ToolCalls[0].Function.Arguments ||
		int64(ours.Usage.ReasoningTokens) != theirs.Usage.CompletionTokensDetails.ReasoningTokens ||
		int64(ours.Usage.CachedInputTokens) != theirs.Usage.PromptTokensDetails.CachedTokens {
		t.Errorf("answers differ: steady %+v, SDK %+v", ours, theirs)
	}
}
