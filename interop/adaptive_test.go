package interop

import (
	"context"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/steadyllm/steady/providers"
)

// A model that takes only adaptive thinking (Opus 4.7): steady sends the thinking and the
// effort anthropic-sdk-go sends for {"type":"adaptive"} and effort "high", and both read the
// same thinking back.
func TestAnthropicProvider_AdaptiveThinkingMeansWhatTheSDKs(t *testing.T) {
	s := newServer(t)
	ours, err := newSteadyAnthropic(t, s).Chat(context.Background(), &providers.ChatRequest{
		Model: "claude-opus-4-7", MaxTokens: 4096,
		Messages:  []providers.Message{{Role: providers.RoleUser, Content: "Think it over."}},
		Reasoning: &providers.Reasoning{Effort: "high", BudgetTokens: 2048},
	})
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := newAnthropic(s, 0).Messages.New(context.Background(), anthropic.MessageNewParams{
		Model: "claude-opus-4-7", MaxTokens: 4096,
		Messages:     []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Think it over."))},
		Thinking:     anthropic.ThinkingConfigParamUnion{OfAdaptive: &anthropic.ThinkingConfigAdaptiveParam{}},
		OutputConfig: anthropic.OutputConfigParam{Effort: anthropic.OutputConfigEffortHigh},
	})
	if err != nil {
		t.Fatal(err)
	}
	if steady, sdk := twoBodies(t, s); steady != sdk {
		t.Errorf("request bodies differ\nsteady:\n%s\nSDK:\n%s", steady, sdk)
	}
	if len(theirs.Content) == 0 || theirs.Content[0].Type != "thinking" || ours.Reasoning != theirs.Content[0].Thinking {
		t.Errorf("steady read %q, the SDK %+v", ours.Reasoning, theirs.Content)
	}
}
