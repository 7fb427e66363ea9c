package interop

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/steadyllm/steady/mocks"
)

// newAnthropic returns an official client for s with the SDK's default retry logic (up to
// maxRetries retries).
func newAnthropic(s *mocks.Server, maxRetries int, opts ...option.RequestOption) *anthropic.Client {
	c := anthropic.NewClient(append([]option.RequestOption{
		option.WithBaseURL(s.AnthropicBaseURL()),
		option.WithAPIKey("sk-ant-test"),
		option.WithHTTPClient(s.Client()),
		option.WithMaxRetries(maxRetries),
	}, opts...)...)
	return &c
}

func messageParams() anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     "claude-haiku-4-5",
		MaxTokens: 256,
		System:    []anthropic.TextBlockParam{{Text: "Be brief."}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello there, Claude"))},
	}
}

func TestAnthropic_MessageParsesContentAndUsage(t *testing.T) {
	s := newServer(t)
	msg, err := newAnthropic(s, 0).Messages.New(context.Background(), messageParams())
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != "Hello there, Claude" {
		t.Errorf("content = %+v", msg.Content)
	}
	wantIn := int64(mocks.Tokens("Be brief.") + mocks.Tokens("Hello there, Claude"))
	if msg.StopReason != anthropic.StopReasonEndTurn || msg.Usage.InputTokens != wantIn || msg.Usage.OutputTokens != int64(mocks.Tokens("Hello there, Claude")) {
		t.Errorf("stop %q usage %+v", msg.StopReason, msg.Usage)
	}
}

func TestAnthropic_BearerTokenIsAccepted(t *testing.T) {
	s := newServer(t)
	c := anthropic.NewClient(option.WithBaseURL(s.AnthropicBaseURL()), option.WithAuthToken("oauth-token"),
		option.WithHTTPClient(s.Client()), option.WithMaxRetries(0))
	if _, err := c.Messages.New(context.Background(), messageParams()); err != nil {
		t.Fatal(err)
	}
}

func TestAnthropic_StreamAccumulatesContentAndUsage(t *testing.T) {
	s := newServer(t, mocks.WithReply("Streaming through the fake works"))
	stream := newAnthropic(s, 0).Messages.NewStreaming(context.Background(), messageParams())
	defer stream.Close()
	var msg anthropic.Message
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != "Streaming through the fake works" {
		t.Errorf("content = %+v", msg.Content)
	}
	if msg.StopReason != anthropic.StopReasonEndTurn || msg.Usage.OutputTokens != int64(mocks.Tokens("Streaming through the fake works")) || msg.Usage.InputTokens == 0 {
		t.Errorf("stop %q usage %+v", msg.StopReason, msg.Usage)
	}
}

func TestAnthropic_ToolUseStreamsIntoInput(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.CallTool("get_weather", `{"city":"Paris","unit":"celsius"}`)))
	stream := newAnthropic(s, 0).Messages.NewStreaming(context.Background(), messageParams())
	defer stream.Close()
	var msg anthropic.Message
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != anthropic.StopReasonToolUse || msg.Content[0].Name != "get_weather" || string(msg.Content[0].Input) != `{"city":"Paris","unit":"celsius"}` {
		t.Errorf("stop %q content %+v", msg.StopReason, msg.Content)
	}
}

func TestAnthropic_StatusesComeBackAsTypedErrors(t *testing.T) {
	cases := []struct {
		step    mocks.Step
		status  int
		errType string
	}{
		{mocks.Status(400), 400, "invalid_request_error"},
		{mocks.Status(401), 401, "authentication_error"},
		{mocks.RateLimited(hint), 429, "rate_limit_error"},
		{mocks.Status(500), 500, "api_error"},
		{mocks.Overloaded(), 529, "overloaded_error"},
	}
	s := newServer(t)
	c := newAnthropic(s, 0)
	for _, tc := range cases {
		s.Script(tc.step)
		_, err := c.Messages.New(context.Background(), messageParams())
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) {
			t.Errorf("%s: err = %T %v, want *anthropic.Error", tc.step, err, err)
			continue
		}
		if apiErr.StatusCode != tc.status || string(apiErr.Type()) != tc.errType || apiErr.RequestID == "" {
			t.Errorf("%s: status %d type %q request id %q", tc.step, apiErr.StatusCode, apiErr.Type(), apiErr.RequestID)
		}
	}
}

func TestAnthropic_MissingKeyIs401(t *testing.T) {
	s := newServer(t)
	// The SDK refuses to send a request without credentials, so the key goes at the last moment.
	dropKey := option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		r.Header.Del("X-Api-Key")
		return next(r)
	})
	_, err := newAnthropic(s, 0, dropKey).Messages.New(context.Background(), messageParams())
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || apiErr.Type() != "authentication_error" {
		t.Errorf("err = %v", err)
	}
}

