package client_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadyllm/steady/client"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/anthropic"
	"github.com/steadyllm/steady/providers/openai"
	"github.com/steadyllm/steady/resilience"
)

// Memory is bounded by configuration, never by the server, for a streamed answer too: a server
// that streams text forever in tiny pieces, and never ends its answer, ends the stream with a
// *providers.LimitError at Limits.MaxResponseBytes, and what the client holds then — the text
// delivered, in Stream.Text and the error's Partial — stays within twice the bound.

// floodWire is one wire's endless answer: the events before the text, and one tiny text event.
type floodWire struct {
	name  string
	head  string
	event func(text string) string
	build func(srv string, hc *http.Client, lim providers.Limits) (providers.Provider, error)
}

var floodWires = []floodWire{
	{"chat", "", func(text string) string {
		return `data: {"id":"chatcmpl-f","object":"chat.completion.chunk","created":1795096991,"model":"gpt-4o-mini-2024-07-18",` +
			`"choices":[{"index":0,"delta":{"content":"` + text + `"},"finish_reason":null}]}` + "\n\n"
	}, func(srv string, hc *http.Client, lim providers.Limits) (providers.Provider, error) {
		return openai.New(openai.Config{Name: "p", BaseURL: srv + "/v1", APIKey: "sk-flood", HTTPClient: hc, Model: "gpt-4o-mini", Limits: lim})
	}},
	{"responses", "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":" +
		`{"id":"resp_f","object":"response","status":"in_progress","model":"gpt-4.1-2025-04-14","output":[]}}` + "\n\n",
		func(text string) string {
			return "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1," +
				`"item_id":"msg_f","output_index":0,"content_index":0,"delta":"` + text + `"}` + "\n\n"
		}, func(srv string, hc *http.Client, lim providers.Limits) (providers.Provider, error) {
			return openai.New(openai.Config{Name: "p", API: openai.Responses, BaseURL: srv + "/v1", APIKey: "sk-flood", HTTPClient: hc,
				Model: "gpt-4.1", Limits: lim})
		}},
	{"messages", "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_f\",\"type\":\"message\"," +
		`"role":"assistant","model":"claude-haiku-4-5-20251001","content":[],"stop_reason":null,"usage":{"input_tokens":9,"output_tokens":1}}}` +
		"\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
		func(text string) string {
			return "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0," +
				`"delta":{"type":"text_delta","text":"` + text + `"}}` + "\n\n"
		}, func(srv string, hc *http.Client, lim providers.Limits) (providers.Provider, error) {
			return anthropic.New(anthropic.Config{Name: "p", BaseURL: srv, APIKey: "sk-flood", HTTPClient: hc, Model: "claude-haiku-4-5", Limits: lim})
		}},
}

