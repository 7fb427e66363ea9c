package anthropic_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
)

// How a stream ends, and what it is then: complete, truncated, refused, malformed.

const answer = "one two three" // three content events in the fake's streams

// answerUsage is what the fake bills answer to "Hi", once message_delta came.
var answerUsage = providers.Usage{InputTokens: mocks.Tokens("Hi"), OutputTokens: mocks.Tokens(answer)}

// handStream serves body as an event stream, then ends it cleanly or, with abort, drops the
// connection (the client reads an unexpected EOF).
func handStream(t *testing.T, body string, abort bool) *anthropic.Provider {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, body)
		w.(http.Flusher).Flush()
		if abort {
			panic(http.ErrAbortHandler)
		}
	}))
	t.Cleanup(srv.Close)
	return newProviderVia(t, srv.URL, srv.Client().Transport)
}

// event is one event of a handcrafted stream.
func event(name, data string) string { return "event: " + name + "\ndata: " + data + "\n\n" }

// handHead is a stream's opening and its text "one two", before any stop_reason.
var handHead = event("message_start", `{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"m","content":[],"usage":{"input_tokens":7,"output_tokens":1}}}`) +
	event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) +
	event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"one"}}`) +
	event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" two"}}`)

// streamOf opens a stream of p and reads it to its end.
func streamOf(t *testing.T, p *anthropic.Provider, req *providers.ChatRequest) ([]providers.Delta, error) {
	t.Helper()
	st, err := p.ChatStream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return collect(t, st)
}

// textOf joins the text of deltas.
func textOf(deltas []providers.Delta) string {
	var b strings.Builder
	for _, d := range deltas {
		b.WriteString(d.Text)
	}
	return b.String()
}

// wantDone fails unless deltas end with a Done delta of finish reason stop and usage u.
func wantDone(t *testing.T, deltas []providers.Delta, err error, text string, u providers.Usage) {
	t.Helper()
	if err != nil {
		t.Fatalf("the stream failed: %v", err)
	}
	last := deltas[len(deltas)-1]
	if !last.Done || last.FinishReason != providers.FinishStop || last.Usage != u || textOf(deltas) != text {
		t.Fatalf("text %q, last delta %+v; want Done, stop, usage %+v", textOf(deltas), last, u)
	}
}

func TestChatStream_WithoutMessageStopAfterStopReasonIsComplete(t *testing.T) {
	f := newFixture(t, mocks.WithScript(mocks.OmitTerminal().WithText(answer)))
	deltas, err := streamOf(t, f.p, userRequest("Hi"))
	wantDone(t, deltas, err, answer, answerUsage)
}

