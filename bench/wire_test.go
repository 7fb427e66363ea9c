package bench

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// The workload of the client benchmarks: one realistic support-desk exchange. The request
// has a system prompt and a user question (≈ 400 characters together), a token limit and a
// temperature; the answer is a 600-character paragraph with the usage block each API sends
// today. The streamed answer is streamChunks content deltas of a word or two, as servers send
// them, followed by the API's closing events. Every client under test sends the same request
// and reads the same bytes from the same in-memory transport.
const (
	systemPrompt = "You are a support assistant for an online bookshop. Answer in two or three " +
		"sentences, cite the order number when the customer gives one, and never promise a " +
		"refund without checking the order status first."
	userPrompt = "Hello, I ordered 'The Pragmatic Programmer' last Tuesday (order 48213) and the " +
		"tracking page has not changed since Thursday. Can you tell me where the parcel is and " +
		"when it should arrive?"
	maxTokens   = 300
	temperature = 0.3

	openAIModel    = "gpt-4o-mini"
	anthropicModel = "claude-haiku-4-5"

	// answer is the text of every answer, streamed or not.
	answer = "Thanks for the order number. Order 48213 left our warehouse on Wednesday and the " +
		"carrier scanned it at their regional hub on Thursday evening; the tracking page only " +
		"updates again when the parcel is out for delivery, which is why it looks stuck. The " +
		"carrier's estimate is delivery by Monday. If it has not arrived by Tuesday, reply here " +
		"and I will open a trace with the carrier and check the order status for a replacement " +
		"or refund. Is there anything else I can help you with today, for example a change of " +
		"delivery address or a note for the courier at the door?"

	streamChunks = 200
)

// openAIAnswer is a chat completion as api.openai.com sends it today.
var openAIAnswer = []byte(`{"id":"chatcmpl-BzQv7e0kXo2bS4mUYh1rTqgPa9d3L","object":"chat.completion",` +
	`"created":1763890000,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"message":{` +
	`"role":"assistant","content":` + quote(answer) + `,"refusal":null,"annotations":[]},` +
	`"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":86,"completion_tokens":128,` +
	`"total_tokens":214,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},` +
	`"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,` +
	`"rejected_prediction_tokens":0}},"service_tier":"default","system_fingerprint":"fp_560af6e559"}`)

// anthropicAnswer is a message as api.anthropic.com sends it today.
var anthropicAnswer = []byte(`{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant",` +
	`"model":"claude-haiku-4-5-20251001","content":[{"type":"text","text":` + quote(answer) + `}],` +
	`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":86,` +
	`"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":128,` +
	`"service_tier":"standard"}}`)

// chunkTexts splits the answer into streamChunks deltas of about equal length.
var chunkTexts = func() []string {
	out := make([]string, streamChunks)
	for i := range out {
		out[i] = answer[i*len(answer)/streamChunks : (i+1)*len(answer)/streamChunks]
	}
	return out
}()

// openAIStream is a streamed chat completion with usage (stream_options.include_usage), and
// openAIStreamHead the part of it a client has read once the first content delta arrived.
var openAIStream, openAIStreamHead = func() ([]byte, []byte) {
	const head = `data: {"id":"chatcmpl-BzQv7e0kXo2bS4mUYh1rTqgPa9d3L","object":"chat.completion.chunk",` +
		`"created":1763890000,"model":"gpt-4o-mini-2024-07-18","service_tier":"default",` +
		`"system_fingerprint":"fp_560af6e559","choices":[`
	var b bytes.Buffer
	b.WriteString(head + `{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n")
	var first int
	for i, t := range chunkTexts {
		b.WriteString(head + `{"index":0,"delta":{"content":` + quote(t) + `},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n")
		if i == 0 {
			first = b.Len()
		}
	}
	b.WriteString(head + `{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}` + "\n\n")
	b.WriteString(head + `],"usage":{"prompt_tokens":86,"completion_tokens":128,"total_tokens":214,` +
		`"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":` +
		`{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes(), b.Bytes()[:first]
}()

// anthropicStream is a streamed message, and anthropicStreamHead the part of it a client has
// read once the first text delta arrived.
var anthropicStream, anthropicStreamHead = func() ([]byte, []byte) {
	var b bytes.Buffer
	event := func(name, data string) { fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", name, data) }
	event("message_start", `{"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL",`+
		`"type":"message","role":"assistant","model":"claude-haiku-4-5-20251001","content":[],`+
		`"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":86,"cache_creation_input_tokens":0,`+
		`"cache_read_input_tokens":0,"output_tokens":1,"service_tier":"standard"}}}`)
	event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	event("ping", `{"type": "ping"}`)
	var first int
	for i, t := range chunkTexts {
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+quote(t)+`}}`)
		if i == 0 {
			first = b.Len()
		}
	}
	event("content_block_stop", `{"type":"content_block_stop","index":0}`)
	event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":128}}`)
	event("message_stop", `{"type":"message_stop"}`)
	return b.Bytes(), b.Bytes()[:first]
}()

func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// wireTransport answers every request in memory: it reads the request body to the end, as a
// server does, and returns a fresh *http.Response over body (shared, never copied).
type wireTransport struct {
	contentType []string
	body        []byte
}

func jsonWire(body []byte) wireTransport  { return wireTransport{[]string{"application/json"}, body} }
func eventWire(body []byte) wireTransport { return wireTransport{[]string{"text/event-stream"}, body} }

func (t wireTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		_ = req.Body.Close()
	}
	return &http.Response{
		Status:        "200 OK",
		StatusCode:    http.StatusOK,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": t.contentType},
		Body:          io.NopCloser(bytes.NewReader(t.body)),
		ContentLength: int64(len(t.body)),
		Request:       req,
	}, nil
}

// heldWire answers with an event stream that sends head and then stays open, silent, until
// the client closes it: a stream in the middle of its answer, for measuring what an open
// stream holds.
type heldWire struct{ head []byte }

func (t heldWire) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		_ = req.Body.Close()
	}
	return &http.Response{
		Status:        "200 OK",
		StatusCode:    http.StatusOK,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": {"text/event-stream"}},
		Body:          &heldBody{rest: t.head, closed: make(chan struct{})},
		ContentLength: -1,
		Request:       req,
	}, nil
}

type heldBody struct {
	rest   []byte
	once   sync.Once
	closed chan struct{}
}

func (b *heldBody) Read(p []byte) (int, error) {
	if len(b.rest) > 0 {
		n := copy(p, b.rest)
		b.rest = b.rest[n:]
		return n, nil
	}
	<-b.closed
	return 0, io.EOF
}

func (b *heldBody) Close() error {
	b.once.Do(func() { close(b.closed) })
	return nil
}
