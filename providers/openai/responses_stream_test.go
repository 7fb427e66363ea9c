package openai_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/steadyllm/steady/mocks"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/openai"
)

// joined is the text, reasoning and tool-call arguments a stream delivered, and its last delta.
func joined(ds []providers.Delta) (text, reasoning, args string, last providers.Delta) {
	var t, r, a strings.Builder
	for _, d := range ds {
		t.WriteString(d.Text)
		r.WriteString(d.Reasoning)
		for _, tc := range d.ToolCalls {
			a.WriteString(tc.Arguments)
		}
		last = d
	}
	return t.String(), r.String(), a.String(), last
}

func TestResponsesStream_DeliversTextThenDoneWithUsageAtCompleted(t *testing.T) {
	s := newServer(t, mocks.Reply("one two three"))
	p := responsesProvider(t, s)
	st, err := p.ChatStream(context.Background(), ask("count"))
	if err != nil {
		t.Fatal(err)
	}
	ds, err := drain(t, st)
	if err != nil {
		t.Fatal(err)
	}
	text, _, _, last := joined(ds)
	if text != "one two three" || len(ds) != 4 || ds[0].RateLimit == nil {
		t.Fatalf("deltas %+v", ds)
	}
	if !last.Done || last.FinishReason != providers.FinishStop || last.Usage.OutputTokens != mocks.Tokens("one two three") ||
		last.Stored == nil || last.Stored.ID != "resp_fake0000000000000001" || last.Stored.Origin != p.SharingScope() {
		t.Fatalf("last %+v", last)
	}
	if b := bodyOf(t, s); b["stream"] != true {
		t.Fatalf("body %v", b)
	}
}

func TestResponsesStream_ToolCallOpensWithItsIDThenStreamsArguments(t *testing.T) {
	args := `{"city":"Paris","days":[1,2,3],"units":"metric"}`
	s := newServer(t, mocks.CallTool("get_weather", args))
	p := responsesProvider(t, s)
	st, err := p.ChatStream(context.Background(), ask("Weather?"))
	if err != nil {
		t.Fatal(err)
	}
	ds, err := drain(t, st)
	if err != nil {
		t.Fatal(err)
	}
	first := ds[0].ToolCalls
	if len(first) != 1 || first[0].ID != "call_00000001" || first[0].Name != "get_weather" || first[0].Index != 0 {
		t.Fatalf("first %+v", first)
	}
	if _, _, got, last := joined(ds); got != args || last.FinishReason != providers.FinishToolCalls || len(ds) < 4 {
		t.Fatalf("arguments %q in %d deltas, finish %q", got, len(ds), last.FinishReason)
	}
}

func TestResponsesStream_ReasoningSummaryAndItsItem(t *testing.T) {
	s := newServer(t, mocks.OK())
	p := responsesProvider(t, s)
	req := ask("ponder this")
	req.Reasoning = &providers.Reasoning{Effort: "low", Summary: "auto"}
	req.Include = []string{providers.IncludeReasoningEncrypted}
	st, err := p.ChatStream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := drain(t, st)
	if err != nil {
		t.Fatal(err)
	}
	text, reasoning, _, last := joined(ds)
	if text != "ponder this" || reasoning != "Thinking about: ponder this" {
		t.Fatalf("text %q reasoning %q", text, reasoning)
	}
	b := last.Thinking
	if len(b) != 1 || b[0].ID != "rs_fake0000000000000001" || b[0].Text != reasoning || !strings.HasPrefix(b[0].Encrypted, "enc_fake_") ||
		b[0].Origin != p.SharingScope() || last.Usage.ReasoningTokens == 0 {
		t.Fatalf("done %+v", last)
	}
}

