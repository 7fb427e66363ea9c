package mocks_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/steadyllm/steady/mocks"
)

// A wire format under test: where its streams go, and how to read what they say.
type wire struct {
	name     string
	path     string
	header   map[string]string
	body     string // a streaming request for "one two three four"
	preamble int    // the events before the first content event
}

// wires are the stream formats every mid-stream fault is proved on: OpenAI, Anthropic, Azure,
// which speaks OpenAI's on its deployment paths, and OpenAI's Responses API.
func wires() []wire {
	return []wire{
		{"openai", "/v1/chat/completions", openAIHeaders(),
			`{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"one two three four"}]}`, 1},
		{"anthropic", "/v1/messages", anthropicHeaders(),
			`{"model":"claude-sonnet-4-5","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"one two three four"}]}`, 3},
		{"azure", "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21",
			map[string]string{"Api-Key": "k", "Content-Type": "application/json"},
			`{"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"one two three four"}]}`, 1},
		{"responses", "/v1/responses", openAIHeaders(),
			`{"model":"gpt-4o","stream":true,"input":[{"type":"message","role":"user","content":"one two three four"}]}`, 4},
	}
}

func (w wire) anthropic() bool { return w.name == "anthropic" }

// responses reports whether w is OpenAI's Responses API, whose terminal event
// (response.completed) carries the finish and the usage: there is no terminal event to omit.
func (w wire) responses() bool { return w.name == "responses" }

// sseReader reads a stream one event at a time, as a client does while the stream goes on.
type sseReader struct{ r *bufio.Reader }

func newSSEReader(r io.Reader) *sseReader { return &sseReader{r: bufio.NewReader(r)} }

// next returns the next event, or the read error that came first.
func (s *sseReader) next() (event, error) {
	var cur event
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			return event{}, err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if cur.name != "" || cur.data != "" {
				return cur, nil
			}
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		}
	}
}

// openStream sends w's streaming request with ctx and checks that a 200 event stream opened.
func openStream(t *testing.T, ctx context.Context, s *mocks.Server, w wire, body string) (*http.Response, *sseReader) {
	t.Helper()
	res, err := do(t, ctx, s, http.MethodPost, w.path, w.header, body)
	if err != nil {
		t.Fatalf("%s: %v", w.name, err)
	}
	if ct := res.Header.Get("Content-Type"); res.StatusCode != 200 || !strings.HasPrefix(ct, "text/event-stream") {
		res.Body.Close()
		t.Fatalf("%s: status %d, content type %q", w.name, res.StatusCode, ct)
	}
	return res, newSSEReader(res.Body)
}

// reading is what a client made of a stream: the text, the finish or stop reason, whether the
// terminal event came, and the kind of each event.
type reading struct {
	text     string
	refusal  string // OpenAI's delta.refusal pieces
	finish   string // OpenAI finish_reason or Anthropic stop_reason
	terminal bool   // [DONE] or message_stop
	kinds    []string
	usage    bool // a usage chunk (OpenAI) or message_delta usage (Anthropic) arrived
	details  map[string]any
	bad      []int // indexes of the events whose data did not parse
}

// read interprets evs in w's format.
func (w wire) read(evs []event) reading {
	var r reading
	for i, e := range evs {
		if e.data == "[DONE]" {
			r.terminal, r.kinds = true, append(r.kinds, "done")
			continue
		}
		var v map[string]any
		if json.Unmarshal([]byte(e.data), &v) != nil {
			r.bad, r.kinds = append(r.bad, i), append(r.kinds, "bad")
			continue
		}
		if w.responses() {
			r.readResponses(e.name, v)
			continue
		}
		if w.anthropic() {
			r.kinds = append(r.kinds, e.name)
			switch e.name {
			case "content_block_delta":
				if s, ok := path(v, "delta", "text").(string); ok {
					r.text += s
				}
			case "message_delta":
				r.finish, _ = path(v, "delta", "stop_reason").(string)
				r.usage = path(v, "usage", "output_tokens") != nil
				r.details, _ = path(v, "delta", "stop_details").(map[string]any)
			case "message_stop":
				r.terminal = true
			}
			continue
		}
		kind := "chunk"
		if s, ok := path(v, "choices", 0, "delta", "content").(string); ok && s != "" {
			r.text, kind = r.text+s, "content"
		}
		if s, ok := path(v, "choices", 0, "delta", "refusal").(string); ok {
			r.refusal, kind = r.refusal+s, "refusal"
		}
		if s, ok := path(v, "choices", 0, "finish_reason").(string); ok {
			r.finish, kind = s, "finish"
		}
		if path(v, "usage", "total_tokens") != nil {
			r.usage, kind = true, "usage"
		}
		r.kinds = append(r.kinds, kind)
	}
	return r
}

// readStream sends w's streaming request with body, reads the whole stream and interprets it;
// err is the read error that ended it (nil for a clean end).
func readStream(t *testing.T, s *mocks.Server, w wire, body string) (reading, []event, error) {
	t.Helper()
	res, r := openStream(t, context.Background(), s, w, body)
	defer res.Body.Close()
	var evs []event
	for {
		e, err := r.next()
		if err == io.EOF {
			return w.read(evs), evs, nil
		}
		if err != nil {
			return w.read(evs), evs, err
		}
		evs = append(evs, e)
	}
}

// readResponses interprets one event of a Responses stream: text and refusal deltas, and the
// terminal event with its status (or incomplete reason) as the finish and its usage.
func (r *reading) readResponses(name string, v map[string]any) {
	r.kinds = append(r.kinds, name)
	switch name {
	case "response.output_text.delta":
		r.text += path(v, "delta").(string)
	case "response.refusal.delta":
		r.refusal += path(v, "delta").(string)
	case "response.completed", "response.incomplete", "response.failed":
		r.terminal = true
		r.finish, _ = path(v, "response", "status").(string)
		if reason, ok := path(v, "response", "incomplete_details", "reason").(string); ok {
			r.finish = reason
		}
		r.usage = path(v, "response", "usage", "total_tokens") != nil
	}
}
