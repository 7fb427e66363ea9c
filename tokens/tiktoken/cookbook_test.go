package tiktoken_test

import (
	"encoding/json"
	"testing"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/tokens"
)

// The only numbers from the real API available offline: prompt_tokens that OpenAI's cookbook
// "How to count tokens with tiktoken" (examples/How_to_count_tokens_with_tiktoken.ipynb,
// sections 6 and 7) prints from live calls, and those recorded in the test cases of
// hmarr/openai-chat-tokens (tests/token-counts.test.ts, gpt-3.5-turbo).

func encFor(t *testing.T, model string) tokens.Encoding {
	t.Helper()
	enc, ok := tokens.ForModel(model)
	if !ok {
		t.Fatalf("no encoding registered for %s", model)
	}
	return enc
}

// TestCookbook_Messages is the cookbook's example conversation: six messages, four of them
// with a name. providers.Message carries no name, so the names are added by the documented
// rule (their tokens plus TokensPerName each).
func TestCookbook_Messages(t *testing.T) {
	type msg struct{ role, name, content string }
	conv := []msg{
		{"system", "", "You are a helpful, pattern-following assistant that translates corporate jargon into plain English."},
		{"system", "example_user", "New synergies will help drive top-line growth."},
		{"system", "example_assistant", "Things working well together will increase revenue."},
		{"system", "example_user", "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage."},
		{"system", "example_assistant", "Let's talk later when we're less busy about how to do better."},
		{"user", "", "This late pivot means we don't have time to boil the ocean for the client deliverable."},
	}
	for _, tc := range []struct {
		model string
		api   int // prompt_tokens the cookbook got from the API
	}{{"gpt-3.5-turbo", 129}, {"gpt-4-0613", 129}, {"gpt-4", 129}, {"gpt-4o", 124}, {"gpt-4o-mini", 124}} {
		enc := encFor(t, tc.model)
		req := &providers.ChatRequest{Model: tc.model}
		names := 0
		for _, m := range conv {
			req.Messages = append(req.Messages, providers.Message{Role: providers.Role(m.role), Content: m.content})
			if m.name != "" {
				names += enc.Count(m.name) + tokens.TokensPerName
			}
		}
		if got := tokens.CountChat(enc, req) + names; got != tc.api {
			t.Errorf("%s: counted %d, the API billed %d", tc.model, got, tc.api)
		}
	}
}

// TestCookbook_Tools is the cookbook's weather tool with a system and a user message.
func TestCookbook_Tools(t *testing.T) {
	params := json.RawMessage(`{"type":"object","properties":{
		"location":{"type":"string","description":"The city and state, e.g. San Francisco, CA"},
		"unit":{"type":"string","description":"The unit of temperature to return","enum":["celsius","fahrenheit"]}},
		"required":["location"]}`)
	for _, tc := range []struct {
		model string
		api   int
	}{{"gpt-3.5-turbo", 105}, {"gpt-4", 105}, {"gpt-4o", 101}, {"gpt-4o-mini", 101}} {
		req := &providers.ChatRequest{Model: tc.model,
			Messages: []providers.Message{
				{Role: providers.RoleSystem, Content: "You are a helpful assistant that can answer to questions about the weather."},
				{Role: providers.RoleUser, Content: "What's the weather like in San Francisco?"},
			},
			Tools: []providers.Tool{{Name: "get_current_weather", Description: "Get the current weather in a given location", Parameters: params}},
		}
		if got := tokens.CountChat(encFor(t, tc.model), req); got != tc.api {
			t.Errorf("%s: counted %d, the API billed %d", tc.model, got, tc.api)
		}
	}
}

