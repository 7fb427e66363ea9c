package anthropic_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
)

// thinkingOf sends req through f and returns the thinking and output_config the body carried.
func thinkingOf(t *testing.T, f *fixture, req *providers.ChatRequest) (thinking, output any) {
	t.Helper()
	resp, err := f.p.Chat(context.Background(), req)
	if err != nil {
		t.Fatalf("%s: %v", req.Model, err)
	}
	if len(resp.Message.Thinking) == 0 || resp.Reasoning == "" {
		t.Fatalf("%s: no thinking in the answer %+v", req.Model, resp.Message)
	}
	last, _ := f.s.Journal().Last()
	var body map[string]any
	if err := json.Unmarshal(last.Body, &body); err != nil {
		t.Fatal(err)
	}
	return body["thinking"], body["output_config"]
}

// A model that takes only adaptive thinking gets it whether the request asks for a budget or
// an effort (the budget cannot be sent: such a model answers it with a 400); older models keep
// their budget; Config.ThinkingModes overrides the default, a model or a prefix of names.
func TestThinking_AdaptiveForTheModelsThatRefuseABudget(t *testing.T) {
	f := newFixtureWith(t, func(c *anthropic.Config) {
		c.ThinkingModes = map[string]anthropic.ThinkingMode{"claude-opus-4-6": anthropic.ThinkingAdaptive}
	})
	budget := func(model string) *providers.ChatRequest {
		r := userRequest("think")
		r.Model, r.MaxTokens, r.Reasoning = model, 4096, &providers.Reasoning{BudgetTokens: 2048}
		return r
	}
	adaptive := map[string]any{"type": "adaptive"}
	for _, tc := range []struct {
		req            *providers.ChatRequest
		thinking, outp any
	}{
		{budget("claude-opus-4-7"), adaptive, nil},
		{budget("claude-sonnet-5-20261001"), adaptive, nil},
		{budget("claude-opus-4-6-20260215"), adaptive, nil}, // the override, by prefix
		{budget("claude-sonnet-4-5"), map[string]any{"type": "enabled", "budget_tokens": float64(2048)}, nil},
		{&providers.ChatRequest{Model: "claude-fable-5", Messages: userRequest("think").Messages, Reasoning: &providers.Reasoning{Effort: "high"}},
			adaptive, map[string]any{"effort": "high"}},
	} {
		thinking, output := thinkingOf(t, f, tc.req)
		if !reflect.DeepEqual(thinking, tc.thinking) || !reflect.DeepEqual(output, tc.outp) {
			t.Errorf("%s: thinking %v, output_config %v", tc.req.Model, thinking, output)
		}
	}
}

// The fake refuses a budget to a model that takes only adaptive thinking, as the API does: a
// configuration that says otherwise meets the API's 400.
func TestThinking_ABudgetToAnAdaptiveModelIsRefusedByTheServer(t *testing.T) {
	f := newFixtureWith(t, func(c *anthropic.Config) {
		c.ThinkingModes = map[string]anthropic.ThinkingMode{"claude-opus-4-7": anthropic.ThinkingBudget}
	})
	req := userRequest("think")
	req.Model, req.MaxTokens, req.Reasoning = "claude-opus-4-7", 4096, &providers.Reasoning{BudgetTokens: 2048}
	_, err := f.p.Chat(context.Background(), req)
	if e := asError(t, err); e.Kind != providers.KindBadRequest || e.StatusCode != 400 {
		t.Fatalf("%#v", e)
	}
}
