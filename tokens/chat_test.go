package tokens_test

import (
	"encoding/json"
	"testing"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/tokens"
)

const w = words("test_words") // one token a word: the rules' arithmetic is what is tested

func TestCountChat_MessagesAndPriming(t *testing.T) {
	req := &providers.ChatRequest{Model: "gpt-4o", Messages: []providers.Message{
		{Role: providers.RoleSystem, Content: "be brief"},      // 3 + 1 + 2
		{Role: providers.RoleUser, Content: "what time is it"}, // 3 + 1 + 4
		{Role: providers.RoleAssistant, Content: ""},           // 3 + 1
		{Role: providers.RoleUser, Parts: []providers.Part{ // 3 + 1 + 2 + 1
			providers.TextPart("two words"), providers.TextPart("one")}},
	}}
	want := 6 + 8 + 4 + 7 + tokens.ReplyPriming
	if got := tokens.CountChat(w, req); got != want {
		t.Errorf("CountChat = %d, want %d", got, want)
	}
}

func TestCountChat_ToolCallsAndResults(t *testing.T) {
	req := &providers.ChatRequest{Model: "gpt-4o", Messages: []providers.Message{
		{Role: providers.RoleAssistant, ToolCalls: []providers.ToolCall{
			{ID: "c1", Name: "lookup", Arguments: `{"q": "a b"}`}, // 3 + 1 + 3
			{ID: "c2", Name: "now", Arguments: `{}`},              // 3 + 1 + 1
		}}, // 3 + 1
		{Role: providers.RoleTool, ToolCallID: "c1", Content: "found it"}, // 3 + 1 + 2
	}}
	want := 4 + 7 + 5 + 6 + tokens.ReplyPriming
	if got := tokens.CountChat(w, req); got != want {
		t.Errorf("CountChat = %d, want %d", got, want)
	}
}

func TestCountChat_ImagePartsFollowTheModel(t *testing.T) {
	img := providers.ImagePart(providers.Image{URL: "https://example.com/x.png", Detail: "low"})
	msg := providers.Message{Role: providers.RoleUser, Parts: []providers.Part{providers.TextPart("what is this"), img}}
	for model, image := range map[string]int{"gpt-4o": 85, "gpt-4o-mini": 2833, "o1": 75} {
		req := &providers.ChatRequest{Model: model, Messages: []providers.Message{msg}}
		if got, want := tokens.CountChat(w, req), 3+1+3+image+tokens.ReplyPriming; got != want {
			t.Errorf("%s: CountChat = %d, want %d", model, got, want)
		}
	}
	// CountChatAs: the deployment's name says nothing; the model named does.
	req := &providers.ChatRequest{Model: "prod-vision", Messages: []providers.Message{msg}}
	if got, want := tokens.CountChatAs(w, "gpt-4o-mini", req), 3+1+3+2833+tokens.ReplyPriming; got != want {
		t.Errorf("CountChatAs = %d, want %d", got, want)
	}
}

func TestCountChat_NilsCountZero(t *testing.T) {
	if tokens.CountChat(nil, &providers.ChatRequest{}) != 0 || tokens.CountChat(w, nil) != 0 ||
		tokens.CountChatAs(w, "gpt-4o", nil) != 0 || tokens.CountEmbedding(nil, []string{"a"}) != 0 ||
		tokens.ToolTokens(nil, "", []providers.Tool{{Name: "x"}}) != 0 || tokens.SchemaTokens(w, nil) != 0 {
		t.Error("a nil encoding or request counted something")
	}
	if got := tokens.CountChat(w, &providers.ChatRequest{}); got != tokens.ReplyPriming {
		t.Errorf("an empty request counts %d, want the reply priming alone", got)
	}
}

// TestCountChat_TextAllocatesNothing: counting a text conversation costs no allocation
// beyond the encoding's own.
func TestCountChat_TextAllocatesNothing(t *testing.T) {
	req := &providers.ChatRequest{Model: "gpt-4o", Messages: []providers.Message{
		{Role: providers.RoleSystem, Content: "be brief"},
		{Role: providers.RoleUser, Parts: []providers.Part{providers.TextPart("hello there")}},
		{Role: providers.RoleAssistant, ToolCalls: []providers.ToolCall{{Name: "f", Arguments: "{}"}}},
		{Role: providers.RoleTool, Content: "ok"},
	}}
	if n := testing.AllocsPerRun(100, func() { tokens.CountChat(w, req) }); n != 0 {
		t.Errorf("%v allocations, want 0", n)
	}
}

func TestCountEmbedding_SumsInputs(t *testing.T) {
	if got := tokens.CountEmbedding(w, []string{"one two", "three", ""}); got != 3 {
		t.Errorf("CountEmbedding = %d, want 3", got)
	}
}

