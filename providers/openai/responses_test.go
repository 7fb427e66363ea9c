package openai_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
)

// responsesProvider builds a Responses-API provider against s, adjusted by edit.
func responsesProvider(t *testing.T, s *mocks.Server, edit ...func(*openai.Config)) *openai.Provider {
	t.Helper()
	return newProvider(t, s, append([]func(*openai.Config){func(c *openai.Config) { c.API = openai.Responses }}, edit...)...)
}

// bodyOf decodes the JSON body of the last request s received.
func bodyOf(t *testing.T, s *mocks.Server) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(lastBody(t, s)), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// jsonOf decodes a JSON literal, for comparisons with what a body holds.
func jsonOf(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

func TestResponses_ChatReturnsTextUsageFinishAndStoredAnswer(t *testing.T) {
	s := newServer(t, mocks.Reply("Hello there."))
	p := responsesProvider(t, s)
	resp, err := p.Chat(context.Background(), ask("Hi"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "Hello there." || resp.Message.Role != providers.RoleAssistant || resp.FinishReason != providers.FinishStop {
		t.Fatalf("answer %+v", resp)
	}
	if resp.Usage.InputTokens != 1 || resp.Usage.OutputTokens != mocks.Tokens("Hello there.") || resp.Usage.Total() == 0 {
		t.Fatalf("usage %+v", resp.Usage)
	}
	if resp.ID != "resp_fake0000000000000001" || resp.Model != "gpt-4o-mini" || resp.RequestID == "" || resp.RateLimit == nil {
		t.Fatalf("ids %+v", resp)
	}
	if resp.Stored == nil || resp.Stored.ID != resp.ID || resp.Stored.Origin != p.SharingScope() {
		t.Fatalf("stored %+v: the answer was stored (store is on by default)", resp.Stored)
	}
	if r, _ := s.Journal().Last(); r.Path != "/v1/responses" {
		t.Fatalf("path %s", r.Path)
	}
}

func TestResponses_SendsTheRequestAsTypedItems(t *testing.T) {
	s := newServer(t, mocks.OK())
	p := responsesProvider(t, s)
	zero, strict, noParallel := 0.0, true, false
	req := &providers.ChatRequest{
		Messages: []providers.Message{
			{Role: providers.RoleSystem, Content: "Be brief."},
			{Role: providers.RoleUser, Parts: []providers.Part{providers.TextPart("What is this?"),
				providers.ImagePart(providers.Image{Data: []byte{1, 2, 3}, MediaType: "image/png"}),
				providers.ImagePart(providers.Image{URL: "https://example.com/a.png", Detail: "low"})}},
			{Role: providers.RoleAssistant, ToolCalls: []providers.ToolCall{{ID: "call_1", Name: "look", Arguments: `{"x":1}`}}},
			{Role: providers.RoleTool, ToolCallID: "call_1", Content: "a cat"},
			{Role: providers.RoleAssistant, Content: "A cat."},
			{Role: providers.RoleUser, Content: "Sure?"},
		},
		MaxTokens: 8, Temperature: &zero, TopP: &zero,
		Tools:             []providers.Tool{{Name: "look", Description: "Looks.", Parameters: json.RawMessage(`{"type":"object"}`)}, {Name: "bare"}},
		ToolChoice:        providers.ToolChoice{Mode: providers.ToolChoiceTool, Name: "look"},
		ParallelToolCalls: &noParallel,
		Schema:            &providers.JSONSchema{Name: "answer", Schema: json.RawMessage(`{"type":"object"}`), Strict: strict},
		Reasoning:         &providers.Reasoning{Effort: "low", Summary: "auto"},
		Include:           []string{"message.output_text.logprobs"},
	}
	if _, err := p.Chat(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	want := jsonOf(t, `{
		"model": "gpt-4o-mini",
		"input": [
			{"type":"message","role":"system","content":"Be brief."},
			{"type":"message","role":"user","content":[
				{"type":"input_text","text":"What is this?"},
				{"type":"input_image","image_url":"data:image/png;base64,AQID","detail":"auto"},
				{"type":"input_image","image_url":"https://example.com/a.png","detail":"low"}]},
			{"type":"function_call","call_id":"call_1","name":"look","arguments":"{\"x\":1}"},
			{"type":"function_call_output","call_id":"call_1","output":"a cat"},
			{"type":"message","role":"assistant","content":"A cat."},
			{"type":"message","role":"user","content":"Sure?"}],
		"max_output_tokens": 16,
		"temperature": 0, "top_p": 0,
		"tools": [
			{"type":"function","name":"look","description":"Looks.","parameters":{"type":"object"},"strict":false},
			{"type":"function","name":"bare","parameters":{"type":"object","properties":{}},"strict":false}],
		"tool_choice": {"type":"function","name":"look"},
		"parallel_tool_calls": false,
		"text": {"format":{"type":"json_schema","name":"answer","schema":{"type":"object"},"strict":true}},
		"reasoning": {"effort":"low","summary":"auto"},
		"include": ["message.output_text.logprobs"]
	}`)
	if got := bodyOf(t, s); !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", " ")
		t.Fatalf("body:\n%s", g)
	}
}

func TestResponses_JSONModeAndToolChoiceModes(t *testing.T) {
	s := newServer(t, mocks.OK(), mocks.OK())
	p := responsesProvider(t, s)
	req := ask("Give JSON")
	req.Format = providers.FormatJSON
	req.Tools = []providers.Tool{{Name: "t"}}
	req.ToolChoice = providers.ToolChoice{Mode: providers.ToolChoiceNone}
	if _, err := p.Chat(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	b := bodyOf(t, s)
	if !reflect.DeepEqual(b["text"], jsonOf(t, `{"format":{"type":"json_object"}}`)) || b["tool_choice"] != "none" {
		t.Fatalf("body %v", b)
	}
}

func TestResponses_StoreOffAsksForEncryptedReasoningByItself(t *testing.T) {
	s := newServer(t, mocks.OK(), mocks.OK())
	p := responsesProvider(t, s)
	off := false
	req := ask("think")
	req.Store, req.Reasoning = &off, &providers.Reasoning{Effort: "medium"}
	resp, err := p.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	b := bodyOf(t, s)
	if b["store"] != false || !reflect.DeepEqual(b["include"], []any{providers.IncludeReasoningEncrypted}) {
		t.Fatalf("body %v", b)
	}
	if resp.Stored != nil {
		t.Fatalf("nothing was stored, yet Stored = %+v", resp.Stored)
	}
	if len(resp.Message.Thinking) != 1 || !strings.HasPrefix(resp.Message.Thinking[0].Encrypted, "enc_fake_") {
		t.Fatalf("thinking %+v", resp.Message.Thinking)
	}
	req.Include = []string{providers.IncludeReasoningEncrypted} // asked already: not twice
	if _, err := p.Chat(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if b := bodyOf(t, s); len(b["include"].([]any)) != 1 {
		t.Fatalf("include %v", b["include"])
	}
}

func TestResponses_ToolCallIsReadWithItsCallID(t *testing.T) {
	s := newServer(t, mocks.CallTool("get_weather", `{"city":"Paris"}`))
	p := responsesProvider(t, s)
	req := ask("Weather?")
	req.Tools = []providers.Tool{{Name: "get_weather"}}
	resp, err := p.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := []providers.ToolCall{{ID: "call_00000001", Name: "get_weather", Arguments: `{"city":"Paris"}`}}
	if !reflect.DeepEqual(resp.Message.ToolCalls, want) || resp.FinishReason != providers.FinishToolCalls || resp.Message.Content != "" {
		t.Fatalf("answer %+v", resp)
	}
}

func TestResponses_StructuredOutputIsDecoded(t *testing.T) {
	s := newServer(t, mocks.OK())
	p := responsesProvider(t, s)
	req := ask("Receipt")
	req.Schema = &providers.JSONSchema{Schema: json.RawMessage(`{"type":"object","properties":{"total":{"type":"number"}}}`)}
	resp, err := p.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ Total float64 }
	if err := resp.DecodeJSON(&v); err != nil || v.Total != 1 {
		t.Fatalf("JSON %s: %v", resp.JSON, err)
	}
	if f := bodyOf(t, s)["text"].(map[string]any)["format"].(map[string]any); f["name"] != "response" || f["strict"] != false {
		t.Fatalf("format %v", f)
	}
}

func TestResponses_AnswerCutAtMaxTokensIsLength(t *testing.T) {
	s := newServer(t, mocks.Reply(strings.Repeat("word ", 40)))
	p := responsesProvider(t, s)
	req := ask("long")
	req.MaxTokens = 16
	resp, err := p.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.FinishReason != providers.FinishLength || len(resp.Message.Content) != 64 {
		t.Fatalf("finish %q, %d bytes", resp.FinishReason, len(resp.Message.Content))
	}
}

func TestResponses_RefusedBeforeSending(t *testing.T) {
	s := newServer(t)
	p := responsesProvider(t, s)
	for name, req := range map[string]*providers.ChatRequest{
		"stop sequences":   {Messages: ask("x").Messages, Stop: []string{"END"}},
		"another's answer": {Messages: ask("x").Messages, Previous: &providers.StoredResponse{ID: "resp_1", Origin: "another"}},
		"tool call no id":  {Messages: []providers.Message{{Role: providers.RoleAssistant, ToolCalls: []providers.ToolCall{{Name: "f"}}}}},
		"no previous id":   {Messages: ask("x").Messages, Previous: &providers.StoredResponse{}},
	} {
		_, err := p.Chat(context.Background(), req)
		if e := asError(t, err); e.Kind != providers.KindBadRequest {
			t.Errorf("%s: %v", name, err)
		}
		st, err := p.ChatStream(context.Background(), req)
		if st != nil || asError(t, err).Kind != providers.KindBadRequest {
			t.Errorf("%s (stream): %v", name, err)
		}
	}
	if n := s.Journal().Len(); n != 0 {
		t.Fatalf("%d requests were sent", n)
	}
}

func TestResponses_AzureUsesTheV1PathTheKeyHeaderAndTheDeployment(t *testing.T) {
	s := newServer(t, mocks.OK())
	p, err := openai.New(openai.Config{Dialect: openai.Azure, API: openai.Responses, BaseURL: s.URL() + "/openai", APIKey: sentinel,
		Model: "gpt-4o", AzureDeployments: map[string]string{"gpt-4o": "prod-4o"}, HTTPClient: s.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Chat(context.Background(), ask("hi")); err != nil {
		t.Fatal(err)
	}
	r, _ := s.Journal().Last()
	if r.Path != "/openai/v1/responses" || r.Header.Get("Api-Key") == "" || r.Header.Get("Authorization") != "" || bodyOf(t, s)["model"] != "prod-4o" {
		t.Fatalf("request %s %v %v", r.Path, r.Header, bodyOf(t, s)["model"])
	}
}

func TestResponses_ConfigNamesAnUnknownAPI(t *testing.T) {
	_, err := openai.New(openai.Config{APIKey: "k", API: "respones"})
	if err == nil || !strings.Contains(err.Error(), `unknown API "respones"`) || !strings.Contains(err.Error(), `"responses"`) {
		t.Fatalf("error %v", err)
	}
	p, err := openai.New(openai.Config{APIKey: "k", API: openai.Responses})
	if err != nil || !p.Describe().Capabilities.Has(providers.CapStoredResponses) ||
		!reflect.DeepEqual(p.ShapeFields(), []string{"stream", "background", "model", "previous_response_id", "conversation"}) {
		t.Fatalf("%v %+v %v", err, p.Describe(), p.ShapeFields())
	}
	if s := (openai.Config{API: openai.Responses, APIKey: sentinel}).String(); !strings.Contains(s, "API:responses") || strings.Contains(s, sentinel) {
		t.Fatalf("String %s", s)
	}
}
