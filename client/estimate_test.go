package client_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/providers"
)

func TestEstimateTokens(t *testing.T) {
	req := &providers.ChatRequest{Messages: []providers.Message{
		{Role: providers.RoleSystem, Content: strings.Repeat("s", 40)},
		{Role: providers.RoleUser, Parts: []providers.Part{providers.TextPart(strings.Repeat("u", 40)),
			providers.ImagePart(providers.Image{URL: "https://example.com/a.png"})}},
	}, Tools: []providers.Tool{{Name: "abcd", Parameters: json.RawMessage(`{"type":"object"}`)}}}
	// 40 + 40 + 4000 (the image) + 4 + 17 bytes = 4101 → 1026 tokens, and the default answer.
	if got, want := client.EstimateTokens(req), 1026+client.DefaultAnswerTokens; got != want {
		t.Fatalf("estimate %d, want %d", got, want)
	}
	req.MaxTokens = 10
	if got := client.EstimateTokens(req); got != 1036 {
		t.Fatalf("with MaxTokens: %d", got)
	}
	if client.EstimateTokens(nil) != 0 {
		t.Fatal("nil request")
	}
}
