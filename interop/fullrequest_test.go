package interop

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/steadyllm/steady/providers"
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