func TestResponsesStream_EndBeforeCompletedIsTruncated(t *testing.T) {
	for _, tc := range []struct {
		step mocks.Step
		kind providers.ErrorKind
	}{
		{mocks.TruncateStream(2).CountingContent(), providers.KindStreamTruncated}, // a clean end
		{mocks.CutStream(2).CountingContent(), providers.KindUnavailable},          // a dropped connection
	} {
		s := newServer(t, tc.step.WithText("a b c d"))
		st, err := responsesProvider(t, s).ChatStream(context.Background(), ask("x"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = drain(t, st)
		if e := asError(t, err); e.Kind != tc.kind || e.Partial != "a b" || e.StatusCode != http.StatusOK || e.RequestID == "" {
			t.Errorf("%s: %#v", tc.step, e)
		}
	}
}

func TestResponsesStream_ErrorEventsAreClassified(t *testing.T) {
	for _, tc := range []struct {
		code string
		kind providers.ErrorKind
	}{
		{"server_error", providers.KindUnavailable},
		{"overloaded_error", providers.KindOverloaded},
		{"rate_limit_exceeded", providers.KindRateLimited},
		{"invalid_prompt", providers.KindBadRequest},
		{"bio_policy", providers.KindContentFiltered},
	} {
		s := newServer(t, mocks.StreamError(2, tc.code).CountingContent().WithText("a b c"))
		st, err := responsesProvider(t, s).ChatStream(context.Background(), ask("x"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = drain(t, st)
		if e := asError(t, err); e.Kind != tc.kind || e.Code != tc.code || e.Partial != "a b" {
			t.Errorf("%s: %#v", tc.code, e)
		}
	}
}

func TestResponsesStream_MalformedEventEndsTheStreamNamingIt(t *testing.T) {
	s := newServer(t, mocks.MalformedAt(2).WithText("a b c"), mocks.Malformed())
	p := responsesProvider(t, s)
	for _, want := range []string{"event 6", "event 1"} { // 4 events of preamble, then the words
		st, err := p.ChatStream(context.Background(), ask("x"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = drain(t, st)
		if e := asError(t, err); e.Kind != providers.KindUnavailable || !strings.Contains(e.Message, want) {
			t.Errorf("%#v", e)
		}
	}
}

func TestResponses_RefusalIsRefusedNotText(t *testing.T) {
	s := newServer(t, mocks.RefuseAfter(2, "I won't.").WithText("Sure: a b"), mocks.RefuseAfter(2, "I won't.").WithText("Sure: a b"))
	p := responsesProvider(t, s)
	_, err := p.Chat(context.Background(), ask("x"))
	e := asError(t, err)
	if e.Kind != providers.KindRefused || e.Message != "I won't." || e.Partial != "Sure: a" || e.Usage == nil {
		t.Fatalf("chat %#v", e)
	}
	st, err := p.ChatStream(context.Background(), ask("x"))
	if err != nil {
		t.Fatal(err)
	}
	ds, err := drain(t, st)
	e = asError(t, err)
	if text, _, _, _ := joined(ds); text != "Sure: a" || e.Kind != providers.KindRefused || e.Message != "I won't." || e.Partial != "Sure: a" || e.Usage == nil {
		t.Fatalf("stream %q %#v", text, e)
	}
}

func TestResponses_ContentFilterIsContentFilteredWithThePartialAnswer(t *testing.T) {
	s := newServer(t, mocks.ContentFiltered(1).WithText("a b c"), mocks.ContentFiltered(1).WithText("a b c"))
	p := responsesProvider(t, s)
	_, err := p.Chat(context.Background(), ask("x"))
	if e := asError(t, err); e.Kind != providers.KindContentFiltered || e.Partial != "a" || !strings.Contains(e.Message, "incomplete_details") {
		t.Fatalf("chat %#v", e)
	}
	st, err := p.ChatStream(context.Background(), ask("x"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = drain(t, st)
	if e := asError(t, err); e.Kind != providers.KindContentFiltered || e.Partial != "a" || e.Usage == nil {
		t.Fatalf("stream %#v", e)
	}
}

func TestResponses_HTTPErrorsAreClassifiedWithHints(t *testing.T) {
	s := newServer(t, mocks.Status(502), mocks.RateLimited(1500*time.Millisecond), mocks.QuotaExceeded(), mocks.Status(502))
	p := responsesProvider(t, s)
	for _, want := range []providers.ErrorKind{providers.KindUnavailable, providers.KindRateLimited, providers.KindQuotaExhausted} {
		_, err := p.Chat(context.Background(), ask("x"))
		e := asError(t, err)
		if e.Kind != want || e.RequestID == "" || e.StatusCode == 0 {
			t.Errorf("%s: %#v", want, e)
		}
		if want == providers.KindRateLimited && e.RetryAfter != 1500*time.Millisecond {
			t.Errorf("retry after %s", e.RetryAfter)
		}
	}
	if _, err := p.ChatStream(context.Background(), ask("x")); asError(t, err).Kind != providers.KindUnavailable {
		t.Fatalf("stream %v", err)
	}
}

// A server may hold the connection open after its terminal event: the stream is done at
// response.completed and does not wait for the body's end.
func TestResponsesStream_HeldOpenAfterCompletedIsDoneAtOnce(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"hi\"}\n\n"+
			"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"completed\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	p, err := openai.New(openai.Config{API: openai.Responses, BaseURL: srv.URL, APIKey: sentinel, Model: "m", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	st, err := p.ChatStream(context.Background(), ask("x"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		ds, err := drain(t, st)
		if err == nil && (len(ds) != 2 || !ds[1].Done || ds[1].Usage.InputTokens != 3) {
			err = errors.New("wrong deltas")
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream waited for the body's end after response.completed")
	}
}

// Events written as other servers write them: response.failed, an error event nested as an
// envelope, a function call whose arguments come whole, reasoning text of a server that shows
// it, an incomplete answer for another reason.
func TestResponsesStream_OtherServersEvents(t *testing.T) {
	for _, tc := range []struct {
		name, events string
		check        func(ds []providers.Delta, err error) string
	}{
		{"response.failed", `{"type":"response.output_text.delta","delta":"a"}` + "\n" +
			`{"type":"response.failed","response":{"object":"response","status":"failed","error":{"code":"rate_limit_exceeded","message":"slow down"}}}`,
			func(ds []providers.Delta, err error) string {
				if e := asError(t, err); e.Kind != providers.KindRateLimited || e.Partial != "a" || e.Message != "slow down" {
					return e.GoString()
				}
				return ""
			}},
		{"failed without a status", `{"type":"response.failed","response":{"error":{"code":"server_error","message":"down"}}}`,
			func(ds []providers.Delta, err error) string {
				if e := asError(t, err); e.Kind != providers.KindUnavailable || e.Message != "down" {
					return e.GoString()
				}
				return ""
			}},
		{"nested error", `{"type":"error","error":{"type":"server_error","code":"server_error","message":"boom"}}`,
			func(ds []providers.Delta, err error) string {
				if e := asError(t, err); e.Kind != providers.KindUnavailable || e.Message != "boom" {
					return e.GoString()
				}
				return ""
			}},
		{"whole arguments", `{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","call_id":"c1","name":"f"}}` + "\n" +
			`{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","call_id":"c1","name":"f","arguments":"{\"a\":1}"}}` + "\n" +
			`{"type":"response.completed","response":{"status":"completed"}}`,
			func(ds []providers.Delta, err error) string {
				if _, _, args, last := joined(ds); err != nil || args != `{"a":1}` || last.FinishReason != providers.FinishToolCalls {
					return args
				}
				return ""
			}},
		{"reasoning text", `{"type":"response.output_item.added","output_index":0,"item":{"type":"reasoning","id":"rs_1"}}` + "\n" +
			`{"type":"response.reasoning_text.delta","output_index":0,"delta":"hmm"}` + "\n" +
			`{"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","id":"rs_1","content":[{"type":"reasoning_text","text":"hmm"}]}}` + "\n" +
			`{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}}`,
			func(ds []providers.Delta, err error) string {
				_, r, _, last := joined(ds)
				if err != nil || r != "hmm" || last.FinishReason != providers.FinishLength || len(last.Thinking) != 1 || last.Thinking[0].Text != "hmm" || last.Stored != nil {
					return r
				}
				return ""
			}},
		{"incomplete without a reason", `{"type":"response.output_text.delta","delta":"Once upon"}` + "\n" +
			`{"type":"response.incomplete","response":{"status":"incomplete"}}`,
			func(ds []providers.Delta, err error) string {
				if _, _, _, last := joined(ds); err != nil || last.FinishReason != providers.FinishLength {
					return string(last.FinishReason)
				}
				return ""
			}},
		{"not an object", `["response.completed"]`, func(ds []providers.Delta, err error) string {
			if e := asError(t, err); e.Kind != providers.KindUnavailable || !strings.Contains(e.Message, "event 1") {
				return e.GoString()
			}
			return ""
		}},
	} {
		var body strings.Builder
		for _, line := range strings.Split(tc.events, "\n") {
			body.WriteString("data: " + line + "\n\n")
		}
		p := fuzzResponses(t, 200, "text/event-stream", []byte(body.String()))
		st, err := p.ChatStream(context.Background(), ask("x"))
		if err != nil {
			t.Fatal(err)
		}
		ds, err := drain(t, st)
		if msg := tc.check(ds, err); msg != "" {
			t.Errorf("%s: %s (%v)", tc.name, msg, err)
		}
	}
}

func TestResponsesStream_EventPastTheLimitFails(t *testing.T) {
	big := `{"type":"response.output_text.delta","delta":"` + strings.Repeat("x", 1<<13) + `"}`
	p := fuzzResponses(t, 200, "text/event-stream", []byte("data: "+big+"\n\n"))
	st, err := p.ChatStream(context.Background(), ask("x"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = drain(t, st)
	var lim *providers.LimitError
	if e := asError(t, err); e.Kind != providers.KindUnavailable || !errors.As(err, &lim) || lim.Limit != "MaxEventBytes" {
		t.Fatalf("%#v", e)
	}
}
