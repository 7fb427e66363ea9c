module github.com/steadyllm/steady/tokens/tiktoken

go 1.26.0

replace github.com/steadyllm/steady => ../..

require (
	github.com/steadyllm/steady v0.0.0-00010101000000-000000000000
	github.com/tiktoken-go/tokenizer v0.10.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/dlclark/regexp2/v2 v2.5.1 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/hashicorp/go-retryablehttp v0.7.8 // indirect
	github.com/sashabaranov/go-openai v1.43.0 // indirect
	golang.org/x/sys v0.35.0 // indirect
	golang.org/x/time v0.12.0 // indirect
)
