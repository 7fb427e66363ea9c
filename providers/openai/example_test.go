package openai_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
)

// A provider for an OpenAI-compatible server (here the fake one from mocks), used for a plain
// chat, a stream, and a call that fails with a typed error.
func ExampleNew() {
	s := mocks.NewServer(mocks.WithScript(
		mocks.Reply("Hello!"),
		mocks.Reply("Streamed hello."),
		mocks.RateLimited(1500*time.Millisecond),
	))
	defer s.Close()

	p, err := openai.New(openai.Config{
		Name:       "local",
		Dialect:    openai.Compatible,
		BaseURL:    s.OpenAIBaseURL(),
		APIKey:     "sk-example",
		Model:      "gpt-4o-mini",
		HTTPClient: s.Client(), // in steady, the client passes its resilient *http.Client here
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	req := &providers.ChatRequest{Messages: []providers.Message{{Role: providers.RoleUser, Content: "Hi"}}}

	resp, err := p.Chat(context.Background(), req)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Message.Content, resp.FinishReason, resp.Usage.Total())

	st, err := p.ChatStream(context.Background(), req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	for {
		d, err := st.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Print(d.Text)
		if d.Done {
			fmt.Println(" |", d.FinishReason, d.Usage.OutputTokens)
		}
	}

	_, err = p.Chat(context.Background(), req)
	var e *providers.Error
	if errors.As(err, &e) {
		fmt.Println(e.Kind, e.StatusCode, e.RetryAfter)
	}
	// Output:
	// Hello! stop 3
	// Streamed hello. | stop 4
	// rate_limited 429 1.5s
}