func TestChatStream_BrokenAfterStopReasonIsComplete(t *testing.T) {
	// The fake drops the connection after message_delta, its 8th event: message_start,
	// content_block_start, ping, three words, content_block_stop, message_delta.
	f := newFixture(t, mocks.WithScript(mocks.CutStream(8).WithText(answer)))
	deltas, err := streamOf(t, f.p, userRequest("Hi"))
	wantDone(t, deltas, err, answer, answerUsage)

	// By hand, the same.
	body := handHead + event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}`)
	deltas, err = streamOf(t, handStream(t, body, true), userRequest("Hi"))
	wantDone(t, deltas, err, "one two", providers.Usage{InputTokens: 7, OutputTokens: 2})
}

func TestChatStream_EndBeforeStopReasonIsTruncatedWithTheUsageSoFar(t *testing.T) {
	for _, abort := range []bool{false, true} {
		_, err := streamOf(t, handStream(t, handHead, abort), userRequest("Hi"))
		e := asError(t, err)
		wantKind := providers.KindStreamTruncated
		if abort {
			wantKind = providers.KindUnavailable
		}
		// message_start billed the prompt and one output token.
		if e.Kind != wantKind || e.Partial != "one two" || e.Usage == nil ||
			*e.Usage != (providers.Usage{InputTokens: 7, OutputTokens: 1}) {
			t.Errorf("abort %v: %#v", abort, e)
		}
	}
	// Cut by the fake after the second word.
	f := newFixture(t, mocks.WithScript(mocks.CutStream(2).CountingContent().WithText(answer)))
	_, err := streamOf(t, f.p, userRequest("Hi"))
	if e := asError(t, err); e.Kind != providers.KindUnavailable || e.Partial != "one two" || e.Usage == nil ||
		e.Usage.InputTokens != mocks.Tokens("Hi") {
		t.Errorf("%#v", e)
	}
}

func TestChatStream_MalformedEventEndsTheStreamNamingIt(t *testing.T) {
	f := newFixture(t, mocks.WithScript(mocks.MalformedAt(2).WithText(answer)))
	deltas, err := streamOf(t, f.p, userRequest("Hi"))
	e := asError(t, err)
	// message_start, content_block_start, ping, "one", and the malformed " two": event 5.
	if e.Kind != providers.KindUnavailable || !strings.Contains(e.Message, "event 5 is not valid JSON") ||
		e.Partial != "one" || textOf(deltas) != "one" || e.Usage == nil || e.RequestID == "" {
		t.Fatalf("text %q, %#v", textOf(deltas), e)
	}

	// JSON that is no object (null) is no event either, not one to skip.
	body := handHead + event("content_block_delta", "null") +
		event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}`) +
		event("message_stop", `{"type":"message_stop"}`)
	_, err = streamOf(t, handStream(t, body, false), userRequest("Hi"))
	if e := asError(t, err); e.Kind != providers.KindUnavailable || !strings.Contains(e.Message, "event 5 is not valid JSON") {
		t.Fatalf("%#v", e)
	}
}

func TestChat_RefusalIsRefusedWithItsCategoryAndExplanation(t *testing.T) {
	f := newFixture(t, mocks.WithScript(
		mocks.Refusal("This request was declined.").WithRefusalCategory("cyber"),
		mocks.RefuseAfter(2, "Declined part way.").WithText(answer),
	))
	_, err := f.p.Chat(context.Background(), userRequest("Hi"))
	e := asError(t, err)
	if e.Kind != providers.KindRefused || e.Code != "cyber" || e.Message != "This request was declined." ||
		e.Partial != "" || e.StatusCode != 200 || e.RequestID == "" || e.Usage == nil || e.Usage.InputTokens != mocks.Tokens("Hi") {
		t.Fatalf("%#v", e)
	}
	_, err = f.p.Chat(context.Background(), userRequest("Hi"))
	if e := asError(t, err); e.Kind != providers.KindRefused || e.Code != "" || e.Message != "Declined part way." || e.Partial != "one two" {
		t.Fatalf("%#v", e)
	}
}

func TestChatStream_RefusalAfterContentIsRefused(t *testing.T) {
	f := newFixture(t, mocks.WithScript(
		mocks.RefuseAfter(2, "Declined part way.").WithRefusalCategory("bio").WithText(answer),
		mocks.ContentFiltered(1).WithRefusalCategory("general_harms").WithText(answer),
	))
	deltas, err := streamOf(t, f.p, userRequest("Hi"))
	e := asError(t, err)
	if e.Kind != providers.KindRefused || e.Code != "bio" || e.Message != "Declined part way." ||
		e.Partial != "one two" || textOf(deltas) != "one two" || e.Usage == nil || e.StatusCode != 200 {
		t.Fatalf("text %q, %#v", textOf(deltas), e)
	}
	// A refusal with a category and no explanation says so.
	_, err = streamOf(t, f.p, userRequest("Hi"))
	if e := asError(t, err); e.Kind != providers.KindRefused || e.Code != "general_harms" ||
		!strings.Contains(e.Message, "declined") || e.Partial != "one" {
		t.Fatalf("%#v", e)
	}
}

