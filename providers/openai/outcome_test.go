package openai_test

import (
	"context"
	"encoding/json"
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

// How a stream ends, and what it is then: complete, truncated, refused, filtered, malformed.

const answer = "one two three" // three content events in the fake's streams

// chunk is one chat.completion.chunk event of a handcrafted stream.
func chunk(delta, finish, usage string) string {
	if finish == "" {
		finish = "null"
	} else {
		finish = `"` + finish + `"`
	}
	if usage == "" {
		usage = "null"
	}
	return `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` +
		delta + `,"finish_reason":` + finish + `}],"usage":` + usage + "}\n\n"
}

// usageChunk is the last chunk of a stream asked for its usage.
const usageChunk = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],` +
	`"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}` + "\n\n"

// handServer serves body as an event stream, then ends it cleanly or, with abort, drops the
// connection (the client reads an unexpected EOF).
func handServer(t *testing.T, body string, abort bool) *openai.Provider {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("X-Request-Id", "req-hand")
		_, _ = io.WriteString(w, body)
		w.(http.Flusher).Flush()
		if abort {
			panic(http.ErrAbortHandler)
		}
	}))
	t.Cleanup(srv.Close)
	p, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: sentinel, Model: "m", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// streamOf opens a stream of p and reads it to its end.
func streamOf(t *testing.T, p *openai.Provider, req *providers.ChatRequest) ([]providers.Delta, error) {
	t.Helper()
	st, err := p.ChatStream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return drain(t, st)
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
func wantDone(t *testing.T, deltas []providers.Delta, err error, u providers.Usage) {
	t.Helper()
	if err != nil {
		t.Fatalf("the stream failed: %v", err)
	}
	last := deltas[len(deltas)-1]
	if !last.Done || last.FinishReason != providers.FinishStop || last.Usage != u || textOf(deltas) != answer {
		t.Fatalf("text %q, last delta %+v; want Done, stop, usage %+v", textOf(deltas), last, u)
	}
}

var answerUsage = providers.Usage{InputTokens: mocks.Tokens("Hi"), OutputTokens: mocks.Tokens(answer)}

func TestChatStream_WithoutDoneAfterFinishAndUsageIsComplete(t *testing.T) {
	s := newServer(t, mocks.OmitTerminal().WithText(answer))
	deltas, err := streamOf(t, newProvider(t, s), ask("Hi"))
	wantDone(t, deltas, err, answerUsage)
}

func TestChatStream_CleanEndAfterFinishBeforeUsageIsCompleteWithoutUsage(t *testing.T) {
	body := chunk(`{"role":"assistant","content":""}`, "", "") + chunk(`{"content":"one"}`, "", "") +
		chunk(`{"content":" two three"}`, "", "") + chunk(`{}`, "stop", "")
	deltas, err := streamOf(t, handServer(t, body, false), ask("Hi"))
	wantDone(t, deltas, err, providers.Usage{})
}

func TestChatStream_BrokenAfterFinishIsComplete(t *testing.T) {
	// The fake drops the connection after its 5th event: the role chunk, three words, the
	// finish chunk; the usage chunk and [DONE] never come.
	s := newServer(t, mocks.CutStream(5).WithText(answer))
	deltas, err := streamOf(t, newProvider(t, s), ask("Hi"))
	wantDone(t, deltas, err, providers.Usage{})

	// Dropped after the usage chunk: complete, with the usage.
	s = newServer(t, mocks.CutStream(6).WithText(answer))
	deltas, err = streamOf(t, newProvider(t, s), ask("Hi"))
	wantDone(t, deltas, err, answerUsage)

	// By hand, the same.
	body := chunk(`{"content":"one two three"}`, "", "") + chunk(`{}`, "stop", "") + usageChunk
	deltas, err = streamOf(t, handServer(t, body, true), ask("Hi"))
	wantDone(t, deltas, err, providers.Usage{InputTokens: 7, OutputTokens: 3})
}

// A server that holds the connection open after its answer — the finish chunk and the usage
// chunk, without [DONE] — is not waited for: the stream is done at once, with its usage. So is
// one that sends the finish chunk alone when no usage was asked for.
func TestChatStream_HeldOpenAfterFinishAndUsageIsCompleteAtOnce(t *testing.T) {
	held := func(body string, omitUsage bool) *openai.Provider {
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, body)
			w.(http.Flusher).Flush()
			select { // held open until the client leaves or the test ends
			case <-r.Context().Done():
			case <-release:
			}
		}))
		t.Cleanup(srv.Close)
		t.Cleanup(func() { close(release) })
		p, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: sentinel, Model: "m", HTTPClient: srv.Client(),
			OmitStreamUsage: omitUsage})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	read := func(p *openai.Provider) ([]providers.Delta, error) {
		type result struct {
			deltas []providers.Delta
			err    error
		}
		done := make(chan result, 1)
		go func() {
			st, err := p.ChatStream(context.Background(), ask("Hi"))
			if err != nil {
				done <- result{err: err}
				return
			}
			var ds []providers.Delta
			for {
				d, err := st.Recv()
				if err == io.EOF {
					break
				}
				if err != nil {
					done <- result{ds, err}
					return
				}
				ds = append(ds, d)
			}
			_ = st.Close()
			done <- result{deltas: ds}
		}()
		select {
		case r := <-done:
			return r.deltas, r.err
		case <-time.After(30 * time.Second): // far beyond any scheduling delay: the stream waits on the server
			t.Fatal("the stream still waits for a server that has sent its whole answer")
			return nil, nil
		}
	}
	body := chunk(`{"content":"one two three"}`, "", "") + chunk(`{}`, "stop", "") + usageChunk
	deltas, err := read(held(body, false))
	wantDone(t, deltas, err, providers.Usage{InputTokens: 7, OutputTokens: 3})

	body = chunk(`{"content":"one two three"}`, "", "") + chunk(`{}`, "stop", "")
	deltas, err = read(held(body, true))
	wantDone(t, deltas, err, providers.Usage{})
}

