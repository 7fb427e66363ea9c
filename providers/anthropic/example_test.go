package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
	"github.com/steadyllm/steady/resilience"
)

// A provider over a resilience pipeline, against the fake server: the first attempt is
// overloaded (529), the pipeline retries, and the answer is streamed.
func Example() {
	s := mocks.NewServer(mocks.WithScript(mocks.Overloaded(), mocks.Reply("Bonjour !")))
	defer s.Close()

	opts := resilience.DefaultOptions()
	opts.RetryBaseDelaySeconds = 0.01
	pipeline, err := resilience.New(opts, resilience.WithName("anthropic"))
	if err != nil {
		panic(err)
	}
	p, err := anthropic.New(anthropic.Config{
		BaseURL:    s.AnthropicBaseURL(), // empty for https://api.anthropic.com
		APIKey:     "sk-ant-example",
		Model:      "claude-haiku-4-5",
		HTTPClient: &http.Client{Transport: pipeline.Wrap(http.DefaultTransport)},
	})
	if err != nil {
		panic(err)
	}

	st, err := p.ChatStream(context.Background(), &providers.ChatRequest{Messages: []providers.Message{
		{Role: providers.RoleSystem, Content: "Answer in French."},
		{Role: providers.RoleUser, Content: "Say hello."},
	}})
	if err != nil {
		panic(err)
	}
	defer st.Close()
	for {
		d, err := st.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println("failed:", providers.KindOf(err), err)
			return
		}
		fmt.Print(d.Text)
		if d.Done {
			fmt.Printf("\nfinish: %s, output tokens: %d, attempts: %d\n", d.FinishReason, d.Usage.OutputTokens, s.Journal().Len())
		}
	}
	// Output:
	// Bonjour !
	// finish: stop, output tokens: 3, attempts: 2
}

// Anthropic has no embeddings API: Embed fails at once, with a bad request error.
func ExampleProvider_Embed() {
	p, _ := anthropic.New(anthropic.Config{APIKey: "sk-ant-example"})
	_, err := p.Embed(context.Background(), &providers.EmbedRequest{Inputs: []string{"x"}})
	fmt.Println(providers.KindOf(err))
	// Output: bad_request
}

// A server tool given in the API's own shape, by its versioned type: the answer's search
// blocks are kept verbatim and go back with the next turn, which the fake refuses unless they
// come back as they were.
func ExampleProvider_Chat_serverTool() {
	s := mocks.NewServer()
	defer s.Close()
	p, err := anthropic.New(anthropic.Config{BaseURL: s.AnthropicBaseURL(), APIKey: "sk-ant-example", Model: "claude-sonnet-4-5"})
	if err != nil {
		panic(err)
	}
	req := &providers.ChatRequest{
		Tools: []providers.Tool{{System: providers.SystemAnthropic,
			Raw: json.RawMessage(`{"type":"web_search_20250305","name":"web_search","max_uses":5}`)}},
		Messages: []providers.Message{{Role: providers.RoleUser, Content: "What is new?"}},
	}
	resp, err := p.Chat(context.Background(), req)
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Message.Content)
	for _, b := range resp.Message.ProviderBlocks {
		fmt.Println(b.Type, "after byte", b.At)
	}
	// The whole answer goes back with the next question.
	req.Messages = append(req.Messages, resp.Message, providers.Message{Role: providers.RoleUser, Content: "And before?"})
	_, err = p.Chat(context.Background(), req)
	fmt.Println("next turn:", err)
	// Output:
	// Let me search for that.What is new?
	// server_tool_use after byte 23
	// web_search_tool_result after byte 23
	// next turn: <nil>
}

// The exact prompt of a request, as the API counts it (POST /v1/messages/count_tokens).
func ExampleProvider_CountTokens() {
	s := mocks.NewServer()
	defer s.Close()
	p, err := anthropic.New(anthropic.Config{BaseURL: s.AnthropicBaseURL(), APIKey: "sk-ant-example", Model: "claude-sonnet-4-5"})
	if err != nil {
		panic(err)
	}
	n, err := p.CountTokens(context.Background(), &providers.ChatRequest{Messages: []providers.Message{
		{Role: providers.RoleSystem, Content: "Be brief."},
		{Role: providers.RoleUser, Content: "How long is this prompt?"},
	}})
	fmt.Println(n, err)
	// Output: 9 <nil>
}
