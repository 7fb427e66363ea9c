package interop

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	steadyopenai "github.com/steadyllm/steady/providers/openai"
)

// newSteadyResponses is steady's OpenAI provider speaking the Responses API to s.
func newSteadyResponses(t *testing.T, s *mocks.Server) *steadyopenai.Provider {
	t.Helper()
	p, err := steadyopenai.New(steadyopenai.Config{API: steadyopenai.Responses, BaseURL: s.OpenAIBaseURL(), APIKey: "sk-test",
		HTTPClient: s.Client(), Model: "gpt-4o"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// lastJSON decodes the body of the last request s received.
func lastJSON(t *testing.T, s *mocks.Server) map[string]any {
	t.Helper()
	r, ok := s.Journal().Last()
	if !ok {
		t.Fatal("no request")
	}
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// The full neutral request — system, text and image parts, an earlier turn with its reasoning
// item and tool call, the tool's result, a tool with strict off, a forced tool choice without
// parallel calls, a strict JSON schema, reasoning effort and summary, sampling, nothing stored
// — sends the body openai-go sends for the same request, field for field, and both read the
// same answer.
func TestResponses_FullRequestSendsWhatOpenAIGoSends(t *testing.T) {
	s := newServer(t)
	params := map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}},
		"required": []any{"city"}, "additionalProperties": false}
	paramsJSON, _ := json.Marshal(params)
	png := base64.StdEncoding.EncodeToString(pngBytes)
	off, temp, topP := false, 0.5, 0.9
	p := newSteadyResponses(t, s)
	ours, err := p.Chat(context.Background(), &providers.ChatRequest{
		Model: "gpt-4o",
		Messages: []providers.Message{
			{Role: providers.RoleSystem, Content: "Be brief."},
			{Role: providers.RoleUser, Parts: []providers.Part{providers.TextPart("Where was this taken?"),
				providers.ImagePart(providers.Image{Data: pngBytes, MediaType: "image/png", Detail: "high"})}},
			{Role: providers.RoleAssistant, Content: "Let me look.",
				Thinking:  []providers.ThinkingBlock{{ID: "rs_1", Text: "A photo.", Encrypted: "enc_fake_abc", Origin: p.SharingScope()}},
				ToolCalls: []providers.ToolCall{{ID: "call_1", Name: "lookup", Arguments: `{"city":"Paris"}`}}},
			{Role: providers.RoleTool, ToolCallID: "call_1", Content: "Paris, France"},
			{Role: providers.RoleUser, Content: "So?"},
		},
		MaxTokens: 500, Temperature: &temp, TopP: &topP,
		Tools:             []providers.Tool{{Name: "lookup", Description: "Looks a city up.", Parameters: paramsJSON}},
		ToolChoice:        providers.ToolChoice{Mode: providers.ToolChoiceTool, Name: "lookup"},
		ParallelToolCalls: &off,
		Schema:            &providers.JSONSchema{Name: "place", Schema: paramsJSON, Strict: true},
		Reasoning:         &providers.Reasoning{Effort: "low", Summary: "auto"},
		Store:             &off,
	})
	if err != nil {
		t.Fatal(err)
	}
	sent := lastJSON(t, s)

	msg := func(role responses.EasyInputMessageRole, text string) responses.ResponseInputItemUnionParam {
		return responses.ResponseInputItemUnionParam{OfMessage: &responses.EasyInputMessageParam{Role: role, Type: responses.EasyInputMessageTypeMessage,
			Content: responses.EasyInputMessageContentUnionParam{OfString: openai.String(text)}}}
	}
	theirs, err := newOpenAI(s, 0).Responses.New(context.Background(), responses.ResponseNewParams{
		Model: "gpt-4o",
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			msg(responses.EasyInputMessageRoleSystem, "Be brief."),
			{OfMessage: &responses.EasyInputMessageParam{Role: responses.EasyInputMessageRoleUser, Type: responses.EasyInputMessageTypeMessage,
				Content: responses.EasyInputMessageContentUnionParam{OfInputItemContentList: responses.ResponseInputMessageContentListParam{
					{OfInputText: &responses.ResponseInputTextParam{Text: "Where was this taken?"}},
					{OfInputImage: &responses.ResponseInputImageParam{ImageURL: openai.String("data:image/png;base64," + png),
						Detail: responses.ResponseInputImageDetailHigh}},
				}}}},
			{OfReasoning: &responses.ResponseReasoningItemParam{ID: "rs_1", EncryptedContent: openai.String("enc_fake_abc"),
				Summary: []responses.ResponseReasoningItemSummaryParam{{Text: "A photo."}}}},
			msg(responses.EasyInputMessageRoleAssistant, "Let me look."),
			{OfFunctionCall: &responses.ResponseFunctionToolCallParam{CallID: "call_1", Name: "lookup", Arguments: `{"city":"Paris"}`}},
			{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{CallID: openai.String("call_1"),
				Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String("Paris, France")}}},
			msg(responses.EasyInputMessageRoleUser, "So?"),
		}},
		MaxOutputTokens:   openai.Int(500),
		Temperature:       openai.Float(temp),
		TopP:              openai.Float(topP),
		Tools:             []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{Name: "lookup", Description: openai.String("Looks a city up."), Parameters: params, Strict: openai.Bool(false)}}},
		ToolChoice:        responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: "lookup"}},
		ParallelToolCalls: openai.Bool(false),
		Text: responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{
			Name: "place", Schema: params, Strict: openai.Bool(true)}}},
		Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortLow, Summary: shared.ReasoningSummaryAuto},
		Store:     openai.Bool(false),
		Include:   []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := lastJSON(t, s); !reflect.DeepEqual(sent, want) {
		a, _ := json.MarshalIndent(sent, "", " ")
		b, _ := json.MarshalIndent(want, "", " ")
		t.Fatalf("steady sent\n%s\nopenai-go sent\n%s", a, b)
	}

	// The same answer, read by both: a call of the forced tool, its reasoning, its usage.
	var call responses.ResponseFunctionToolCall
	var reasoning responses.ResponseReasoningItem
	for _, it := range theirs.Output {
		switch it.Type {
		case "function_call":
			call = it.AsFunctionCall()
		case "reasoning":
			reasoning = it.AsReasoning()
		}
	}
	got := ours.Message.ToolCalls
	// (The fake numbers call IDs by request: call_…1 for steady's, call_…2 for openai-go's.)
	if len(got) != 1 || got[0].ID != "call_00000001" || call.CallID != "call_00000002" || got[0].Name != call.Name || got[0].Arguments != call.Arguments ||
		ours.FinishReason != providers.FinishToolCalls {
		t.Fatalf("tool call %+v, openai-go read %+v", got, call)
	}
	th := ours.Message.Thinking
	if len(th) != 1 || !strings.HasPrefix(th[0].ID, "rs_") || !strings.HasPrefix(reasoning.ID, "rs_") ||
		!strings.HasPrefix(th[0].Encrypted, "enc_fake_") || !strings.HasPrefix(reasoning.EncryptedContent, "enc_fake_") || len(reasoning.Summary) != 1 ||
		th[0].Text != reasoning.Summary[0].Text || ours.Reasoning != th[0].Text {
		t.Fatalf("reasoning %+v, openai-go read %+v", th, reasoning)
	}
	u := theirs.Usage
	if ours.Usage.InputTokens != int(u.InputTokens) || ours.Usage.OutputTokens != int(u.OutputTokens) ||
		ours.Usage.ReasoningTokens != int(u.OutputTokensDetails.ReasoningTokens) || ours.Usage.CachedInputTokens != int(u.InputTokensDetails.CachedTokens) {
		t.Fatalf("usage %+v, openai-go read %+v", ours.Usage, u)
	}
}

