package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	steadyanthropic "github.com/steadyllm/steady/providers/anthropic"
)

// These tests prove that steady's hand-written Anthropic provider speaks the wire format as
// the official SDK does: the same conversation, sent through both against one fake server,
// gives request bodies that mean the same, and the same answers read the same.

// newSteadyAnthropic returns steady's provider for s.
func newSteadyAnthropic(t *testing.T, s *mocks.Server) *steadyanthropic.Provider {
	t.Helper()
	p, err := steadyanthropic.New(steadyanthropic.Config{
		BaseURL:    s.AnthropicBaseURL(),
		APIKey:     "sk-ant-test",
		HTTPClient: s.Client(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const weatherSchema = `{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}`

// neutralConversation is a full tool round trip in steady's neutral types.
func neutralConversation() *providers.ChatRequest {
	temp, topP := 0.3, 0.8
	return &providers.ChatRequest{
		Model:       "claude-sonnet-4-5",
		MaxTokens:   512,
		Temperature: &temp,
		TopP:        &topP,
		Stop:        []string{"###"},
		Tools: []providers.Tool{{Name: "get_weather", Description: "Weather forecast for a city",
			Parameters: json.RawMessage(weatherSchema)}},
		Messages: []providers.Message{
			{Role: providers.RoleSystem, Content: "You are a terse weather bot."},
			{Role: providers.RoleUser, Content: "Weather in Paris for 2 days?"},
			{Role: providers.RoleAssistant, Content: "Checking.", ToolCalls: []providers.ToolCall{
				{ID: "toolu_01", Name: "get_weather", Arguments: `{"city":"Paris","days":2}`}}},
			{Role: providers.RoleTool, ToolCallID: "toolu_01", Content: "Sunny, 21°C then rain"},
			{Role: providers.RoleUser, Content: "Summarise that in five words"},
		},
	}
}

// sdkConversation is neutralConversation written with the official SDK.
func sdkConversation() anthropic.MessageNewParams {
	var schema struct {
		Properties map[string]any `json:"properties"`
		Required   []string       `json:"required"`
	}
	_ = json.Unmarshal([]byte(weatherSchema), &schema)
	return anthropic.MessageNewParams{
		Model:         "claude-sonnet-4-5",
		MaxTokens:     512,
		Temperature:   anthropic.Float(0.3),
		TopP:          anthropic.Float(0.8),
		StopSequences: []string{"###"},
		System:        []anthropic.TextBlockParam{{Text: "You are a terse weather bot."}},
		Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{
			Name:        "get_weather",
			Description: anthropic.String("Weather forecast for a city"),
			InputSchema: anthropic.ToolInputSchemaParam{Properties: schema.Properties, Required: schema.Required},
		}}},
		Messages: []anthropic.MessageParam{
			anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris for 2 days?")),
			anthropic.NewAssistantMessage(anthropic.NewTextBlock("Checking."),
				anthropic.NewToolUseBlock("toolu_01", map[string]any{"city": "Paris", "days": 2}, "get_weather")),
			anthropic.NewUserMessage(anthropic.NewToolResultBlock("toolu_01", "Sunny, 21°C then rain", false),
				anthropic.NewTextBlock("Summarise that in five words")),
		},
	}
}

// canonical rewrites a Messages request body into one form per meaning, so that two bodies
// compare equal exactly when the API reads them the same: a string "content" or "system" is
// the list of one text block it stands for, and "is_error": false is the default it states.
// The result is indented JSON with sorted keys, readable in a failure message.
func canonical(t *testing.T, body []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, body)
	}
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, val := range x {
				if s, ok := val.(string); ok && (k == "content" || k == "system") {
					val = []any{map[string]any{"type": "text", "text": s}}
				}
				if k == "is_error" && val == false {
					delete(x, k)
					continue
				}
				x[k] = walk(val)
			}
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		}
		return v
	}
	out, _ := json.MarshalIndent(walk(v), "", "  ")
	return string(out)
}

