package providers_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/steadyllm/steady/providers"
)

// A raw tool (Tool.Raw) needs its System and a "type", and nothing of a function tool; provider
// blocks are JSON objects of their Type, on an assistant message only.
func TestValidate_RawToolsAndProviderBlocks(t *testing.T) {
	web := providers.Tool{System: providers.SystemAnthropic, Raw: json.RawMessage(`{"type":"web_search_20250305","name":"web_search"}`)}
	ok := func() *providers.ChatRequest {
		return &providers.ChatRequest{
			Messages: []providers.Message{{Role: providers.RoleUser, Content: "hi"},
				{Role: providers.RoleAssistant, Content: "x", ProviderBlocks: []providers.ProviderBlock{
					{Type: "server_tool_use", Raw: json.RawMessage(`{"type":"server_tool_use","id":"s"}`), Origin: "o", At: 1}}}},
			Tools:      []providers.Tool{web, {Name: "f"}},
			ToolChoice: providers.ToolChoice{Mode: providers.ToolChoiceTool, Name: "web_search"},
		}
	}
	if err := ok().Validate(); err != nil {
		t.Fatalf("a valid request: %v", err)
	}
	if web.RawType() != "web_search_20250305" || web.ToolName() != "web_search" || (providers.Tool{Name: "f"}).ToolName() != "f" {
		t.Fatalf("RawType %q, ToolName %q", web.RawType(), web.ToolName())
	}
	for _, tc := range []struct {
		name, want string
		edit       func(r *providers.ChatRequest)
	}{
		{"no system", "Tools[0].Raw needs a System", func(r *providers.ChatRequest) { r.Tools[0].System = "" }},
		{"system without raw", "without Raw", func(r *providers.ChatRequest) { r.Tools[1].System = "anthropic" }},
		{"not an object", "Tools[0].Raw must be a JSON object", func(r *providers.ChatRequest) { r.Tools[0].Raw = json.RawMessage(`[1]`) }},
		{"no type", `Tools[0].Raw has no "type"`, func(r *providers.ChatRequest) { r.Tools[0].Raw = json.RawMessage(`{"name":"x"}`) }},
		{"both shapes", "set Raw or Name", func(r *providers.ChatRequest) { r.Tools[0].Description = "d" }},
		{"two systems", `raw tools of "anthropic" and of "openai"`, func(r *providers.ChatRequest) {
			r.Tools = append(r.Tools, providers.Tool{System: providers.SystemOpenAI, Raw: json.RawMessage(`{"type":"web_search"}`)})
		}},
		{"choice of an unknown name", `ToolChoice names tool "web"`, func(r *providers.ChatRequest) { r.ToolChoice.Name = "web" }},
		{"block on a user message", "only a \"assistant\" message has provider blocks", func(r *providers.ChatRequest) {
			r.Messages[0].ProviderBlocks = r.Messages[1].ProviderBlocks
		}},
		{"block type differs", `ProviderBlocks[0].Type = "x"`, func(r *providers.ChatRequest) { r.Messages[1].ProviderBlocks[0].Type = "x" }},
		{"block not an object", "ProviderBlocks[0].Raw must be a JSON object", func(r *providers.ChatRequest) {
			r.Messages[1].ProviderBlocks[0].Raw = json.RawMessage(`"s"`)
		}},
		{"negative place", "must not be negative", func(r *providers.ChatRequest) { r.Messages[1].ProviderBlocks[0].At = -1 }},
		{"origin with a newline", "must not hold control characters", func(r *providers.ChatRequest) { r.Messages[1].ProviderBlocks[0].Origin = "a\nb" }},
	} {
		r := ok()
		tc.edit(r)
		err := r.Validate()
		if providers.KindOf(err) != providers.KindBadRequest || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if a, b := ok().RawToolSystems(); a != providers.SystemAnthropic || b != "" {
		t.Fatalf("RawToolSystems = %q, %q", a, b)
	}
	if ok().Needs(false)&providers.CapTools == 0 {
		t.Fatal("raw tools need no tools capability")
	}
}
