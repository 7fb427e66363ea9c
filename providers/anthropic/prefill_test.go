package anthropic_test

import (
	"context"
	"errors"
	"testing"

	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
)

// Which models continue a prefill by default: the Claude models before 4.6, without extended
// thinking; names the rule cannot read are taken to (a refusal is then a bad_request).
func TestPrefills_TheModelsBefore46WithoutThinking(t *testing.T) {
	p, err := anthropic.New(anthropic.Config{APIKey: "k", Model: "claude-haiku-4-5"})
	if err != nil {
		t.Fatal(err)
	}
	plain := userRequest("Hi")
	thinking := userRequest("Hi")
	thinking.Reasoning = &providers.Reasoning{Effort: "low"}
	forced := userRequest("Hi")
	forced.Tools = []providers.Tool{{Name: "lookup"}}
	forced.ToolChoice = providers.ToolChoice{Mode: providers.ToolChoiceRequired}
	for _, c := range []struct {
		model string
		req   *providers.ChatRequest
		want  bool
	}{
		{"", plain, true}, // the provider's default model, 4.5
		{"claude-haiku-4-5", plain, true},
		{"claude-3-7-sonnet-20250219", plain, true},
		{"claude-sonnet-4-5-20250929", plain, true},
		{"claude-opus-4-6", plain, false},
		{"claude-sonnet-4-6", plain, false},
		{"claude-opus-4-7", plain, false},
		{"claude-sonnet-5", plain, false},
		{"my-proxy-alias", plain, true},
		{"claude-haiku-4-5", thinking, false},
		{"claude-haiku-4-5", forced, false},
	} {
		if got := p.Prefills(c.model, c.req); got != c.want {
			t.Errorf("Prefills(%q, reasoning %v, tool choice %q) = %v, want %v", c.model, c.req.Reasoning != nil,
				c.req.ToolChoice.Mode, got, c.want)
		}
	}
}

// A prefilled request goes out as a final assistant message, and the answer is what follows
// it; what the API would refuse is refused before sending.
func TestPrefill_ContinuesTheAnswerOrIsRefusedBeforeSending(t *testing.T) {
	f := newFixture(t, mocks.WithReply("one two three four"))
	req := userRequest("Hi")
	req.Prefill = true
	req.Messages = append(req.Messages, providers.Message{Role: providers.RoleAssistant, Content: "one two"})
	deltas, err := streamOf(t, f.p, req)
	if err != nil || textOf(deltas) != " three four" {
		t.Fatalf("%v, %q: want the rest of the answer alone", err, textOf(deltas))
	}
	sent := f.s.Journal().Len()
	for name, c := range map[string]struct {
		edit func(*providers.ChatRequest)
		code string
	}{
		"trailing whitespace": {func(r *providers.ChatRequest) { r.Messages[1].Content = "one two " }, ""},
		"no assistant last":   {func(r *providers.ChatRequest) { r.Messages = r.Messages[:1] }, ""},
		"4.6":                 {func(r *providers.ChatRequest) { r.Model = "claude-opus-4-6" }, providers.CodePrefillUnsupported},
		"thinking": {func(r *providers.ChatRequest) { r.Reasoning = &providers.Reasoning{Effort: "low"} },
			providers.CodePrefillUnsupported},
	} {
		r := userRequest("Hi")
		r.Prefill = true
		r.Messages = append(r.Messages, providers.Message{Role: providers.RoleAssistant, Content: "one two"})
		c.edit(r)
		_, err := f.p.ChatStream(context.Background(), r)
		e := asError(t, err)
		if e.Kind != providers.KindBadRequest || e.Code != c.code || errors.Is(err, providers.ErrPrefillUnsupported) != (c.code != "") {
			t.Errorf("%s: %#v", name, e)
		}
	}
	if n := f.s.Journal().Len(); n != sent {
		t.Fatalf("%d refused requests reached the server", n-sent)
	}
}
