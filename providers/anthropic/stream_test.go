package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
)

const streamed = "Streaming through the fake works"

func TestChatStream_DeliversTextThenDoneWithUsageInOrder(t *testing.T) {
	f := newFixture(t, mocks.WithReply(streamed))
	st, err := f.p.ChatStream(context.Background(), userRequest("Hello there"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := collect(t, st)
	if err != nil {
		t.Fatal(err)
	}
	if rl := got[0].RateLimit; rl == nil || rl.Requests.Limit == 0 {
		t.Fatalf("the first delta carries no rate-limit snapshot: %+v", got[0])
	}
	got[0].RateLimit = nil
	want := []providers.Delta{
		{Text: "Streaming"}, {Text: " through"}, {Text: " the"}, {Text: " fake"}, {Text: " works"},
		{Done: true, FinishReason: providers.FinishStop, Model: model, // as the fake's message_start names it
			Usage: providers.Usage{InputTokens: mocks.Tokens("Hello there"), OutputTokens: mocks.Tokens(streamed)}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("deltas =\n%+v\nwant\n%+v", got, want)
	}
	last, _ := f.s.Journal().Last()
	var body struct{ Stream bool }
	if err := json.Unmarshal(last.Body, &body); err != nil || !body.Stream {
		t.Errorf("body %s does not ask for a stream", last.Body)
	}
	if got := f.rec.requests()[0].Header.Get("Accept"); got != "text/event-stream" {
		t.Errorf("Accept = %q", got)
	}
}

func TestChatStream_RecvAfterDoneIsEOF(t *testing.T) {
	f := newFixture(t)
	st, err := f.p.ChatStream(context.Background(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for {
		d, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if d.Done {
			break
		}
	}
	for i := 0; i < 2; i++ {
		if _, err := st.Recv(); err != io.EOF {
			t.Errorf("Recv after Done = %v, want io.EOF", err)
		}
	}
}

func TestChatStream_AssemblesToolUseFromInputJSONDeltas(t *testing.T) {
	f := newFixture(t)
	const args = `{"city":"Paris","unit":"celsius","days":3}`
	f.s.Script(mocks.CallTool("get_weather", args))
	st, err := f.p.ChatStream(context.Background(), toolConversation())
	if err != nil {
		t.Fatal(err)
	}
	deltas, err := collect(t, st)
	if err != nil {
		t.Fatal(err)
	}
	var id, name string
	var assembled strings.Builder
	fragments := 0
	for _, d := range deltas {
		if d.Text != "" {
			t.Errorf("unexpected text %q", d.Text)
		}
		for _, tc := range d.ToolCalls {
			if tc.Index != 0 {
				t.Errorf("tool call index %d", tc.Index)
			}
			if tc.ID != "" {
				id, name = tc.ID, tc.Name
			}
			if tc.Arguments != "" {
				fragments++
				assembled.WriteString(tc.Arguments)
			}
		}
	}
	if !strings.HasPrefix(id, "toolu_") || name != "get_weather" || assembled.String() != args || fragments < 2 {
		t.Errorf("tool call %q %q with %d fragments %q", id, name, fragments, assembled.String())
	}
	end := deltas[len(deltas)-1]
	if !end.Done || end.FinishReason != providers.FinishToolCalls || end.Usage.OutputTokens == 0 {
		t.Errorf("last delta %+v", end)
	}
	if first := deltas[0].ToolCalls; len(first) != 1 || first[0].ID == "" || first[0].Arguments != "" {
		t.Errorf("first delta %+v should announce the call", deltas[0])
	}
}

func TestChatStream_CleanEndWithoutMessageStopIsTruncated(t *testing.T) {
	f := newFixture(t, mocks.WithReply(streamed))
	f.s.Script(mocks.TruncateStream(5)) // message_start, block start, ping, two text deltas
	st, err := f.p.ChatStream(context.Background(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	deltas, err := collect(t, st)
	e := asError(t, err)
	if e.Kind != providers.KindStreamTruncated || e.Partial != "Streaming through" || len(deltas) != 2 ||
		e.StatusCode != 200 || e.RequestID == "" || !e.Temporary() {
		t.Errorf("error %v: kind %q partial %q after %d deltas", e, e.Kind, e.Partial, len(deltas))
	}
	if _, again := st.Recv(); again != err {
		t.Errorf("Recv after the failure = %v, want the same error", again)
	}
}

func TestChatStream_OverloadedEventIsOverloaded(t *testing.T) {
	f := newFixture(t, mocks.WithReply(streamed))
	f.s.Script(mocks.StreamError(4, "overloaded_error"))
	st, err := f.p.ChatStream(context.Background(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = collect(t, st)
	e := asError(t, err)
	if e.Kind != providers.KindOverloaded || e.Type != "overloaded_error" || e.StatusCode != 200 ||
		e.Partial != "Streaming" || e.Message == "" || e.RequestID == "" {
		t.Errorf("error %v: %+v", e, *e)
	}
}

func TestChatStream_RateLimitEventIsRateLimited(t *testing.T) {
	f := newFixture(t)
	f.s.Script(mocks.StreamError(1, "rate_limit_error"))
	st, err := f.p.ChatStream(context.Background(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = collect(t, st)
	if e := asError(t, err); e.Kind != providers.KindRateLimited || e.Partial != "" {
		t.Errorf("error %v: kind %q", e, e.Kind)
	}
}

func TestChatStream_BrokenConnectionIsUnavailable(t *testing.T) {
	f := newFixture(t, mocks.WithReply(streamed))
	f.s.Script(mocks.CutStream(4))
	st, err := f.p.ChatStream(context.Background(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = collect(t, st)
	e := asError(t, err)
	if e.Kind != providers.KindUnavailable || e.Err == nil || e.Partial != "Streaming" {
		t.Errorf("error %v: kind %q, cause %v, partial %q", e, e.Kind, e.Err, e.Partial)
	}
}

func TestChatStream_MalformedEventIsUnavailable(t *testing.T) {
	f := newFixture(t)
	f.s.Script(mocks.Malformed())
	st, err := f.p.ChatStream(context.Background(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = collect(t, st)
	if e := asError(t, err); e.Kind != providers.KindUnavailable {
		t.Errorf("error %v: kind %q", e, e.Kind)
	}
}

func TestChatStream_HTTPErrorIsReturnedBeforeAnyStream(t *testing.T) {
	f := newFixture(t)
	f.s.Script(mocks.Overloaded())
	st, err := f.p.ChatStream(context.Background(), userRequest("hi"))
	if st != nil {
		t.Error("a stream was returned with the error")
	}
	if e := asError(t, err); e.Kind != providers.KindOverloaded || e.StatusCode != 529 {
		t.Errorf("error %v", e)
	}
}

func TestChatStream_CloseIsIdempotentAndAbortsRecv(t *testing.T) {
	f := newFixture(t)
	f.s.Script(mocks.SlowStream(time.Hour))
	st, err := f.p.ChatStream(context.Background(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := st.Recv() // message_start arrives, then the wait for the next event blocks
		done <- err
	}()
	time.Sleep(10 * time.Millisecond)
	for i := 0; i < 3; i++ {
		if err := st.Close(); err != nil {
			t.Errorf("Close %d: %v", i+1, err)
		}
	}
	select {
	case err := <-done:
		if e := asError(t, err); e.Kind != providers.KindCanceled {
			t.Errorf("Recv after Close: %v", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not abort Recv")
	}
}

func TestChatStream_LongEventLinesAreRead(t *testing.T) {
	long := strings.Repeat("x", 300<<10) // one 300 KiB delta: past any 64 KiB scanner limit
	f := newFixture(t, mocks.WithReply(long))
	req := userRequest("hi")
	req.MaxTokens = len(long) // the fake cuts replies at max_tokens
	st, err := f.p.ChatStream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	deltas, err := collect(t, st)
	if err != nil {
		t.Fatal(err)
	}
	if len(deltas) != 2 || deltas[0].Text != long {
		t.Errorf("%d deltas, first %d bytes", len(deltas), len(deltas[0].Text))
	}
}

// handWritten is a stream as the real API may send it, in the corners the fake does not use:
// CRLF line ends, comments, an event split over two data lines, cache token counts, a text
// block that starts with text, a thinking block, two tool calls, an unknown event.
const handWritten = ": a comment\r\n" +
	"event: message_start\r\n" +
	`data: {"type":"message_start","message":{"id":"msg_1","model":"m","content":[],"usage":{"input_tokens":10,"cache_creation_input_tokens":5,"cache_read_input_tokens":20,"output_tokens":1}}}` + "\r\n\r\n" +
	"event: content_block_start\n" +
	`data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}` + "\n\n" +
	"event: content_block_delta\n" +
	`data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}` + "\n\n" +
	"event: content_block_start\n" +
	`data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":"Hi"}}` + "\n\n" +
	"event: content_block_delta\n" +
	`data: {"type":"content_block_delta",` + "\n" + `data: "index":1,"delta":{"type":"text_delta","text":" there"}}` + "\n\n" +
	"event: content_block_start\n" +
	`data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"t1","name":"a","input":{}}}` + "\n\n" +
	"event: content_block_delta\n" +
	`data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}` + "\n\n" +
	"event: content_block_delta\n" +
	`data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{}"}}` + "\n\n" +
	"event: content_block_start\n" +
	`data: {"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"t2","name":"b","input":{}}}` + "\n\n" +
	"event: some_future_event\n" +
	`data: {"type":"some_future_event"}` + "\n\n" +
	"event: message_delta\n" +
	`data: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":7}}` + "\n\n" +
	"event: message_stop\n" +
	`data: {"type":"message_stop"}` // the body ends without the final blank line

func TestChatStream_ReadsTheWireFormatsCorners(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Request-Id", "req_hand")
		_, _ = io.WriteString(w, handWritten+"\n")
	}))
	defer srv.Close()
	st, err := newProvider(t, srv.URL, model).ChatStream(context.Background(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := collect(t, st)
	if err != nil {
		t.Fatal(err)
	}
	want := []providers.Delta{
		{Reasoning: "hmm"}, // the thinking block's text, as it came
		{Text: "Hi"}, {Text: " there"},
		{ToolCalls: []providers.ToolCallDelta{{Index: 0, ID: "t1", Name: "a"}}},
		{ToolCalls: []providers.ToolCallDelta{{Index: 0, Arguments: "{}"}}},
		{ToolCalls: []providers.ToolCallDelta{{Index: 1, ID: "t2", Name: "b"}}},
		{Done: true, FinishReason: providers.FinishToolCalls,
			Usage:    providers.Usage{InputTokens: 35, OutputTokens: 7, CachedInputTokens: 20, CacheWriteInputTokens: 5},
			Thinking: []providers.ThinkingBlock{{Text: "hmm"}}, Model: "m"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("deltas =\n%+v\nwant\n%+v", got, want)
	}
}

func TestChatStream_CutMidLineIsNotAnEvent(t *testing.T) {
	// The body ends inside the message_delta line: that event, and its stop_reason, must not
	// count.
	cut := handWritten[:strings.Index(handWritten, `"stop_reason"`)+5]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, cut)
	}))
	defer srv.Close()
	st, err := newProvider(t, srv.URL, model).ChatStream(context.Background(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = collect(t, st)
	var e *providers.Error
	if !errors.As(err, &e) || e.Kind != providers.KindStreamTruncated || e.Partial != "Hi there" {
		t.Errorf("error %v", err)
	}
}
