package openai_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/steadyllm/steady/providers"
)

// A tool given in another provider's shape (an Anthropic server tool) is refused by both wires
// before anything is sent, naming it.
func TestRawTools_RefusedByBothWiresBeforeSending(t *testing.T) {
	s := newServer(t)
	req := ask("hi")
	req.Tools = []providers.Tool{{Name: "f"}, {System: providers.SystemAnthropic, Raw: json.RawMessage(`{"type":"web_search_20250305","name":"web_search"}`)}}
	for name, call := range map[string]func() error{
		"chat completions": func() error { _, err := newProvider(t, s).Chat(context.Background(), req); return err },
		"chat stream":      func() error { _, err := newProvider(t, s).ChatStream(context.Background(), req); return err },
		"responses":        func() error { _, err := responsesProvider(t, s).Chat(context.Background(), req); return err },
		"responses stream": func() error { _, err := responsesProvider(t, s).ChatStream(context.Background(), req); return err },
	} {
		e := asError(t, call())
		if e.Kind != providers.KindBadRequest || !strings.Contains(e.Message, "Tools[1] (web_search_20250305)") || !strings.Contains(e.Message, `"anthropic"`) {
			t.Errorf("%s: %#v", name, e)
		}
	}
	if n := s.Journal().Len(); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

// Provider blocks (another provider's state) are dropped: the assistant turn goes as its text
// and tool calls.
func TestProviderBlocks_AreDroppedByBothWires(t *testing.T) {
	s := newServer(t)
	req := ask("hi")
	req.Messages = append(req.Messages, providers.Message{Role: providers.RoleAssistant, Content: "one two",
		ProviderBlocks: []providers.ProviderBlock{{Type: "server_tool_use", Raw: json.RawMessage(`{"type":"server_tool_use","id":"srvtoolu_1"}`), At: 3}}},
		providers.Message{Role: providers.RoleUser, Content: "more"})
	for name, p := range map[string]interface {
		Chat(context.Context, *providers.ChatRequest) (*providers.ChatResponse, error)
	}{"chat completions": newProvider(t, s), "responses": responsesProvider(t, s)} {
		if _, err := p.Chat(context.Background(), req); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		last, _ := s.Journal().Last()
		if body := string(last.Body); strings.Contains(body, "srvtoolu_1") || !strings.Contains(body, "one two") {
			t.Errorf("%s sent %s", name, body)
		}
	}
}