func TestRefusal_WithoutStopDetailsIsStillRefused(t *testing.T) {
	// Servers older than stop_details send the stop reason alone.
	body := handHead + event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"refusal","stop_details":null},"usage":{"output_tokens":2}}`) +
		event("message_stop", `{"type":"message_stop"}`)
	_, err := streamOf(t, handStream(t, body, false), userRequest("Hi"))
	if e := asError(t, err); e.Kind != providers.KindRefused || e.Code != "" || e.Message == "" || e.Partial != "one two" {
		t.Fatalf("%#v", e)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"type":"message","content":[],"stop_reason":"refusal","usage":{"input_tokens":3,"output_tokens":0}}`)
	}))
	defer srv.Close()
	_, err = newProvider(t, srv.URL, model).Chat(context.Background(), userRequest("Hi"))
	if e := asError(t, err); e.Kind != providers.KindRefused || e.Message == "" || e.Usage == nil || e.Usage.InputTokens != 3 {
		t.Fatalf("%#v", e)
	}
}

func TestContextTooLong_BothPhrasingsStateTheWindowAndTheRequest(t *testing.T) {
	f := newFixture(t, mocks.WithContextWindows(map[string]int{model: 60}))
	long := strings.Repeat("word ", 60) // 75 tokens: the prompt alone is too long
	req := userRequest(long)
	req.MaxTokens = 20
	_, err := f.p.Chat(context.Background(), req)
	e := asError(t, err)
	in := mocks.Tokens(long)
	want := providers.ContextOverflow{Window: 60, Requested: in, Input: in}
	if e.Kind != providers.KindContextTooLong || e.Overflow == nil || *e.Overflow != want {
		t.Fatalf("%#v, overflow %+v, want %+v", e, e.Overflow, want)
	}

	mid := strings.Repeat("word ", 40) // 50 tokens: too long with max_tokens only
	req = userRequest(mid)
	req.MaxTokens = 20
	_, err = f.p.ChatStream(context.Background(), req)
	e = asError(t, err)
	in = mocks.Tokens(mid)
	want = providers.ContextOverflow{Window: 60, Requested: in + 20, Input: in, Output: 20}
	if e.Kind != providers.KindContextTooLong || e.Overflow == nil || *e.Overflow != want {
		t.Fatalf("%#v, overflow %+v, want %+v", e, e.Overflow, want)
	}
}

func TestPrefillRejected_IsMarked(t *testing.T) {
	f := newFixture(t, mocks.WithRejectPrefill(model))
	req := userRequest("Hi")
	req.Messages = append(req.Messages, providers.Message{Role: providers.RoleAssistant, Content: "Once upon"})
	_, err := f.p.ChatStream(context.Background(), req)
	e := asError(t, err)
	if e.Kind != providers.KindBadRequest || e.Code != providers.CodePrefillUnsupported ||
		!errors.Is(err, providers.ErrPrefillUnsupported) || e.StatusCode != 400 {
		t.Fatalf("%#v", e)
	}
}

// A server that sends its stop_reason and usage (message_delta) and then holds the stream open
// is not waited for: the answer is whole, and the Done delta comes at once with the usage.
// The caller's cancellation before the stop_reason is still a cancellation.
func TestChatStream_HeldOpenAfterStopReasonIsCompleteAtOnce(t *testing.T) {
	held := func(body string) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, body)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	srv := held(handHead + event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}`))
	st, err := newProviderVia(t, srv.URL, srv.Client().Transport).ChatStream(context.Background(), userRequest("Hi"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var last providers.Delta
	for range 3 { // "one", "two", then the Done delta, without waiting for the server
		if last, err = st.Recv(); err != nil {
			t.Fatal(err)
		}
	}
	if !last.Done || last.FinishReason != providers.FinishStop || last.Usage.OutputTokens != 2 {
		t.Fatalf("last delta %+v", last)
	}
	if _, err := st.Recv(); err != io.EOF {
		t.Fatalf("after Done: %v", err)
	}

	srv = held(handHead) // the words, then nothing
	ctx, cancel := context.WithCancel(context.Background())
	st, err = newProviderVia(t, srv.URL, srv.Client().Transport).ChatStream(ctx, userRequest("Hi"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for range 2 {
		if _, err := st.Recv(); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	_, err = st.Recv()
	if e := asError(t, err); e.Kind != providers.KindCanceled || e.Partial != "one two" {
		t.Fatalf("%#v", e)
	}
}