func TestAnthropic_RetryHonoursRetryAfterMs(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.Overloaded().WithRetryAfter(hint), mocks.RateLimited(hint), mocks.Reply("finally")))
	msg, err := newAnthropic(s, 2).Messages.New(context.Background(), messageParams())
	if err != nil {
		t.Fatal(err)
	}
	if msg.Content[0].Text != "finally" {
		t.Errorf("content = %q", msg.Content[0].Text)
	}
	checkAttempts(t, s, 3, minGap)
}

func TestAnthropic_ShouldRetryFalseStopsRetries(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.Overloaded().WithShouldRetry(false).WithRetryAfter(hint)))
	_, err := newAnthropic(s, 2).Messages.New(context.Background(), messageParams())
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 529 {
		t.Fatalf("err = %v", err)
	}
	checkAttempts(t, s, 1, 0)
}

func TestAnthropic_ShouldRetryTrueRetriesA400(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.Status(400).WithShouldRetry(true).WithRetryAfter(hint)))
	if _, err := newAnthropic(s, 2).Messages.New(context.Background(), messageParams()); err != nil {
		t.Fatal(err)
	}
	checkAttempts(t, s, 2, minGap)
}

func TestAnthropic_RetriesAreExhaustedIntoTheLastError(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.Overloaded().WithRetryAfter(hint).Always()))
	_, err := newAnthropic(s, 2).Messages.New(context.Background(), messageParams())
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.Type() != "overloaded_error" {
		t.Fatalf("err = %v", err)
	}
	checkAttempts(t, s, 3, minGap)
}

func TestAnthropic_RetriesAConnectionReset(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.ResetConnection()))
	if _, err := newAnthropic(s, 1).Messages.New(context.Background(), messageParams()); err != nil {
		t.Fatal(err)
	}
	checkAttempts(t, s, 2, 0)
}

// The SDK retries a 429 whatever its body says, so a spend-limit error costs the retries.
func TestAnthropic_RetriesEvenASpendLimitError(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.QuotaExceeded().WithRetryAfter(hint).Always()))
	_, err := newAnthropic(s, 1).Messages.New(context.Background(), messageParams())
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 {
		t.Fatalf("err = %v", err)
	}
	checkAttempts(t, s, 2, minGap)
}

// Unlike openai-go, anthropic-sdk-go retries an attempt whose per-attempt timeout expired.
func TestAnthropic_StallHitsTheRequestTimeoutAndIsRetried(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.Stall(), mocks.Reply("after the stall")))
	msg, err := newAnthropic(s, 1).Messages.New(context.Background(), messageParams(), option.WithRequestTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if msg.Content[0].Text != "after the stall" {
		t.Errorf("content = %q", msg.Content[0].Text)
	}
	checkAttempts(t, s, 2, 100*time.Millisecond*9/10)
}

func TestAnthropic_OverloadInsideA200StreamIsATypedError(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.StreamError(4, "overloaded_error")))
	stream := newAnthropic(s, 2).Messages.NewStreaming(context.Background(), messageParams())
	defer stream.Close()
	n := 0
	for stream.Next() {
		n++
	}
	var apiErr *anthropic.Error
	if !errors.As(stream.Err(), &apiErr) || apiErr.Type() != "overloaded_error" {
		t.Errorf("after %d events err = %T %v", n, stream.Err(), stream.Err())
	}
	checkAttempts(t, s, 1, 0) // no retry once the 200 arrived
}

// The SDK does not notice a stream that ends without message_stop.
func TestAnthropic_TruncatedStreamLooksLikeSuccess(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.TruncateStream(4)), mocks.WithReply("one two three"))
	stream := newAnthropic(s, 0).Messages.NewStreaming(context.Background(), messageParams())
	defer stream.Close()
	var msg anthropic.Message
	for stream.Next() {
		_ = msg.Accumulate(stream.Current())
	}
	if stream.Err() != nil || msg.Content[0].Text != "one" || msg.StopReason != "" {
		t.Errorf("err %v content %+v stop %q", stream.Err(), msg.Content, msg.StopReason)
	}
}

func TestAnthropic_CutStreamIsAnError(t *testing.T) {
	s := newServer(t, mocks.WithScript(mocks.CutStream(4)))
	stream := newAnthropic(s, 0).Messages.NewStreaming(context.Background(), messageParams())
	defer stream.Close()
	for stream.Next() {
	}
	if stream.Err() == nil {
		t.Error("a dropped connection mid-stream went unnoticed")
	}
}
