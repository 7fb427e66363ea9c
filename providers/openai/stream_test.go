package openai_test

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
	"github.com/steadyllm/steady/providers/openai"
)

const streamText = "The quick brown fox jumps over the lazy dog, twice over."

func TestChatStream_DeliversTextThenDoneWithUsage(t *testing.T) {
	s := newServer(t, mocks.Reply(streamText))
	p := newProvider(t, s)

	st, err := p.ChatStream(context.Background(), ask("Hi"))
	if err != nil {
		t.Fatal(err)
	}
	deltas, err := drain(t, st)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for _, d := range deltas[:len(deltas)-1] {
		if d.Done {
			t.Fatalf("Done before the last delta: %+v", deltas)
		}
		text.WriteString(d.Text)
	}
	last := deltas[len(deltas)-1]
	wantUsage := providers.Usage{InputTokens: mocks.Tokens("Hi"), OutputTokens: mocks.Tokens(streamText)}
	if text.String() != streamText || len(deltas) < 3 || !last.Done || last.FinishReason != providers.FinishStop || last.Usage != wantUsage {
		t.Fatalf("text %q in %d deltas, last %+v", text.String(), len(deltas), last)
	}
	if body := lastBody(t, s); !strings.Contains(body, `"stream":true`) || !strings.Contains(body, `"stream_options":{"include_usage":true}`) {
		t.Fatalf("body %s", body)
	}
	if _, err := st.Recv(); err != io.EOF {
		t.Fatalf("Recv after Done: %v, want io.EOF", err)
	}
}

func TestChatStream_OmitStreamUsage(t *testing.T) {
	s := newServer(t, mocks.Reply("short"))
	p := newProvider(t, s, func(c *openai.Config) { c.Dialect = openai.Compatible; c.OmitStreamUsage = true })
	st, err := p.ChatStream(context.Background(), ask("Hi"))
	if err != nil {
		t.Fatal(err)
	}
	deltas, err := drain(t, st)
	if err != nil {
		t.Fatal(err)
	}
	if last := deltas[len(deltas)-1]; !last.Done || last.Usage != (providers.Usage{}) || strings.Contains(lastBody(t, s), "stream_options") {
		t.Fatalf("last %+v, body %s", last, lastBody(t, s))
	}
}

func TestChatStream_MapsToolCallDeltas(t *testing.T) {
	args := `{"city":"Paris","unit":"celsius","days":3}`
	s := newServer(t, mocks.CallTool("get_weather", args))
	p := newProvider(t, s)
	st, err := p.ChatStream(context.Background(), ask("Weather?"))
	if err != nil {
		t.Fatal(err)
	}
	deltas, err := drain(t, st)
	if err != nil {
		t.Fatal(err)
	}
	var id, name, got string
	for _, d := range deltas {
		for _, tc := range d.ToolCalls {
			if tc.Index != 0 {
				t.Fatalf("tool call index %d", tc.Index)
			}
			id, name, got = id+tc.ID, name+tc.Name, got+tc.Arguments
		}
	}
	last := deltas[len(deltas)-1]
	if id == "" || name != "get_weather" || got != args || !last.Done || last.FinishReason != providers.FinishToolCalls {
		t.Fatalf("id %q name %q args %q last %+v", id, name, got, last)
	}
}

func TestChatStream_TruncatedStreamIsAnError(t *testing.T) {
	// Cut after every possible number of events, up to the one where only [DONE] is missing;
	// the first n that gets through is the complete stream.
	for n := 0; ; n++ {
		if n > 50 {
			t.Fatal("the stream never completes")
		}
		s := newServer(t, mocks.TruncateStream(n).WithText(streamText))
		st, err := newProvider(t, s).ChatStream(context.Background(), ask("Hi"))
		if err != nil {
			t.Fatal(err)
		}
		deltas, err := drain(t, st)
		if err == nil {
			if n < 4 || !deltas[len(deltas)-1].Done {
				t.Fatalf("n=%d: complete with %+v", n, deltas)
			}
			return
		}
		e := asError(t, err)
		if e.Kind != providers.KindStreamTruncated || e.StatusCode != 200 || e.RequestID == "" || !e.Temporary() {
			t.Fatalf("n=%d: error %+v", n, e)
		}
		for _, d := range deltas {
			if d.Done {
				t.Fatalf("n=%d: a truncated stream delivered Done", n)
			}
		}
		if _, again := st.Recv(); !errors.Is(again, e) {
			t.Fatalf("n=%d: Recv after the error: %v", n, again)
		}
	}
}