func weather() providers.Tool {
	return providers.Tool{Name: "weather", Description: "Get the weather.", Parameters: json.RawMessage(`{"type":"object","properties":{
		"city":{"type":"string","description":"The city."},
		"unit":{"type":"string","enum":["c","f"]}}}`)}
}

// TestToolTokens_CookbookRule spells out the rule: per function 7 (gpt-4o's) and
// "name:description" without its period; 3 for the properties; per property 3 and
// "name:type:description"; an enum -3 and per item 3 and the item; 12 at the end.
func TestToolTokens_CookbookRule(t *testing.T) {
	// "weather:Get the weather" 3 words; "city:string:The city" 2; "unit:string:" 1; items c, f.
	want := 7 + 3 + 3 + (3 + 2) + (3 - 3 + (3 + 1) + (3 + 1) + 1) + 12
	if got := tokens.ToolTokens(w, "gpt-4o", []providers.Tool{weather()}); got != want {
		t.Errorf("gpt-4o: %d, want %d", got, want)
	}
	// gpt-4's func_init is 10: three more per function.
	if got := tokens.ToolTokens(w, "gpt-4-turbo", []providers.Tool{weather(), weather()}); got != 2*(want-12)+2*3+12 {
		t.Errorf("gpt-4, two tools: %d, want %d", got, 2*(want-12)+2*3+12)
	}
	// An unknown model follows the encoding's family.
	if got := tokens.ToolTokens(words(tokens.Cl100kBase), "my-deployment", []providers.Tool{weather()}); got != want+3 {
		t.Errorf("unknown model, cl100k_base: %d, want %d", got, want+3)
	}
	if tokens.ToolTokens(w, "gpt-4o", nil) != 0 {
		t.Error("no tools count")
	}
}

func TestToolTokens_NestedAndListTypes(t *testing.T) {
	tool := providers.Tool{Name: "t", Parameters: json.RawMessage(`{"type":"object","properties":{
		"who":{"type":"object","properties":{"mail":{"type":"string"}}},
		"tags":{"type":"array","items":{"type":"object","properties":{"k":{"type":["string","null"]}}}}}}`)}
	// t: 1; properties 3; who: 3 + "who:object:" 1 + nested 3 + (3 + "mail:string:" 1);
	// tags: 3 + "tags:array:" 1 + items' nested 3 + (3 + "k:string | null:" 3).
	want := 7 + 1 + 3 + (3 + 1 + 3 + 4) + (3 + 1 + 3 + 6) + 12
	if got := tokens.ToolTokens(w, "gpt-4o", []providers.Tool{tool}); got != want {
		t.Errorf("%d, want %d", got, want)
	}
}

func TestToolTokens_RawAndHostileParameters(t *testing.T) {
	raw := providers.Tool{System: providers.SystemOpenAI, Raw: json.RawMessage(`{"type":"web_search"}`)}
	foreign := providers.Tool{System: providers.SystemAnthropic, Raw: json.RawMessage(`{"type":"bash_20250124","name":"bash"}`)}
	if got := tokens.ToolTokens(w, "gpt-4o", []providers.Tool{raw, foreign}); got != 7+1+12 {
		t.Errorf("raw tools: %d, want %d", got, 7+1+12)
	}
	if got := tokens.ToolTokens(w, "gpt-4o", []providers.Tool{foreign}); got != 0 {
		t.Errorf("a tool never sent to OpenAI counts %d", got)
	}
	broken := providers.Tool{Name: "b", Parameters: json.RawMessage(`{"type": "object", "properties": oops`)}
	if got := tokens.ToolTokens(w, "gpt-4o", []providers.Tool{broken}); got != 7+1+4+12 {
		t.Errorf("unparsable parameters: %d, want their text (%d)", got, 7+1+4+12)
	}
	deep := `{"type":"string"}`
	for i := 0; i < 5000; i++ {
		deep = `{"type":"object","properties":{"p":` + deep + `}}`
	}
	hostile := providers.Tool{Name: "d", Parameters: json.RawMessage(deep)}
	if got := tokens.ToolTokens(w, "gpt-4o", []providers.Tool{hostile}); got > 7+1+12+33*(3+3+1) {
		t.Errorf("5000 nested levels count %d: deeper than the bound", got)
	}
}

func TestSchemaTokens_NameDescriptionAndText(t *testing.T) {
	s := &providers.JSONSchema{Description: "an answer", Schema: json.RawMessage(`{"type": "object"}`)}
	// "response" 1, "an answer" 2, the schema's text 2 words.
	if got := tokens.SchemaTokens(w, s); got != 5 {
		t.Errorf("SchemaTokens = %d, want 5", got)
	}
	req := &providers.ChatRequest{Schema: s}
	if got := tokens.CountChat(w, req); got != 5+tokens.ReplyPriming {
		t.Errorf("CountChat with a schema = %d", got)
	}
}
