package interop

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/steadyllm/steady/mocks"
)

// newOpenAI returns an official client for s with the SDK's default retry logic (up to
// maxRetries retries).
func newOpenAI(s *mocks.Server, maxRetries int) *openai.Client {
	c := openai.NewClient(
		option.WithBaseURL(s.OpenAIBaseURL()),
		option.WithAPIKey("sk-test"),
		option.WithHTTPClient(s.Client()),
		option.WithMaxRetries(maxRetries),
	)
	return &c
}

func chatParams() openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("Hello there, fake")},
	}
}

func TestOpenAI_ChatParsesContentAndUsage(t *testing.T) {
	s := newServer(t)
	resp, err := newOpenAI(s, 0).Chat.Completions.New(context.Background(), chatParams())
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Message.Content; got != "Hello there, fake" {
		t.Errorf("content = %q", got)
	}
	if resp.Choices[0].FinishReason != "stop" || resp.Model != "gpt-4o-mini" {
		t.Errorf("finish %q model %q", resp.Choices[0].FinishReason, resp.Model)
	}
	wantPrompt := int64(mocks.Tokens("Be brief.") + mocks.Tokens("Hello there, fake"))
	if resp.Usage.PromptTokens != wantPrompt || resp.Usage.CompletionTokens != int64(mocks.Tokens("Hello there, fake")) ||
		resp.Usage.TotalTokens != resp.Usage.PromptTokens+resp.Usage.CompletionTokens {
		t.Errorf("usage = %+v", resp.Usage)
	}
}

func TestOpenAI_StreamAccumulatesContentAndUsage(t *testing.T) {
	s := newServer(t, mocks.WithReply("Streaming through the fake works"))
	params := chatParams()
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := newOpenAI(s, 0).Chat.Completions.NewStreaming(context.Background(), params)
	defer stream.Close()
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if got := acc.Choices[0].Message.Content; got != "Streaming through the fake works" {
		t.Errorf("content = %q", got)
	}
	if acc.Choices[0].FinishReason != "stop" || acc.Usage.CompletionTokens != int64(mocks.Tokens("Streaming through the fake works")) {
		t.Errorf("finish %q usage %+v", acc.Choices[0].FinishReason, acc.Usage)
	}
}

func TestOpenAI_ToolCallAndEmbeddingsAndModels(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.CallTool("get_weather", `{"city":"Paris"}`)))
	c := newOpenAI(s, 0)
	resp, err := c.Chat.Completions.New(context.Background(), chatParams())
	if err != nil {
		t.Fatal(err)
	}
	if tc := resp.Choices[0].Message.ToolCalls; len(tc) != 1 || tc[0].Function.Name != "get_weather" || tc[0].Function.Arguments != `{"city":"Paris"}` {
		t.Errorf("tool calls = %+v", tc)
	}
	emb, err := c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{
		Model: "text-embedding-3-small", Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"a", "b"}}, Dimensions: openai.Int(6)})
	if err != nil {
		t.Fatal(err)
	}
	if len(emb.Data) != 2 || len(emb.Data[1].Embedding) != 6 || emb.Usage.PromptTokens != 2 {
		t.Errorf("embeddings = %d items, usage %+v", len(emb.Data), emb.Usage)
	}
	models, err := c.Models.List(context.Background())
	if err != nil || len(models.Data) == 0 || models.Data[0].ID != "gpt-4o-mini" {
		t.Errorf("models = %+v, %v", models, err)
	}
}

func TestOpenAI_StatusesComeBackAsTypedErrors(t *testing.T) {
	cases := []struct {
		step          mocks.Step
		status        int
		errType, code string
	}{
		{mocks.Status(400), 400, "invalid_request_error", ""},
		{mocks.Status(401), 401, "invalid_request_error", "invalid_api_key"},
		{mocks.RateLimited(hint), 429, "requests", "rate_limit_exceeded"},
		{mocks.QuotaExceeded(), 429, "insufficient_quota", "insufficient_quota"},
		{mocks.Status(500), 500, "server_error", ""},
		{mocks.Overloaded(), 529, "server_error", ""},
	}
	s := newServer(t)
	c := newOpenAI(s, 0)
	for _, tc := range cases {
		s.Script(tc.step)
		_, err := c.Chat.Completions.New(context.Background(), chatParams())
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) {
			t.Errorf("%s: err = %T %v, want *openai.Error", tc.step, err, err)
			continue
		}
		if apiErr.StatusCode != tc.status || apiErr.Type != tc.errType || apiErr.Code != tc.code || apiErr.Message == "" {
			t.Errorf("%s: status %d type %q code %q message %q", tc.step, apiErr.StatusCode, apiErr.Type, apiErr.Code, apiErr.Message)
		}
		if apiErr.Response.Header.Get("X-Request-Id") == "" {
			t.Errorf("%s: no x-request-id", tc.step)
		}
	}
}