// TestChatTokens_MessagesAndCalls are hmarr/openai-chat-tokens' recorded API counts for
// gpt-3.5-turbo that steady's request can express: plain messages, and an assistant message
// calling a function (the legacy function_call, counted as one tool call).
func TestChatTokens_MessagesAndCalls(t *testing.T) {
	user := func(s string) providers.Message { return providers.Message{Role: providers.RoleUser, Content: s} }
	call := func(args string) providers.Message {
		return providers.Message{Role: providers.RoleAssistant, ToolCalls: []providers.ToolCall{{Name: "do_stuff", Arguments: args}}}
	}
	for _, tc := range []struct {
		name string
		msgs []providers.Message
		api  int
	}{
		{"hello", []providers.Message{user("hello")}, 8},
		{"hello world", []providers.Message{user("hello world")}, 9},
		{"three messages", []providers.Message{
			{Role: providers.RoleSystem, Content: "# Important: you're the best robot"},
			user("hello robot"),
			{Role: providers.RoleAssistant, Content: "hello world"},
		}, 27},
		{"function call", []providers.Message{call(`{"foo": "bar", "baz": 1.5}`)}, 26},
		{"function call, odd spacing", []providers.Message{call("{\"foo\":\"bar\", \"baz\":\n\n 1.5}")}, 25},
	} {
		req := &providers.ChatRequest{Model: "gpt-3.5-turbo", Messages: tc.msgs}
		if got := tokens.CountChat(encFor(t, req.Model), req); got != tc.api {
			t.Errorf("%s: counted %d, the API billed %d", tc.name, got, tc.api)
		}
	}
}

// TestChatTokens_KnownDeviations are recorded API counts the rules do not reproduce exactly,
// kept so that a change of rule that moves them further shows: hmarr/openai-chat-tokens'
// legacy function definitions on gpt-3.5-turbo (the cookbook's tool rule is within a token on
// flat ones; on nested properties, which the cookbook does not count and ToolTokens counts
// like top-level ones, it is 6 high — 19 low without them), and a tool call and its result
// reported on the OpenAI developer forum ("Strange token cost calculation for tool_calls",
// gpt-3.5-turbo: 40), one low.
func TestChatTokens_KnownDeviations(t *testing.T) {
	obj := func(props string) json.RawMessage {
		return json.RawMessage(`{"type":"object","properties":{` + props + `}}`)
	}
	hello := []providers.Message{{Role: providers.RoleUser, Content: "hello"}}
	for _, tc := range []struct {
		name      string
		req       providers.ChatRequest
		api, diff int // diff: counted - api, as measured when the test was written
	}{
		{"function, no description", providers.ChatRequest{Messages: hello,
			Tools: []providers.Tool{{Name: "foo", Parameters: obj(``)}}}, 31, +1},
		{"function", providers.ChatRequest{Messages: hello,
			Tools: []providers.Tool{{Name: "foo", Description: "Do a foo", Parameters: obj(``)}}}, 36, -1},
		{"one property", providers.ChatRequest{Messages: hello,
			Tools: []providers.Tool{{Name: "bing_bong", Description: "Do a bing bong", Parameters: obj(`"foo":{"type":"string"}`)}}}, 49, 0},
		{"two properties", providers.ChatRequest{Messages: hello,
			Tools: []providers.Tool{{Name: "bing_bong", Description: "Do a bing bong",
				Parameters: obj(`"foo":{"type":"string"},"bar":{"type":"number","description":"A number"}`)}}}, 57, -1},
		{"nested object", providers.ChatRequest{Messages: hello,
			Tools: []providers.Tool{{Name: "bing_bong", Description: "Do a bing bong",
				Parameters: obj(`"foo":{"type":"object","properties":{"bar":{"type":"string","enum":["a","b","c"]},"baz":{"type":"boolean"}}}`)}}}, 68, +6},
		{"tool call and result", providers.ChatRequest{Messages: []providers.Message{
			{Role: providers.RoleUser, Parts: []providers.Part{providers.TextPart("How much is 2 plus 2?")}},
			{Role: providers.RoleAssistant, ToolCalls: []providers.ToolCall{{ID: "a", Name: "calculator", Arguments: `{"a":2, "b":2}`}}},
			{Role: providers.RoleTool, ToolCallID: "a", Content: "4"},
		}}, 40, -1},
	} {
		tc.req.Model = "gpt-3.5-turbo"
		got := tokens.CountChat(encFor(t, tc.req.Model), &tc.req)
		if got-tc.api != tc.diff {
			t.Errorf("%s: counted %d, the API billed %d: off by %+d, was %+d", tc.name, got, tc.api, got-tc.api, tc.diff)
		}
	}
}