func TestChatStream_EndBeforeFinishIsTruncatedWithTheUsageSoFar(t *testing.T) {
	// Some compatible servers report usage on every chunk (vLLM's continuous usage stats).
	u := `{"prompt_tokens":7,"completion_tokens":2,"total_tokens":9}`
	body := chunk(`{"content":"one"}`, "", u) + chunk(`{"content":" two"}`, "", u)
	for _, abort := range []bool{false, true} {
		_, err := streamOf(t, handServer(t, body, abort), ask("Hi"))
		e := asError(t, err)
		wantKind := providers.KindStreamTruncated
		if abort {
			wantKind = providers.KindUnavailable
		}
		if e.Kind != wantKind || e.Partial != "one two" || e.Usage == nil ||
			*e.Usage != (providers.Usage{InputTokens: 7, OutputTokens: 2}) {
			t.Errorf("abort %v: %#v, usage %+v", abort, e, e.Usage)
		}
	}
	// Without usage reported, none is claimed.
	s := newServer(t, mocks.TruncateStream(3).WithText(answer))
	_, err := streamOf(t, newProvider(t, s), ask("Hi"))
	if e := asError(t, err); e.Kind != providers.KindStreamTruncated || e.Usage != nil {
		t.Errorf("%#v", e)
	}
}

func TestChatStream_MalformedChunkEndsTheStreamNamingIt(t *testing.T) {
	s := newServer(t, mocks.MalformedAt(2).WithText(answer))
	deltas, err := streamOf(t, newProvider(t, s), ask("Hi"))
	e := asError(t, err)
	// The role chunk is event 1, "one" event 2, the malformed " two" event 3.
	if e.Kind != providers.KindUnavailable || !strings.Contains(e.Message, "event 3 is not valid JSON") ||
		e.Partial != "one" || textOf(deltas) != "one" || e.StatusCode != 200 || e.RequestID == "" {
		t.Fatalf("text %q, %#v", textOf(deltas), e)
	}
	var syntax *json.SyntaxError
	if !errors.As(err, &syntax) {
		t.Fatal("the decoder's error is not reachable")
	}
}

func TestChat_RefusalIsRefusedWithTheRefusalAsMessage(t *testing.T) {
	s := newServer(t, mocks.Refusal("I can't help with that."))
	_, err := newProvider(t, s).Chat(context.Background(), ask("Hi"))
	e := asError(t, err)
	if e.Kind != providers.KindRefused || e.Message != "I can't help with that." || e.Partial != "" ||
		e.StatusCode != 200 || e.RequestID == "" || e.Usage == nil || e.Usage.InputTokens != mocks.Tokens("Hi") {
		t.Fatalf("%#v", e)
	}
	if e.Kind.FallsBack() || e.Kind.Temporary() || e.Kind.Unwell() {
		t.Fatal("a refusal has no trait")
	}

	// Part way: what came before is the partial text.
	s = newServer(t, mocks.RefuseAfter(2, "No more.").WithText(answer))
	_, err = newProvider(t, s).Chat(context.Background(), ask("Hi"))
	if e := asError(t, err); e.Kind != providers.KindRefused || e.Message != "No more." || e.Partial != "one two" {
		t.Fatalf("%#v", e)
	}
}

