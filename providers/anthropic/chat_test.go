package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
)

func TestChat_ReturnsContentUsageFinishAndRequestID(t *testing.T) {
	f := newFixture(t)
	const text = "Hello there, Claude"
	resp, err := f.p.Chat(context.Background(), userRequest(text))
	if err != nil {
		t.Fatal(err)
	}
	want := providers.Usage{InputTokens: mocks.Tokens(text), OutputTokens: mocks.Tokens(text)}
	if resp.Message.Role != providers.RoleAssistant || resp.Message.Content != text || resp.Usage != want ||
		resp.FinishReason != providers.FinishStop || resp.Model != model || resp.Provider != "anthropic" {
		t.Errorf("response = %+v, want %q with usage %+v", resp, text, want)
	}
	if resp.RequestID != "req_00000000000000000001" || !strings.HasPrefix(resp.ID, "msg_") {
		t.Errorf("request id %q, id %q", resp.RequestID, resp.ID)
	}
}

func TestChat_MaxTokensStopIsLength(t *testing.T) {
	f := newFixture(t)
	req := userRequest("a reply much longer than two tokens")
	req.MaxTokens = 2
	resp, err := f.p.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.FinishReason != providers.FinishLength || resp.Usage.OutputTokens != 2 {
		t.Errorf("finish %q usage %+v", resp.FinishReason, resp.Usage)
	}
}

// toolConversation is a full tool round trip: system prompt, question, the assistant's tool
// call, the tool's result, and a follow-up.
func toolConversation() *providers.ChatRequest {
	temp, topP := 0.2, 0.9
	return &providers.ChatRequest{
		Model:       "claude-sonnet-4-5",
		MaxTokens:   300,
		Temperature: &temp,
		TopP:        &topP,
		Stop:        []string{"END"},
		Tools: []providers.Tool{{
			Name:        "get_weather",
			Description: "Current weather of a city",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
		}},
		Messages: []providers.Message{
			{Role: providers.RoleSystem, Content: "You are a weather bot."},
			{Role: providers.RoleUser, Content: "Weather in Paris?"},
			{Role: providers.RoleAssistant, Content: "Let me look.", ToolCalls: []providers.ToolCall{
				{ID: "toolu_1", Name: "get_weather", Arguments: `{"city":"Paris"}`},
			}},
			{Role: providers.RoleTool, ToolCallID: "toolu_1", Content: "18°C, sunny"},
			{Role: providers.RoleUser, Content: "Thanks. And tomorrow?"},
		},
	}
}

func TestChat_SendsSystemToolsAndToolResultsInAnthropicShape(t *testing.T) {
	f := newFixture(t)
	if _, err := f.p.Chat(context.Background(), toolConversation()); err != nil {
		t.Fatal(err)
	}
	last, _ := f.s.Journal().Last()
	var got any
	if err := json.Unmarshal(last.Body, &got); err != nil {
		t.Fatal(err)
	}
	var want any
	_ = json.Unmarshal([]byte(`{
		"model": "claude-sonnet-4-5",
		"max_tokens": 300,
		"temperature": 0.2,
		"top_p": 0.9,
		"stop_sequences": ["END"],
		"system": [{"type": "text", "text": "You are a weather bot."}],
		"tools": [{"name": "get_weather", "description": "Current weather of a city",
			"input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}],
		"messages": [
			{"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
			{"role": "assistant", "content": [
				{"type": "text", "text": "Let me look."},
				{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]},
			{"role": "user", "content": [
				{"type": "tool_result", "tool_use_id": "toolu_1", "content": "18°C, sunny"},
				{"type": "text", "text": "Thanks. And tomorrow?"}]}
		]}`), &want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("body =\n%s\nwant the same as\n%v", last.Body, want)
	}
}

func TestChat_ToolUseAnswerBecomesToolCalls(t *testing.T) {
	f := newFixture(t)
	f.s.Script(mocks.CallTool("get_weather", `{"city": "Paris"}`))
	resp, err := f.p.Chat(context.Background(), toolConversation())
	if err != nil {
		t.Fatal(err)
	}
	calls := resp.Message.ToolCalls
	if resp.FinishReason != providers.FinishToolCalls || len(calls) != 1 || calls[0].Name != "get_weather" ||
		calls[0].Arguments != `{"city":"Paris"}` || !strings.HasPrefix(calls[0].ID, "toolu_") {
		t.Errorf("finish %q, tool calls %+v", resp.FinishReason, calls)
	}
}

