package mocks_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/steadyllm/steady/mocks"
)

// What a real OpenAI client (go-openai) observes of the mid-stream faults, refusals and
// context windows: the fake is only useful if a client reads these as it would read the API.

func goOpenAI(s *mocks.Server) *openai.Client {
	cfg := openai.DefaultConfig("sk-test")
	cfg.BaseURL, cfg.HTTPClient = s.OpenAIBaseURL(), s.Client()
	return openai.NewClientWithConfig(cfg)
}

func goOpenAIRequest(stream bool) openai.ChatCompletionRequest {
	req := openai.ChatCompletionRequest{Model: "gpt-4o", Stream: stream,
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "one two three four"}}}
	if stream {
		req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	}
	return req
}

// drain reads a go-openai stream to its end and returns the text, the finish reason, the
// refusal, whether usage came, and the error that ended it (io.EOF for a clean end).
func drain(st *openai.ChatCompletionStream) (text, finish, refusal string, usage bool, err error) {
	for {
		var chunk openai.ChatCompletionStreamResponse
		chunk, err = st.Recv()
		if err != nil {
			return
		}
		usage = usage || chunk.Usage != nil
		for _, c := range chunk.Choices {
			text += c.Delta.Content
			refusal += c.Delta.Refusal
			if c.FinishReason != "" {
				finish = string(c.FinishReason)
			}
		}
	}
}

func TestGoOpenAI_SlowFirstTokenOpensTheStreamBeforeAnyToken(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.SlowFirstToken(time.Hour)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := goOpenAI(s).CreateChatCompletionStream(ctx, goOpenAIRequest(true))
	if err != nil {
		t.Fatal(err) // the client has its 200 and headers
	}
	defer st.Close()
	first, err := st.Recv()
	if err != nil || len(first.Choices) != 1 || first.Choices[0].Delta.Role != "assistant" || first.Choices[0].Delta.Content != "" {
		t.Fatalf("first chunk %+v, err %v", first, err)
	}
	got := make(chan error, 1)
	go func() {
		chunk, err := st.Recv()
		if err == nil {
			err = errors.New("a token arrived: " + chunk.Choices[0].Delta.Content)
			t.Error(err)
		}
		got <- err
	}()
	cancel()
	if err := <-got; err == nil {
		t.Error("Recv returned no error after the client left")
	}
	st.Close()
	waitIdle(t, s)
}

func TestGoOpenAI_MalformedEventMidStreamIsAnError(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.MalformedAt(2)))
	st, err := goOpenAI(s).CreateChatCompletionStream(context.Background(), goOpenAIRequest(true))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	text, _, _, _, err := drain(st)
	if err == nil || errors.Is(err, io.EOF) || text != "one" {
		t.Errorf("text %q, err %v: want the first word, then a decoding error", text, err)
	}
}

func TestGoOpenAI_NoDoneEndsInEOFAfterTheFinishReasonAndUsage(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.OmitTerminal()))
	st, err := goOpenAI(s).CreateChatCompletionStream(context.Background(), goOpenAIRequest(true))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	text, finish, _, usage, err := drain(st)
	if !errors.Is(err, io.EOF) || text != "one two three four" || finish != "stop" || !usage {
		t.Errorf("text %q, finish %q, usage %t, err %v", text, finish, usage, err)
	}
}

func TestGoOpenAI_RefusalAndContentFilter(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.Refusal("I can't do that."), mocks.RefuseAfter(2, "No more."),
		mocks.ContentFiltered(3)))
	c := goOpenAI(s)
	res, err := c.CreateChatCompletion(context.Background(), goOpenAIRequest(false))
	if err != nil || res.Choices[0].Message.Refusal != "I can't do that." || res.Choices[0].Message.Content != "" ||
		res.Choices[0].FinishReason != openai.FinishReasonStop {
		t.Errorf("refusal: %+v, err %v", res, err)
	}
	st, err := c.CreateChatCompletionStream(context.Background(), goOpenAIRequest(true))
	if err != nil {
		t.Fatal(err)
	}
	text, finish, refusal, _, err := drain(st)
	st.Close()
	if !errors.Is(err, io.EOF) || text != "one two" || refusal != "No more." || finish != "stop" {
		t.Errorf("refusal mid-stream: text %q, refusal %q, finish %q, err %v", text, refusal, finish, err)
	}
	st, err = c.CreateChatCompletionStream(context.Background(), goOpenAIRequest(true))
	if err != nil {
		t.Fatal(err)
	}
	text, finish, _, _, err = drain(st)
	st.Close()
	if !errors.Is(err, io.EOF) || text != "one two three" || finish != string(openai.FinishReasonContentFilter) {
		t.Errorf("content filter: text %q, finish %q, err %v", text, finish, err)
	}
}

func TestGoOpenAI_ContextWindowIsContextLengthExceeded(t *testing.T) {
	s := newServer(t, mocks.WithContextWindows(map[string]int{"gpt-4o": 10}))
	req := goOpenAIRequest(false)
	req.MaxTokens = 8
	_, err := goOpenAI(s).CreateChatCompletion(context.Background(), req)
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 400 || apiErr.Code != "context_length_exceeded" ||
		apiErr.Param == nil || *apiErr.Param != "messages" || apiErr.Type != "invalid_request_error" ||
		!strings.HasPrefix(apiErr.Message, "This model's maximum context length is 10 tokens. However, you requested 13 tokens (5 in the messages, 8 in the completion).") {
		t.Errorf("err = %#v", err)
	}
}
