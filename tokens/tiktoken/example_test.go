package tiktoken_test

import (
	"fmt"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/tokens"
	_ "github.com/steadyllm/steady/tokens/tiktoken" // registers o200k_base and cl100k_base
)

// The prompt tokens OpenAI bills for a short conversation with gpt-4o, and the same text as
// embedding input.
func Example() {
	req := &providers.ChatRequest{
		Model: "gpt-4o",
		Messages: []providers.Message{
			{Role: providers.RoleSystem, Content: "You are a helpful assistant."},
			{Role: providers.RoleUser, Content: "What is the capital of Portugal?"},
		},
	}
	enc, ok := tokens.ForModel(req.Model)
	if !ok {
		fmt.Println("no exact count for", req.Model)
		return
	}
	fmt.Println(enc.Name(), tokens.CountChat(enc, req))
	fmt.Println(tokens.CountEmbedding(enc, []string{"What is the capital of Portugal?"}))
	// Output:
	// o200k_base 24
	// 7
}
