package interop

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
)

// Tools by versioned type, the blocks of server tools, and token counting: steady sends what
// anthropic-sdk-go sends for its typed params, keeps what the SDK keeps, and sends it back as the
// SDK's Message.ToParam does.

// rawTools are the tools of the tests in the API's own shape, as a steady user gives them.
var rawTools = []providers.Tool{
	{System: providers.SystemAnthropic, Raw: json.RawMessage(`{"type":"web_search_20250305","name":"web_search","max_uses":5}`)},
	{System: providers.SystemAnthropic, Raw: json.RawMessage(`{"type":"bash_20250124","name":"bash"}`)},
	{System: providers.SystemAnthropic, Raw: json.RawMessage(`{"type":"text_editor_20250728","name":"str_replace_based_edit_tool","max_characters":10000}`)},
}

// sdkTools are the same tools as the SDK's typed params.
func sdkTools() []anthropic.ToolUnionParam {
	return []anthropic.ToolUnionParam{
		{OfWebSearchTool20250305: &anthropic.WebSearchTool20250305Param{MaxUses: anthropic.Int(5)}},
		{OfBashTool20250124: &anthropic.ToolBash20250124Param{}},
		{OfTextEditor20250728: &anthropic.ToolTextEditor20250728Param{MaxCharacters: anthropic.Int(10000)}},
	}
}

const question = "What changed in the API this week?"

func searchConversation() *providers.ChatRequest {
	return &providers.ChatRequest{Model: "claude-sonnet-4-5", MaxTokens: 1024, Tools: rawTools,
		Messages: []providers.Message{{Role: providers.RoleUser, Content: question}}}
}

func sdkSearchConversation() anthropic.MessageNewParams {
	return anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 1024, Tools: sdkTools(),
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(question))}}
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, a)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	return reflect.DeepEqual(x, y)
}

// withoutCitations returns body with the citations of its text blocks removed: the one thing
// steady does not send back (the neutral message keeps the text, not its citations, which the
// API takes as optional).
func withoutCitations(t *testing.T, body []byte) []byte {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	for _, m := range v["messages"].([]any) {
		if content, ok := m.(map[string]any)["content"].([]any); ok {
			for _, b := range content {
				delete(b.(map[string]any), "citations")
			}
		}
	}
	out, _ := json.Marshal(v)
	return out
}

func TestAnthropicProvider_RawToolsMeanWhatTheSDKsTypedToolsMean(t *testing.T) {
	s := newServer(t)
	if _, err := newSteadyAnthropic(t, s).Chat(context.Background(), searchConversation()); err != nil {
		t.Fatal(err)
	}
	if _, err := newAnthropic(s, 0).Messages.New(context.Background(), sdkSearchConversation()); err != nil {
		t.Fatal(err)
	}
	if steady, sdk := twoBodies(t, s); steady != sdk {
		t.Errorf("request bodies differ\nsteady:\n%s\nSDK:\n%s", steady, sdk)
	}
}

// The answer of a web search — a text, server_tool_use, web_search_tool_result, a cited text —
// reads as the SDK reads it, and the next turn sends it back as the SDK's Message.ToParam does:
// the fake refuses a search that does not come back as it was.
func TestAnthropicProvider_ServerToolBlocksGoBackAsTheSDKSendsThem(t *testing.T) {
	s := newServer(t)
	p := newSteadyAnthropic(t, s)
	first := searchConversation()
	ours, err := p.Chat(context.Background(), first)
	if err != nil {
		t.Fatal(err)
	}
	sdk := newAnthropic(s, 0)
	params := sdkSearchConversation()
	theirs, err := sdk.Messages.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if len(theirs.Content) != 4 || len(ours.Message.ProviderBlocks) != 2 ||
		ours.Message.Content != theirs.Content[0].Text+theirs.Content[3].Text {
		t.Fatalf("steady read %q %+v; the SDK %+v", ours.Message.Content, ours.Message.ProviderBlocks, theirs.Content)
	}
	for i, b := range ours.Message.ProviderBlocks {
		if sdkBlock := theirs.Content[i+1]; b.Type != sdkBlock.Type || !sameJSON(t, b.Raw, []byte(sdkBlock.RawJSON())) {
			t.Errorf("block %d: steady kept %s, the SDK read %s", i+1, b.Raw, sdkBlock.RawJSON())
		}
	}

	next := *first
	next.Messages = append(append(next.Messages[:1:1], ours.Message), providers.Message{Role: providers.RoleUser, Content: "And before?"})
	if _, err := p.Chat(context.Background(), &next); err != nil {
		t.Fatal(err)
	}
	params.Messages = append(params.Messages, theirs.ToParam(), anthropic.NewUserMessage(anthropic.NewTextBlock("And before?")))
	if _, err := sdk.Messages.New(context.Background(), params); err != nil {
		t.Fatal(err)
	}
	reqs := s.Journal().Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests", len(reqs))
	}
	if steady, sdkBody := canonical(t, reqs[2].Body), canonical(t, withoutCitations(t, reqs[3].Body)); steady != sdkBody {
		t.Errorf("next turns differ\nsteady:\n%s\nSDK:\n%s", steady, sdkBody)
	}
}

