package tokens_test

import (
	"fmt"

	"github.com/steadyllm/steady/tokens"
)

func ExampleEncodingForModel() {
	for _, model := range []string{"gpt-4o-2024-08-06", "openai/gpt-4.1-mini", "gpt-4-turbo", "claude-sonnet-4-5"} {
		fmt.Printf("%s: %q\n", model, tokens.EncodingForModel(model))
	}
	// Output:
	// gpt-4o-2024-08-06: "o200k_base"
	// openai/gpt-4.1-mini: "o200k_base"
	// gpt-4-turbo: "cl100k_base"
	// claude-sonnet-4-5: ""
}