// twoBodies returns the canonical bodies of the journal's two requests and checks that both
// carried the same protocol headers.
func twoBodies(t *testing.T, s *mocks.Server) (steady, sdk string) {
	t.Helper()
	reqs := s.Journal().Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	for _, h := range []string{"Anthropic-Version", "X-Api-Key", "Content-Type"} {
		a, b := reqs[0].Header.Get(h), reqs[1].Header.Get(h)
		if a == "" || !strings.HasPrefix(b, a) { // the SDK may add "; charset=utf-8"
			t.Errorf("%s: steady sent %q, the SDK %q", h, a, b)
		}
	}
	if reqs[0].Path != reqs[1].Path || reqs[0].Method != reqs[1].Method {
		t.Errorf("steady: %s %s, SDK: %s %s", reqs[0].Method, reqs[0].Path, reqs[1].Method, reqs[1].Path)
	}
	return canonical(t, reqs[0].Body), canonical(t, reqs[1].Body)
}

func TestAnthropicProvider_RequestBodyMeansWhatTheSDKs(t *testing.T) {
	s := newServer(t)
	ours, err := newSteadyAnthropic(t, s).Chat(context.Background(), neutralConversation())
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := newAnthropic(s, 0).Messages.New(context.Background(), sdkConversation())
	if err != nil {
		t.Fatal(err)
	}
	steady, sdk := twoBodies(t, s)
	if steady != sdk {
		t.Errorf("request bodies differ\nsteady:\n%s\nSDK:\n%s", steady, sdk)
	}
	if ours.Message.Content != theirs.Content[0].Text || ours.FinishReason != providers.FinishStop ||
		theirs.StopReason != anthropic.StopReasonEndTurn ||
		int64(ours.Usage.InputTokens) != theirs.Usage.InputTokens || int64(ours.Usage.OutputTokens) != theirs.Usage.OutputTokens {
		t.Errorf("answers differ: steady %+v, SDK %+v", ours, theirs)
	}
}

func TestAnthropicProvider_StreamRequestBodyMeansWhatTheSDKs(t *testing.T) {
	s := newServer(t)
	st, err := newSteadyAnthropic(t, s).ChatStream(context.Background(), neutralConversation())
	if err != nil {
		t.Fatal(err)
	}
	steadyText, steadyDone, err := drain(st)
	if err != nil {
		t.Fatal(err)
	}
	sdkMsg, err := sdkStream(newAnthropic(s, 0), sdkConversation())
	if err != nil {
		t.Fatal(err)
	}
	steady, sdk := twoBodies(t, s)
	if steady != sdk || !strings.Contains(steady, `"stream": true`) {
		t.Errorf("request bodies differ\nsteady:\n%s\nSDK:\n%s", steady, sdk)
	}
	checkSameAnswer(t, steadyText, steadyDone, sdkMsg)
}

func TestAnthropicProvider_StreamedTextAndUsageReadAsTheSDKReadsThem(t *testing.T) {
	s := newServer(t, mocks.WithReply("Both clients must read this answer alike, word for word."))
	st, err := newSteadyAnthropic(t, s).ChatStream(context.Background(), neutralConversation())
	if err != nil {
		t.Fatal(err)
	}
	text, done, err := drain(st)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := sdkStream(newAnthropic(s, 0), sdkConversation())
	if err != nil {
		t.Fatal(err)
	}
	checkSameAnswer(t, text, done, msg)
	if done.FinishReason != providers.FinishStop || msg.StopReason != anthropic.StopReasonEndTurn {
		t.Errorf("finish: steady %q, SDK %q", done.FinishReason, msg.StopReason)
	}
}