// floodServer streams w's head, then events text events of text, then nothing more (no
// terminal event), or stops when the client leaves. Nothing is allocated per event.
func floodServer(t *testing.T, w floodWire, text string, events int) *httptest.Server {
	t.Helper()
	const perWrite = 512
	chunk := []byte(strings.Repeat(w.event(text), perWrite))
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "text/event-stream")
		rw.Header().Set("X-Ratelimit-Limit-Requests", "500")
		rw.WriteHeader(http.StatusOK)
		if _, err := io.WriteString(rw, w.head); err != nil {
			return
		}
		for sent := 0; sent < events; sent += perWrite {
			if _, err := rw.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// floodPolicy bounds a flood by bytes, not time: no total or first-token limit. Those limits
// also keep each finished call in their pipeline's timer queue (resilience/deadline.go) until
// the limit would have run out, and the call holds the stream it served, so that a stream
// read by an earlier test would still be held, then freed, while this one is measured.
func floodPolicy() resilience.Options {
	o := policy()
	o.TimeoutSeconds, o.FirstTokenTimeoutSeconds, o.StreamIdleTimeoutSeconds = 0, 0, 300
	return o
}

// heldAfter runs f and returns the heap the process holds after it above what it held before,
// each measured after a collection (what f left live: the stream and its error), and the most
// heap it held meanwhile, sampled.
func heldAfter(f func()) (held, peak uint64) {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC() // what sync.Pool kept survives one collection
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var top atomic.Uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > top.Load() {
				top.Store(m.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(stop)
	<-done
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	if ms.HeapAlloc > base {
		held = ms.HeapAlloc - base
	}
	if p := top.Load(); p > base {
		peak = p - base
	}
	return held, peak
}

// floodStream reads a stream of c to its end and returns the stream (closed) and its error.
func floodStream(t *testing.T, c *client.Client) (*client.Stream, error) {
	t.Helper()
	st, err := c.ChatStream(context.Background(), &providers.ChatRequest{
		Messages: []providers.Message{{Role: providers.RoleUser, Content: "go on forever"}}})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	for _, err := range st.Deltas() {
		if err != nil {
			return st, err
		}
	}
	return st, nil
}

// checkBounded asserts that err ends a stream at the answer limit bound, with the text
// delivered up to it (within one delta of size piece) in Partial and in the stream's Text, and
// that the client held less than twice the bound.
func checkBounded(t *testing.T, st *client.Stream, err error, bound int64, piece int, held uint64) {
	t.Helper()
	var e *providers.Error
	var le *providers.LimitError
	if !errors.As(err, &e) || !errors.As(err, &le) || e.Kind != providers.KindUnavailable ||
		le.Limit != "MaxResponseBytes" || le.Max != bound {
		t.Fatalf("the stream ended with %v, want an unavailable error wrapping MaxResponseBytes (%d)", err, bound)
	}
	if n := int64(len(e.Partial)); n > bound || n <= bound-int64(piece) || st.Text() != e.Partial {
		t.Fatalf("Partial holds %d bytes (Text %d), want the text up to the bound %d", n, len(st.Text()), bound)
	}
	if !strings.HasPrefix(e.Partial, strings.Repeat(e.Partial[:piece], 4)) {
		t.Fatalf("Partial %.40q… is not the text delivered", e.Partial)
	}
	if held >= 2*uint64(bound) {
		t.Fatalf("the client holds %d KiB at the end, for a bound of %d KiB", held>>10, bound>>10)
	}
}

func TestStream_AnEndlessAnswerEndsAtMaxResponseBytesOnEveryWire(t *testing.T) {
	const bound = 2 << 20
	text := "sixteen bytes.. " // one tiny delta
	for _, w := range floodWires {
		t.Run(w.name, func(t *testing.T) {
			srv := floodServer(t, w, text, 1_000_000)
			c := newClient(t, client.WithProvider("p", floodPolicy(), func(hc *http.Client) (providers.Provider, error) {
				return w.build(srv.URL, hc, providers.Limits{MaxResponseBytes: bound})
			}))
			var st *client.Stream
			var err error
			held, peak := heldAfter(func() { st, err = floodStream(t, c) })
			t.Logf("%s: held %d KiB at the end (peak +%d KiB) for a bound of %d KiB", w.name, held>>10, peak>>10, bound>>10)
			checkBounded(t, st, err, bound, len(text), held)
			runtime.KeepAlive(st)
		})
	}
}

// The full size, on the wire first found unbounded: a million 64-byte deltas (64 MB of text)
// and no terminal event end at the default limit, 32 MiB.
func TestStream_AMillionDeltasEndAtTheDefaultLimit(t *testing.T) {
	text := strings.Repeat("x", 63) + " "
	w := floodWires[1] // the Responses API
	srv := floodServer(t, w, text, 1_000_000)
	c := newClient(t, client.WithProvider("p", floodPolicy(), func(hc *http.Client) (providers.Provider, error) {
		return w.build(srv.URL, hc, providers.Limits{})
	}))
	var st *client.Stream
	var err error
	held, peak := heldAfter(func() { st, err = floodStream(t, c) })
	t.Logf("held %d MiB at the end (peak +%d MiB) for a bound of %d MiB", held>>20, peak>>20, providers.DefaultMaxResponseBytes>>20)
	checkBounded(t, st, err, providers.DefaultMaxResponseBytes, len(text), held)
	runtime.KeepAlive(st)
}

// endless is a provider of another module: its stream keeps no text (no providers.TextKeeper)
// and yields a million tiny text deltas, then ends without its Done delta.
type endless struct{ text string }

func (endless) Name() string { return "endless" }
func (endless) Chat(context.Context, *providers.ChatRequest) (*providers.ChatResponse, error) {
	return nil, errors.New("not used")
}
func (e endless) ChatStream(context.Context, *providers.ChatRequest) (providers.Stream, error) {
	return &endlessStream{text: e.text}, nil
}
func (endless) Embed(context.Context, *providers.EmbedRequest) (*providers.EmbedResponse, error) {
	return nil, errors.New("not used")
}

type endlessStream struct {
	text string
	sent int
}

func (s *endlessStream) Recv() (providers.Delta, error) {
	if s.sent == 1_000_000 {
		return providers.Delta{}, io.EOF
	}
	s.sent++
	return providers.Delta{Text: s.text}, nil
}

func (s *endlessStream) Close() error { return nil }

// The client keeps the text of a stream whose provider keeps none, and bounds it the same way,
// at the default limit.
func TestStream_AThirdPartyStreamIsBoundedByTheClient(t *testing.T) {
	text := strings.Repeat("y", 63) + " "
	c := newClient(t, client.WithProvider("p", floodPolicy(), func(*http.Client) (providers.Provider, error) {
		return endless{text: text}, nil
	}))
	var st *client.Stream
	var err error
	held, peak := heldAfter(func() { st, err = floodStream(t, c) })
	t.Logf("held %d MiB at the end (peak +%d MiB) for a bound of %d MiB", held>>20, peak>>20, providers.DefaultMaxResponseBytes>>20)
	checkBounded(t, st, err, providers.DefaultMaxResponseBytes, len(text), held)
	if !bytes.Equal([]byte(st.Text()[:len(text)]), []byte(text)) {
		t.Fatalf("the stream's text starts %q", st.Text()[:len(text)])
	}
	runtime.KeepAlive(st)
}

// A buffered stream (StreamRescue "buffer") holds its whole answer before it delivers any of
// it, and holds it as its text, not as the deltas the server sent: an answer of 200,000
// sixteen-byte pieces (3.2 MB) is held as a few deltas, in at most three times the memory of
// its text (the provider's kept text, and the merged deltas' builder, which may be half empty).
// Before pieces were merged it held 200,000 deltas: about 60 MB.
func TestStream_ABufferedAnswerInTinyPiecesIsHeldAsItsText(t *testing.T) {
	const pieces, text = 200_000, "sixteen bytes.. "
	w := floodWires[0] // chat completions
	chunk := []byte(strings.Repeat(w.event(text), 500))
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "text/event-stream")
		for sent := 0; sent < pieces; sent += 500 {
			if _, err := rw.Write(chunk); err != nil {
				return
			}
		}
		_, _ = io.WriteString(rw, `data: {"id":"chatcmpl-f","object":"chat.completion.chunk","model":"gpt-4o-mini","choices":[{"index":0,`+
			`"delta":{},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	o := floodPolicy()
	o.StreamRescue = resilience.RescueBuffer
	c := newClient(t, client.WithProvider("p", o, func(hc *http.Client) (providers.Provider, error) {
		return w.build(srv.URL, hc, providers.Limits{})
	}))
	var st *client.Stream
	held, peak := heldAfter(func() { // what the buffered stream holds before the caller reads it
		var err error
		st, err = c.ChatStream(context.Background(), &providers.ChatRequest{
			Messages: []providers.Message{{Role: providers.RoleUser, Content: "go on"}}})
		if err != nil {
			t.Fatal(err)
		}
	})
	var deltas int
	var got strings.Builder
	for d, err := range st.Deltas() {
		if err != nil {
			t.Fatal(err)
		}
		deltas++
		got.WriteString(d.Text)
	}
	const size = pieces * len(text)
	t.Logf("%d deltas delivered; held %d KiB (peak +%d KiB) for %d KiB of text", deltas, held>>10, peak>>10, size>>10)
	if got.Len() != size || got.String()[:len(text)] != text {
		t.Fatalf("the answer is %d bytes, want %d", got.Len(), size)
	}
	if deltas > 10 {
		t.Fatalf("the buffered answer came as %d deltas: its pieces were not merged", deltas)
	}
	if held > 3*uint64(size) {
		t.Fatalf("the buffered stream held %d KiB for an answer of %d KiB", held>>10, size>>10)
	}
	_ = st.Close()
	runtime.KeepAlive(st)
}
