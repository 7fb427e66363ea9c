package observe_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/observe"
	"github.com/steadyllm/steady/providers"
)

func TestClient_StreamEndsItsSpanWhenTheStreamEnds(t *testing.T) {
	h := newHarness(t)
	s := mocks.NewServer(mocks.WithAPIKey(sentinelKey), mocks.WithReply("one two three"),
		mocks.WithScript(mocks.Status(502), mocks.OK()))
	defer s.Close()
	c := newClient(t, openAIProvider("openai", s, fastPolicy()), client.WithTelemetry(h.tel))
	st, err := c.ChatStream(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(h.spans.Ended()); n != 0 {
		t.Fatalf("%d spans ended before the stream did", n)
	}
	var usage providers.Usage
	for d, err := range st.Deltas() {
		if err != nil {
			t.Fatal(err)
		}
		if d.Done {
			usage = d.Usage
		}
	}
	_ = st.Close()

	span := h.span(t, "chat gpt-4o-mini")
	a := span.Attributes()
	if attr(t, a, "steady.stream").AsBool() != true || attr(t, a, "steady.outcome").AsString() != "success" ||
		attr(t, a, "steady.attempts").AsInt64() != 2 || attr(t, a, "gen_ai.usage.output_tokens").AsInt64() != int64(usage.OutputTokens) {
		t.Errorf("span attributes %v", a)
	}
	if ttfc := attr(t, a, "gen_ai.response.time_to_first_chunk").AsFloat64(); ttfc <= 0 {
		t.Errorf("time to first chunk %v", ttfc)
	}
	if n := len(events(span, observe.SpanEventRetry)); n != 1 {
		t.Errorf("%d retry events", n)
	}
	base := genAI("chat", "openai", "openai", "openai", "gpt-4o-mini", "gpt-4o-mini") // the model the fake's chunks name
	if p := h.value(t, observe.MetricTimeToFirstChunk, base...); p.count != 1 {
		t.Errorf("time to first chunk %+v", p)
	}
	if p := h.value(t, observe.MetricTokenUsage, with(base, semconv.GenAITokenTypeOutput)...); int(p.sum) != usage.OutputTokens || usage.OutputTokens == 0 {
		t.Errorf("output tokens %+v, want %d", p, usage.OutputTokens)
	}
	h.value(t, observe.MetricCallDuration, observe.KeyProvider.String("openai"), observe.KeyOutcome.String("success"))
}

func TestClient_StreamClosedEarlyIsNoError(t *testing.T) {
	h := newHarness(t)
	s := mocks.NewServer(mocks.WithAPIKey(sentinelKey), mocks.WithReply("a long answer in many words"))
	defer s.Close()
	c := newClient(t, openAIProvider("openai", s, fastPolicy()), client.WithTelemetry(h.tel))
	st, err := c.ChatStream(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
	_ = st.Close()
	span := h.span(t, "chat gpt-4o-mini")
	if span.Status().Code != codes.Unset || attr(t, span.Attributes(), "steady.outcome").AsString() != "closed" {
		t.Errorf("status %v, attributes %v", span.Status(), span.Attributes())
	}
	h.value(t, observe.MetricCallDuration, observe.KeyProvider.String("openai"), observe.KeyOutcome.String("closed"))
}

func TestClient_StreamFailureAfterContentEndsTheSpan(t *testing.T) {
	h := newHarness(t)
	s := mocks.NewServer(mocks.WithAPIKey(sentinelKey), mocks.WithReply("a long answer in many words"),
		mocks.WithScript(mocks.TruncateStream(2)))
	defer s.Close()
	c := newClient(t, openAIProvider("openai", s, fastPolicy()), client.WithTelemetry(h.tel))
	st, err := c.ChatStream(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var streamErr error
	for _, err := range st.Deltas() {
		streamErr = err
	}
	if providers.KindOf(streamErr) != providers.KindStreamTruncated {
		t.Fatalf("stream error %v", streamErr)
	}
	span := h.span(t, "chat gpt-4o-mini")
	if span.Status().Code != codes.Error || attr(t, span.Attributes(), "error.type").AsString() != "stream_truncated" {
		t.Errorf("status %v, attributes %v", span.Status(), span.Attributes())
	}
}