func TestChat_JSONModeAppendsAnInstructionToSystem(t *testing.T) {
	f := newFixture(t)
	req := userRequest("Give me a point")
	req.Messages = append([]providers.Message{{Role: providers.RoleSystem, Content: "Be exact."}}, req.Messages...)
	req.Format = providers.FormatJSON
	if _, err := f.p.Chat(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	last, _ := f.s.Journal().Last()
	var body struct {
		System []struct{ Type, Text string }
	}
	if err := json.Unmarshal(last.Body, &body); err != nil {
		t.Fatal(err)
	}
	if len(body.System) != 2 || body.System[0].Text != "Be exact." || !strings.Contains(body.System[1].Text, "JSON object") {
		t.Errorf("system = %+v", body.System)
	}
}

func TestChat_SendsAuthVersionAndBetaHeaders(t *testing.T) {
	f := newFixture(t)
	if _, err := f.p.Chat(context.Background(), userRequest("hi")); err != nil {
		t.Fatal(err)
	}
	last, _ := f.s.Journal().Last()
	if got := last.Header.Get("X-Api-Key"); got != "REDACTED" {
		t.Errorf("journal x-api-key = %q, want it present and redacted", got)
	}
	sent := f.rec.requests()[0].Header
	if sent.Get("X-Api-Key") != secretKey {
		t.Error("x-api-key was not the configured key")
	}
	for k, want := range map[string]string{"Anthropic-Version": "2023-06-01", "Content-Type": "application/json", "Anthropic-Beta": ""} {
		if got := last.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if last.Method != "POST" || last.Path != "/v1/messages" {
		t.Errorf("%s %s", last.Method, last.Path)
	}
}

func TestChat_BodyIsReplayable(t *testing.T) {
	f := newFixture(t)
	if _, err := f.p.Chat(context.Background(), userRequest("replay me")); err != nil {
		t.Fatal(err)
	}
	req := f.rec.requests()[0]
	if req.GetBody == nil {
		t.Fatal("GetBody is nil: the retry layer cannot replay the request")
	}
	for i := 0; i < 2; i++ {
		rc, err := req.GetBody()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		last, _ := f.s.Journal().Last()
		if !bytes.Equal(b, last.Body) || int64(len(b)) != req.ContentLength {
			t.Errorf("replay %d = %q, sent %q", i, b, last.Body)
		}
	}
}

func TestChat_RefusesBadRequestsBeforeSending(t *testing.T) {
	f := newFixture(t)
	_, _ = f.p.Chat(context.Background(), userRequest("one good call")) // for the closed-body check
	cases := map[string]*providers.ChatRequest{
		"nil":            nil,
		"no messages":    {},
		"system only":    {Messages: []providers.Message{{Role: providers.RoleSystem, Content: "x"}}},
		"empty turn":     {Messages: []providers.Message{{Role: providers.RoleUser}}},
		"unknown role":   {Messages: []providers.Message{{Role: "robot", Content: "x"}}},
		"bad arguments":  {Messages: []providers.Message{{Role: providers.RoleAssistant, ToolCalls: []providers.ToolCall{{ID: "a", Name: "f", Arguments: "{"}}}}},
		"orphan result":  {Messages: []providers.Message{{Role: providers.RoleTool, Content: "x"}}},
		"bad schema":     {Messages: userRequest("x").Messages, Tools: []providers.Tool{{Name: "f", Parameters: json.RawMessage("{")}}},
		"negative max":   {Messages: userRequest("x").Messages, MaxTokens: -1},
		"unknown format": {Messages: userRequest("x").Messages, Format: "yaml"},
	}
	for name, req := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := f.p.Chat(context.Background(), req)
			if e := asError(t, err); e.Kind != providers.KindBadRequest || e.StatusCode != 0 {
				t.Errorf("error %v: kind %q status %d", e, e.Kind, e.StatusCode)
			}
		})
	}
	if n := f.s.Journal().Len(); n != 1 {
		t.Errorf("%d requests reached the server, want only the good one", n)
	}
}

func TestChat_NoModelIsABadRequest(t *testing.T) {
	p := newProvider(t, "http://127.0.0.1:1", "")
	_, err := p.Chat(context.Background(), userRequest("x"))
	if e := asError(t, err); e.Kind != providers.KindBadRequest || !strings.Contains(e.Message, "model") {
		t.Errorf("error %v", e)
	}
}

func TestEmbed_IsABadRequest(t *testing.T) {
	p := newProvider(t, "http://127.0.0.1:1", model)
	_, err := p.Embed(context.Background(), &providers.EmbedRequest{Inputs: []string{"x"}})
	if e := asError(t, err); e.Kind != providers.KindBadRequest || !strings.Contains(e.Message, "no embeddings API") {
		t.Errorf("error %v", e)
	}
}

func TestChat_CanceledContextIsCanceled(t *testing.T) {
	f := newFixture(t)
	_, _ = f.p.Chat(context.Background(), userRequest("one good call")) // for the closed-body check
	c, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := f.p.Chat(c, userRequest("x"))
	if e := asError(t, err); e.Kind != providers.KindCanceled || !strings.Contains(fmt.Sprint(e), "canceled") {
		t.Errorf("error %v", e)
	}
}