func TestAnthropicProvider_StreamedToolUseReadsAsTheSDKReadsIt(t *testing.T) {
	const args = `{"city":"Paris","days":2,"units":"metric","detail":"hourly"}`
	step := mocks.CallTool("get_weather", args)
	step.ToolCall.ID = "toolu_same"
	s := newServer(t, mocks.WithScript(step.Times(2)))
	st, err := newSteadyAnthropic(t, s).ChatStream(context.Background(), neutralConversation())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var id, name string
	var input bytes.Buffer
	var done providers.Delta
	for {
		d, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range d.ToolCalls {
			if tc.ID != "" {
				id, name = tc.ID, tc.Name
			}
			input.WriteString(tc.Arguments)
		}
		if d.Done {
			done = d
		}
	}
	msg, err := sdkStream(newAnthropic(s, 0), sdkConversation())
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Type != "tool_use" {
		t.Fatalf("SDK content %+v", msg.Content)
	}
	b := msg.Content[0]
	if id != b.ID || name != b.Name || input.String() != string(b.Input) || input.String() != args {
		t.Errorf("tool call: steady %s %s %s, SDK %s %s %s", id, name, input.String(), b.ID, b.Name, b.Input)
	}
	if done.FinishReason != providers.FinishToolCalls || msg.StopReason != anthropic.StopReasonToolUse ||
		int64(done.Usage.OutputTokens) != msg.Usage.OutputTokens || int64(done.Usage.InputTokens) != msg.Usage.InputTokens {
		t.Errorf("end: steady %+v, SDK %q %+v", done, msg.StopReason, msg.Usage)
	}
}

// An error event inside a 200 stream: both clients fail with the same error type; steady
// classifies it as an overload.
func TestAnthropicProvider_InStreamOverloadFailsBothClients(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.StreamError(4, "overloaded_error").Times(2)))
	st, err := newSteadyAnthropic(t, s).ChatStream(context.Background(), neutralConversation())
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = drain(st)
	var ours *providers.Error
	if !errors.As(err, &ours) || ours.Kind != providers.KindOverloaded || ours.Type != "overloaded_error" {
		t.Errorf("steady: %v", err)
	}
	_, err = sdkStream(newAnthropic(s, 0), sdkConversation())
	var theirs *anthropic.Error
	if !errors.As(err, &theirs) || string(theirs.Type()) != ours.Type {
		t.Errorf("SDK: %T %v", err, err)
	}
}

// The one intended difference: a stream that ends cleanly without message_stop is an error
// for steady, and success for the SDK.
func TestAnthropicProvider_TruncationIsAnErrorWhereTheSDKSeesSuccess(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.TruncateStream(5).Times(2)))
	st, err := newSteadyAnthropic(t, s).ChatStream(context.Background(), neutralConversation())
	if err != nil {
		t.Fatal(err)
	}
	text, _, err := drain(st)
	var ours *providers.Error
	if !errors.As(err, &ours) || ours.Kind != providers.KindStreamTruncated || ours.Partial != text || text == "" {
		t.Errorf("steady: %v after %q", err, text)
	}
	msg, err := sdkStream(newAnthropic(s, 0), sdkConversation())
	if err != nil || len(msg.Content) != 1 || msg.Content[0].Text != text {
		t.Errorf("SDK: %v, content %+v (steady read %q)", err, msg.Content, text)
	}
}

// drain reads a steady stream to its end and closes it.
func drain(st providers.Stream) (string, providers.Delta, error) {
	defer st.Close()
	var text strings.Builder
	var done providers.Delta
	for {
		d, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return text.String(), done, nil
		}
		if err != nil {
			return text.String(), done, err
		}
		text.WriteString(d.Text)
		if d.Done {
			done = d
		}
	}
}

// sdkStream reads a streamed message with the SDK and accumulates it.
func sdkStream(c *anthropic.Client, params anthropic.MessageNewParams) (anthropic.Message, error) {
	stream := c.Messages.NewStreaming(context.Background(), params)
	defer stream.Close()
	var msg anthropic.Message
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			return msg, err
		}
	}
	return msg, stream.Err()
}

// checkSameAnswer compares steady's reading of a streamed answer with the SDK's.
func checkSameAnswer(t *testing.T, text string, done providers.Delta, msg anthropic.Message) {
	t.Helper()
	if len(msg.Content) != 1 || text != msg.Content[0].Text || text == "" {
		t.Errorf("text: steady %q, SDK %+v", text, msg.Content)
	}
	if !done.Done || int64(done.Usage.InputTokens) != msg.Usage.InputTokens || int64(done.Usage.OutputTokens) != msg.Usage.OutputTokens {
		t.Errorf("usage: steady %+v, SDK %+v", done, msg.Usage)
	}
}