// Streamed, the blocks steady keeps are those the SDK's Message.Accumulate builds: the
// server_tool_use with the input its deltas brought, the result as it came.
func TestAnthropicProvider_StreamedServerToolBlocksAreWhatTheSDKAccumulates(t *testing.T) {
	s := newServer(t)
	st, err := newSteadyAnthropic(t, s).ChatStream(context.Background(), searchConversation())
	if err != nil {
		t.Fatal(err)
	}
	text, done, err := drain(st)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := sdkStream(newAnthropic(s, 0), sdkSearchConversation())
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 4 || len(done.ProviderBlocks) != 2 || text != msg.Content[0].Text+msg.Content[3].Text {
		t.Fatalf("steady read %q %+v; the SDK %+v", text, done.ProviderBlocks, msg.Content)
	}
	for i, b := range done.ProviderBlocks {
		if sdkBlock := msg.Content[i+1]; !sameJSON(t, b.Raw, []byte(sdkBlock.RawJSON())) {
			t.Errorf("block %d: steady kept %s, the SDK accumulated %s", i+1, b.Raw, sdkBlock.RawJSON())
		}
	}
	if in, _ := json.Marshal(msg.Content[1].Input); !sameJSON(t, in, []byte(`{"query":"`+question+`"}`)) {
		t.Errorf("the SDK accumulated the input %s", in)
	}
}

// A block of a type neither client knows is kept by both and goes back as both send it.
func TestAnthropicProvider_AnUnknownBlockGoesBackAsTheSDKSendsIt(t *testing.T) {
	block := json.RawMessage(`{"type":"future_block_20270101","payload":{"x":[1,2]},"note":"opaque"}`)
	step := mocks.Reply("done").WithBlocks(block)
	s := newServer(t, mocks.WithScript(step, step))
	p := newSteadyAnthropic(t, s)
	ask := &providers.ChatRequest{Model: "claude-haiku-4-5", MaxTokens: 256, Messages: []providers.Message{{Role: providers.RoleUser, Content: "Hi"}}}
	ours, err := p.Chat(context.Background(), ask)
	if err != nil {
		t.Fatal(err)
	}
	sdk := newAnthropic(s, 0)
	params := anthropic.MessageNewParams{Model: "claude-haiku-4-5", MaxTokens: 256,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hi"))}}
	theirs, err := sdk.Messages.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	next := *ask
	next.Messages = append(append(next.Messages[:1:1], ours.Message), providers.Message{Role: providers.RoleUser, Content: "More?"})
	if _, err := p.Chat(context.Background(), &next); err != nil {
		t.Fatal(err)
	}
	params.Messages = append(params.Messages, theirs.ToParam(), anthropic.NewUserMessage(anthropic.NewTextBlock("More?")))
	if _, err := sdk.Messages.New(context.Background(), params); err != nil {
		t.Fatal(err)
	}
	reqs := s.Journal().Requests()
	if steady, sdkBody := canonical(t, reqs[2].Body), canonical(t, reqs[3].Body); steady != sdkBody {
		t.Errorf("next turns differ\nsteady:\n%s\nSDK:\n%s", steady, sdkBody)
	}
}

// steady's count of a conversation sends what the SDK's Messages.CountTokens sends, and both
// read the same count.
func TestAnthropicProvider_CountTokensMeansWhatTheSDKs(t *testing.T) {
	s := newServer(t)
	ours, err := newSteadyAnthropic(t, s).CountTokens(context.Background(), neutralConversation())
	if err != nil {
		t.Fatal(err)
	}
	conv := sdkConversation()
	tools := make([]anthropic.MessageCountTokensToolUnionParam, len(conv.Tools))
	for i, tool := range conv.Tools {
		tools[i] = anthropic.MessageCountTokensToolUnionParam{OfTool: tool.OfTool}
	}
	theirs, err := newAnthropic(s, 0).Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{
		Model: conv.Model, Messages: conv.Messages, Tools: tools,
		System: anthropic.MessageCountTokensParamsSystemUnion{OfTextBlockArray: conv.System},
	})
	if err != nil {
		t.Fatal(err)
	}
	if steady, sdk := twoBodies(t, s); steady != sdk {
		t.Errorf("count bodies differ\nsteady:\n%s\nSDK:\n%s", steady, sdk)
	}
	if int64(ours) != theirs.InputTokens || ours <= 0 {
		t.Errorf("steady counted %d, the SDK %d", ours, theirs.InputTokens)
	}
}

// A count of a request with thinking and an effort sends them as the SDK's count does.
func TestAnthropicProvider_CountTokensWithThinkingMeansWhatTheSDKs(t *testing.T) {
	s := newServer(t)
	ours, err := newSteadyAnthropic(t, s).CountTokens(context.Background(), &providers.ChatRequest{
		Model: "claude-opus-4-7", MaxTokens: 4096, Tools: rawTools,
		Messages:  []providers.Message{{Role: providers.RoleUser, Content: "Think it over."}},
		Reasoning: &providers.Reasoning{Effort: "high"},
	})
	if err != nil {
		t.Fatal(err)
	}
	tools := make([]anthropic.MessageCountTokensToolUnionParam, 0, 3)
	for _, tool := range sdkTools() {
		tools = append(tools, anthropic.MessageCountTokensToolUnionParam{OfWebSearchTool20250305: tool.OfWebSearchTool20250305,
			OfBashTool20250124: tool.OfBashTool20250124, OfTextEditor20250728: tool.OfTextEditor20250728})
	}
	theirs, err := newAnthropic(s, 0).Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{
		Model: "claude-opus-4-7", Tools: tools,
		Messages:     []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Think it over."))},
		Thinking:     anthropic.ThinkingConfigParamUnion{OfAdaptive: &anthropic.ThinkingConfigAdaptiveParam{}},
		OutputConfig: anthropic.OutputConfigParam{Effort: anthropic.OutputConfigEffortHigh},
	})
	if err != nil {
		t.Fatal(err)
	}
	if steady, sdk := twoBodies(t, s); steady != sdk {
		t.Errorf("count bodies differ\nsteady:\n%s\nSDK:\n%s", steady, sdk)
	}
	if int64(ours) != theirs.InputTokens {
		t.Errorf("steady counted %d, the SDK %d", ours, theirs.InputTokens)
	}
}