func TestChatStream_InStreamOverloadIsOverloaded(t *testing.T) {
	s := newServer(t, mocks.StreamError(2, "overloaded_error").WithText(streamText))
	p := newProvider(t, s)
	st, err := p.ChatStream(context.Background(), ask("Hi"))
	if err != nil {
		t.Fatal(err)
	}
	deltas, err := drain(t, st)
	e := asError(t, err)
	if e.Kind != providers.KindOverloaded || e.Type != "overloaded_error" || e.StatusCode != 200 || len(deltas) == 0 ||
		e.Partial != joinText(deltas) {
		t.Fatalf("error %+v after %d deltas", e, len(deltas))
	}
}

func TestChatStream_InStreamErrorsAreClassified(t *testing.T) {
	tests := []struct {
		errType string
		want    providers.ErrorKind
	}{
		{"server_error", providers.KindUnavailable},
		{"rate_limit_error", providers.KindRateLimited},
		{"insufficient_quota", providers.KindQuotaExhausted},
		{"invalid_request_error", providers.KindBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.errType, func(t *testing.T) {
			s := newServer(t, mocks.StreamError(0, tt.errType))
			st, err := newProvider(t, s).ChatStream(context.Background(), ask("Hi"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = drain(t, st)
			if e := asError(t, err); e.Kind != tt.want {
				t.Fatalf("kind %s, want %s (%v)", e.Kind, tt.want, e)
			}
		})
	}
}

func TestChatStream_CutConnectionIsUnavailable(t *testing.T) {
	s := newServer(t, mocks.CutStream(2).WithText(streamText))
	p := newProvider(t, s)
	st, err := p.ChatStream(context.Background(), ask("Hi"))
	if err != nil {
		t.Fatal(err)
	}
	deltas, err := drain(t, st)
	e := asError(t, err)
	if e.Kind != providers.KindUnavailable || e.Err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("error %+v (cause %v)", e, e.Err)
	}
	if e.Partial == "" || e.Partial != joinText(deltas) {
		t.Fatalf("Partial %q, want the text delivered, %q", e.Partial, joinText(deltas))
	}
}

func TestChatStream_ClosesErrorBodies(t *testing.T) {
	s := newServer(t, mocks.RateLimited(0), mocks.Status(500), mocks.Error(400, "invalid_request_error", "nope"))
	rec := &closeRecorder{base: s.Client().Transport}
	p := newProvider(t, s, func(c *openai.Config) { c.HTTPClient = &http.Client{Transport: rec} })
	for range 3 {
		st, err := p.ChatStream(context.Background(), ask("Hi"))
		if st != nil || err == nil {
			t.Fatalf("stream %v, err %v", st, err)
		}
		asError(t, err)
	}
	if n, ok := rec.allClosed(); n != 3 || !ok {
		t.Fatalf("%d bodies, all closed: %t", n, ok)
	}
}

func TestChatStream_ReleasesBodyAfterDone(t *testing.T) {
	s := newServer(t, mocks.OK())
	rec := &closeRecorder{base: s.Client().Transport}
	p := newProvider(t, s, func(c *openai.Config) { c.HTTPClient = &http.Client{Transport: rec} })
	st, err := p.ChatStream(context.Background(), ask("Hi"))
	if err != nil {
		t.Fatal(err)
	}
	for {
		d, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if d.Done {
			break
		}
	}
	if n, ok := rec.allClosed(); n != 1 || !ok { // before the caller's Close
		t.Fatalf("%d bodies, all closed: %t", n, ok)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	_ = st.Close() // twice is fine
}

func TestChatStream_SurvivesManyKeepAliveComments(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, strings.Repeat(": keep-alive\n\n", 400)) // go-openai's default limit is 300
		_, _ = io.WriteString(w, `data: {"id":"1","choices":[{"index":0,"delta":{"content":"late"},"finish_reason":"stop"}]}`+"\n\n")
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	p, err := openai.New(openai.Config{Dialect: openai.Compatible, BaseURL: srv.URL, Model: "m", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	st, err := p.ChatStream(context.Background(), ask("Hi"))
	if err != nil {
		t.Fatal(err)
	}
	deltas, err := drain(t, st)
	if err != nil || len(deltas) != 2 || deltas[0].Text != "late" || !deltas[1].Done {
		t.Fatalf("deltas %+v, err %v", deltas, err)
	}
}

func TestChatStream_CancelledContext(t *testing.T) {
	s := newServer(t, mocks.SlowStream(time10ms).WithText(streamText))
	p := newProvider(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	st, err := p.ChatStream(ctx, ask("Hi"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); err != nil {
		t.Fatal(err)
	}
	cancel()
	_, err = drain(t, st)
	if e := asError(t, err); e.Kind != providers.KindCanceled || !errors.Is(err, context.Canceled) {
		t.Fatalf("error %+v", e)
	}
}

// joinText is the text the deltas delivered.
func joinText(deltas []providers.Delta) string {
	var b strings.Builder
	for _, d := range deltas {
		b.WriteString(d.Text)
	}
	return b.String()
}
