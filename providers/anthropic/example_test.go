package anthropic_test

import (
	"context"
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