func TestChatStream_RefusalPiecesAreRefusedNotText(t *testing.T) {
	s := newServer(t, mocks.RefuseAfter(2, "I can't help with that.").WithText(answer))
	deltas, err := streamOf(t, newProvider(t, s), ask("Hi"))
	e := asError(t, err)
	if e.Kind != providers.KindRefused || e.Message != "I can't help with that." || e.Partial != "one two" ||
		textOf(deltas) != "one two" || e.Usage == nil || e.StatusCode != 200 {
		t.Fatalf("text %q, %#v", textOf(deltas), e)
	}

	// A refusal far longer than a message is bounded.
	long := strings.Repeat("no ", 3000)
	body := chunk(`{"refusal":"`+long+`"}`, "", "") + chunk(`{}`, "stop", "") + "data: [DONE]\n\n"
	_, err = streamOf(t, handServer(t, body, false), ask("Hi"))
	if e := asError(t, err); e.Kind != providers.KindRefused || len(e.Message) > 1100 || e.Message == "" {
		t.Fatalf("kind %s, message of %d bytes", e.Kind, len(e.Message))
	}
}

func TestContentFilter_IsContentFilteredWithThePartialAnswer(t *testing.T) {
	s := newServer(t, mocks.ContentFiltered(2).WithText(answer), mocks.ContentFiltered(2).WithText(answer))
	p := newProvider(t, s)
	_, err := p.Chat(context.Background(), ask("Hi"))
	e := asError(t, err)
	if e.Kind != providers.KindContentFiltered || e.Code != "content_filter" || e.Partial != "one two" || e.Usage == nil {
		t.Fatalf("Chat: %#v", e)
	}
	deltas, err := streamOf(t, p, ask("Hi"))
	e = asError(t, err)
	if e.Kind != providers.KindContentFiltered || e.Partial != "one two" || textOf(deltas) != "one two" || e.Usage == nil {
		t.Fatalf("stream: text %q, %#v", textOf(deltas), e)
	}
}

func TestContextTooLong_StatesTheWindowAndTheRequest(t *testing.T) {
	prompt := strings.Repeat("word ", 40) // 50 tokens for the fake
	s := mocks.NewServer(mocks.WithAPIKey(sentinel), mocks.WithContextWindows(map[string]int{"gpt-4o-mini": 60}))
	t.Cleanup(s.Close)
	p := newProvider(t, s)
	in := mocks.Tokens(prompt)

	req := ask(prompt)
	req.MaxTokens = 20
	_, err := p.Chat(context.Background(), req)
	e := asError(t, err)
	want := providers.ContextOverflow{Window: 60, Requested: in + 20, Input: in, Output: 20}
	if e.Kind != providers.KindContextTooLong || e.Overflow == nil || *e.Overflow != want {
		t.Fatalf("%#v, overflow %+v, want %+v", e, e.Overflow, want)
	}

	// Without max_tokens, the prompt alone.
	long := strings.Repeat("word ", 60)
	_, err = p.ChatStream(context.Background(), ask(long))
	e = asError(t, err)
	want = providers.ContextOverflow{Window: 60, Requested: mocks.Tokens(long), Input: mocks.Tokens(long)}
	if e.Kind != providers.KindContextTooLong || e.Overflow == nil || *e.Overflow != want {
		t.Fatalf("%#v, overflow %+v, want %+v", e, e.Overflow, want)
	}
}

func TestPrefillRejected_IsMarked(t *testing.T) {
	s := mocks.NewServer(mocks.WithAPIKey(sentinel), mocks.WithRejectPrefill())
	t.Cleanup(s.Close)
	req := ask("Hi")
	req.Messages = append(req.Messages, providers.Message{Role: providers.RoleAssistant, Content: "Once upon"})
	_, err := newProvider(t, s).Chat(context.Background(), req)
	e := asError(t, err)
	if e.Kind != providers.KindBadRequest || e.Code != providers.CodePrefillUnsupported ||
		!errors.Is(err, providers.ErrPrefillUnsupported) {
		t.Fatalf("%#v", e)
	}
	// Any other bad request is not.
	_, err = newProvider(t, newServer(t, mocks.Error(400, "invalid_request_error", "bad"))).Chat(context.Background(), ask("Hi"))
	if errors.Is(err, providers.ErrPrefillUnsupported) {
		t.Fatalf("%v matches", err)
	}
}