// A stored conversation continued, streamed: both send previous_response_id and stream alike,
// and both read the same text and usage from the semantic events.
func TestResponses_StreamReadsWhatOpenAIGoReads(t *testing.T) {
	s := newServer(t, mocks.WithReply("The quick brown fox jumps."))
	p := newSteadyResponses(t, s)
	first, err := p.Chat(context.Background(), &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: "Hi"}}})
	if err != nil || first.Stored == nil {
		t.Fatalf("%v %+v", err, first)
	}
	st, err := p.ChatStream(context.Background(), &providers.ChatRequest{Previous: first.Stored,
		Messages: []providers.Message{{Role: providers.RoleUser, Content: "Again"}}})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	var last providers.Delta
	for {
		d, err := st.Recv()
		if err != nil {
			break
		}
		text.WriteString(d.Text)
		last = d
	}
	st.Close()
	sent := lastJSON(t, s)

	stream := newOpenAI(s, 0).Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model:              "gpt-4o",
		PreviousResponseID: openai.String(first.ID),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			{OfMessage: &responses.EasyInputMessageParam{Role: responses.EasyInputMessageRoleUser, Type: responses.EasyInputMessageTypeMessage,
				Content: responses.EasyInputMessageContentUnionParam{OfString: openai.String("Again")}}}}},
	})
	var theirs strings.Builder
	var completed responses.Response
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "response.output_text.delta":
			theirs.WriteString(ev.Delta)
		case "response.completed":
			completed = ev.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	_ = stream.Close()
	if want := lastJSON(t, s); !reflect.DeepEqual(sent, want) {
		t.Fatalf("steady sent %v, openai-go sent %v", sent, want)
	}
	if text.String() != theirs.String() || text.String() != "The quick brown fox jumps." || !last.Done ||
		last.Usage.OutputTokens != int(completed.Usage.OutputTokens) || last.Usage.InputTokens != int(completed.Usage.InputTokens) ||
		last.Stored == nil || last.Stored.ID != "resp_fake0000000000000002" || completed.ID != "resp_fake0000000000000003" {
		t.Fatalf("steady read %q %+v, openai-go %q %+v", text.String(), last, theirs.String(), completed.Usage)
	}
	if r := s.Journal().Requests()[1]; r.Header.Get("Accept") != "text/event-stream" || r.Method != http.MethodPost {
		t.Fatalf("steady's stream request %v", r.Header)
	}
}
