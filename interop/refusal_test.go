package interop

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"

	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	steadyopenai "github.com/steadyllm/steady/providers/openai"
)

// A refusal read by the official SDKs and by steady's providers from one fake stream: where
// the SDK finds the refusal (Anthropic's stop_details on message_delta, OpenAI's
// delta.refusal), steady reports the same as a KindRefused error.

// steadyStreamError reads a steady stream to its end and returns its error and text.
func steadyStreamError(t *testing.T, p providers.Provider, req *providers.ChatRequest) (*providers.Error, string) {
	t.Helper()
	st, err := p.ChatStream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var text string
	for {
		d, err := st.Recv()
		if errors.Is(err, io.EOF) {
			t.Fatal("steady's stream ended as an answer")
		}
		var e *providers.Error
		if errors.As(err, &e) {
			return e, text
		}
		if err != nil {
			t.Fatal(err)
		}
		text += d.Text
	}
}

func TestAnthropic_RefusalReadsAsTheSDKReadsIt(t *testing.T) {
	step := mocks.RefuseAfter(2, "This request was declined.").WithRefusalCategory("cyber").WithText("one two three")
	s := newServer(t, mocks.WithScript(step, step))

	stream := newAnthropic(s, 0).Messages.NewStreaming(context.Background(), messageParams())
	var category, explanation, text string
	var stop anthropic.StopReason
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "message_delta":
			d := ev.AsMessageDelta().Delta
			stop, category, explanation = d.StopReason, string(d.StopDetails.Category), d.StopDetails.Explanation
		case "content_block_delta":
			text += ev.AsContentBlockDelta().Delta.Text
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	_ = stream.Close()
	if stop != anthropic.StopReasonRefusal || category != "cyber" || explanation != "This request was declined." {
		t.Fatalf("the SDK read stop %q, category %q, explanation %q", stop, category, explanation)
	}

	e, got := steadyStreamError(t, newSteadyAnthropic(t, s), &providers.ChatRequest{Model: "claude-haiku-4-5",
		Messages: []providers.Message{{Role: providers.RoleUser, Content: "Hello there, Claude"}}})
	if e.Kind != providers.KindRefused || e.Code != category || e.Message != explanation || e.Partial != text || got != text {
		t.Fatalf("steady read %#v after %q; the SDK read %q", e, got, text)
	}
}

func TestOpenAI_RefusalReadsAsTheSDKReadsIt(t *testing.T) {
	step := mocks.RefuseAfter(2, "I can't help with that.").WithText("one two three")
	s := newServer(t, mocks.WithScript(step, step))

	stream := newOpenAI(s, 0).Chat.Completions.NewStreaming(context.Background(), chatParams())
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	_ = stream.Close()
	msg := acc.Choices[0].Message
	if msg.Refusal != "I can't help with that." {
		t.Fatalf("the SDK read refusal %q, content %q", msg.Refusal, msg.Content)
	}

	p, err := steadyopenai.New(steadyopenai.Config{BaseURL: s.OpenAIBaseURL(), APIKey: "sk-test", Model: "gpt-4o-mini",
		HTTPClient: s.Client()})
	if err != nil {
		t.Fatal(err)
	}
	e, got := steadyStreamError(t, p, &providers.ChatRequest{
		Messages: []providers.Message{{Role: providers.RoleUser, Content: "Hello there, fake"}}})
	if e.Kind != providers.KindRefused || e.Message != msg.Refusal || e.Partial != msg.Content || got != msg.Content {
		t.Fatalf("steady read %#v after %q; the SDK read content %q", e, got, msg.Content)
	}
}