func TestOpenAI_MissingKeyIs401(t *testing.T) {
	s := newServer(t)
	c := openai.NewClient(option.WithBaseURL(s.OpenAIBaseURL()), option.WithHTTPClient(s.Client()),
		option.WithMaxRetries(0), option.WithHeaderDel("Authorization"))
	_, err := c.Chat.Completions.New(context.Background(), chatParams())
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
		t.Errorf("err = %v", err)
	}
}

func TestOpenAI_RetryHonoursRetryAfterMs(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.RateLimited(hint), mocks.Status(503).WithRetryAfter(hint), mocks.Reply("finally")))
	resp, err := newOpenAI(s, 2).Chat.Completions.New(context.Background(), chatParams())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Message.Content != "finally" {
		t.Errorf("content = %q", resp.Choices[0].Message.Content)
	}
	checkAttempts(t, s, 3, minGap)
}

func TestOpenAI_ShouldRetryFalseStopsRetries(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.Status(503).WithShouldRetry(false).WithRetryAfter(hint)))
	_, err := newOpenAI(s, 2).Chat.Completions.New(context.Background(), chatParams())
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 {
		t.Fatalf("err = %v", err)
	}
	checkAttempts(t, s, 1, 0)
}

func TestOpenAI_ShouldRetryTrueRetriesA400(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.Status(400).WithShouldRetry(true).WithRetryAfter(hint)))
	if _, err := newOpenAI(s, 2).Chat.Completions.New(context.Background(), chatParams()); err != nil {
		t.Fatal(err)
	}
	checkAttempts(t, s, 2, minGap)
}

func TestOpenAI_RetriesAreExhaustedIntoTheLastError(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.Overloaded().WithRetryAfter(hint).Always()))
	_, err := newOpenAI(s, 2).Chat.Completions.New(context.Background(), chatParams())
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 529 {
		t.Fatalf("err = %v", err)
	}
	checkAttempts(t, s, 3, minGap)
}

func TestOpenAI_RetriesAConnectionReset(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.ResetConnection()))
	if _, err := newOpenAI(s, 1).Chat.Completions.New(context.Background(), chatParams()); err != nil {
		t.Fatal(err)
	}
	checkAttempts(t, s, 2, 0)
}

// The SDK retries a 429 whatever its body says, so a permanent quota error costs the retries.
func TestOpenAI_RetriesEvenAQuotaError(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.QuotaExceeded().WithRetryAfter(hint).Always()))
	_, err := newOpenAI(s, 1).Chat.Completions.New(context.Background(), chatParams())
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.Code != "insufficient_quota" {
		t.Fatalf("err = %v", err)
	}
	checkAttempts(t, s, 2, minGap)
}

// An expired per-attempt timeout ends the call: openai-go does not retry it.
func TestOpenAI_StallHitsTheRequestTimeoutWithoutRetry(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.Stall().Always()))
	_, err := newOpenAI(s, 2).Chat.Completions.New(context.Background(), chatParams(), option.WithRequestTimeout(100*time.Millisecond))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	checkAttempts(t, s, 1, 0)
}

func TestOpenAI_ErrorInsideA200StreamIsAStreamError(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.StreamError(2, "server_error")))
	stream := newOpenAI(s, 2).Chat.Completions.NewStreaming(context.Background(), chatParams())
	defer stream.Close()
	n := 0
	for stream.Next() {
		n++
	}
	var se *ssestream.StreamError
	if !errors.As(stream.Err(), &se) || n != 2 {
		t.Errorf("after %d chunks err = %T %v", n, stream.Err(), stream.Err())
	}
	checkAttempts(t, s, 1, 0) // no retry once the 200 arrived
}

// The SDK does not notice a stream that ends without [DONE] or a finish reason.
func TestOpenAI_TruncatedStreamLooksLikeSuccess(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.TruncateStream(2)), mocks.WithReply("one two three"))
	stream := newOpenAI(s, 0).Chat.Completions.NewStreaming(context.Background(), chatParams())
	defer stream.Close()
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if stream.Err() != nil || acc.Choices[0].Message.Content != "one" || acc.Choices[0].FinishReason != "" {
		t.Errorf("err %v content %q finish %q", stream.Err(), acc.Choices[0].Message.Content, acc.Choices[0].FinishReason)
	}
}

func TestOpenAI_CutStreamIsAnError(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.CutStream(2)))
	stream := newOpenAI(s, 0).Chat.Completions.NewStreaming(context.Background(), chatParams())
	defer stream.Close()
	for stream.Next() {
	}
	if stream.Err() == nil {
		t.Error("a dropped connection mid-stream went unnoticed")
	}
}

func TestOpenAI_MalformedBodyIsAnError(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.Malformed()))
	if _, err := newOpenAI(s, 0).Chat.Completions.New(context.Background(), chatParams()); err == nil {
		t.Error("malformed JSON parsed")
	}
}
