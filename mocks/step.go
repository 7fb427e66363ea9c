package mocks

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Step says how the server answers one call. The zero Step is a normal, successful reply in the
// wire format of the endpoint that was called. Fields combine: a Step may delay its headers, add
// headers, and then answer with an error, a cut stream or a tool call.
//
// Build steps with the constructors ([OK], [Status], [RateLimited], [Stall], …) and refine them
// with the With… methods, which return a modified copy:
//
//	mocks.Status(503).WithShouldRetry(false).WithDelay(50 * time.Millisecond)
//
// A step answers one call unless [Step.Repeat] or [Step.Forever] says otherwise.
//
// # Silent providers
//
// Two steps model a provider that says nothing: [Step.Delay] sends the whole answer late (no
// header, no byte until then), and [Step.Stall] never answers at all. A client that times the
// headers catches both. [Step.FirstTokenDelay] and [Step.StallAfter] are the other kind: the
// headers and the first events arrive at once, and the silence comes later, where only a
// first-token or idle-stream limit catches it.
//
// # Stream events
//
// A stream opens with its preamble: OpenAI's first chunk (the role, or the tool call's id and
// name); Anthropic's message_start, the first content_block_start and ping. Then come the
// content events, each carrying a piece of the answer: OpenAI chunks with delta.content,
// delta.refusal or tool-call arguments; Anthropic content_block_delta events (text, tool
// input, and, when the request asks for thinking, the thinking and signature deltas that come
// before the text). Then the tail: the finish chunk, the usage chunk and [DONE]; or
// content_block_stop, message_delta and message_stop.
//
// A reply's text is sent one word per content event, each word after the first with its
// leading space, so [Step.Text] of K words is exactly K content events (a text of more than
// 4096 words is grouped into 4096 events). [Step.CutAfter] and [Step.ErrorAfter] count every
// event, preamble included, unless [Step.CountContent] is set; [Step.FirstTokenDelay],
// [Step.StallAfter], [Step.MalformedAt] and [Step.RefuseAfter] count content events only, so
// that one step does the same to both wire formats. These stream faults do nothing to a JSON
// (non-streaming) reply unless their field says otherwise.
type Step struct {
	// Status is the HTTP status of an error reply, sent in the provider's own error envelope.
	// 0 and 200 mean a successful reply.
	Status int
	// ErrorType overrides the provider error type ("" = the provider's type for Status, such as
	// "rate_limit_error" or "overloaded_error" for Anthropic, "server_error" for OpenAI).
	ErrorType string
	// Code overrides the OpenAI error code ("" = the usual code for Status, or null).
	Code string
	// Message overrides the error message ("" = a message like the provider's).
	Message string
	// Quota marks a 429 as a permanent quota or spend-limit error: OpenAI insufficient_quota,
	// Anthropic enforced_spend_limit_reached. No retry hint is sent unless RetryAfter is set.
	Quota bool
	// RetryAfter, when positive, sends retry-after-ms (milliseconds) and Retry-After (whole
	// seconds, rounded up), on any status.
	RetryAfter time.Duration
	// ShouldRetry, when set, sends x-should-retry: true or false.
	ShouldRetry *bool
	// Header holds extra response headers, added after the standard ones (so they win).
	Header http.Header
	// Delay holds the response headers back this long: a silent provider that answers late.
	// It ends early, without a reply, when the client goes away or the server closes. It
	// applies to JSON and streamed replies, and comes before every other field's effect.
	Delay time.Duration
	// Stall never answers, the silent provider that is never heard from: no status, no header,
	// no byte. The connection stays open until the client gives up or the server closes, and
	// then drops without a response. It wins over every field but Delay (which comes first).
	Stall bool
	// Reset closes the TCP connection with a reset (SO_LINGER 0) before any response byte.
	Reset bool
	// Malformed sends a 200 whose JSON body (or, for a stream, whose first event) is cut short
	// and cannot be parsed; the stream ends there. For a bad event in the middle of a stream
	// that goes on, see MalformedAt.
	Malformed bool
	// Text replaces the reply text ("" = the server's reply text, or an echo of the last user
	// message).
	Text string
	// ToolCall, when set, makes the reply a single tool call instead of text.
	ToolCall *ToolCall
	// ChunkDelay waits this long before each stream event after the first.
	ChunkDelay time.Duration
	// Cut ends the reply early after CutAfter events (streams) or after half the body (JSON):
	// [CutAbort] drops the connection, [CutClean] ends the body normally but without the
	// terminal event, and without the finish reason unless the cut comes after it (for a
	// complete stream that lacks only its terminal event, see OmitTerminal). "" = no cut.
	Cut CutMode
	// CutAfter is the number of stream events sent before Cut takes effect, counting the
	// preamble (see [Step]) unless CountContent is set. A number past the stream's last event
	// cuts nothing.
	CutAfter int
	// StreamError, when set, is the provider error type sent as an error event inside a 200
	// stream after ErrorAfter events; the stream then ends. A non-streaming call gets the same
	// error as an HTTP error reply instead, with the status usual for that type.
	StreamError string
	// ErrorAfter is the number of stream events sent before the StreamError event, counting
	// the preamble unless CountContent is set.
	ErrorAfter int
	// CountContent makes CutAfter and ErrorAfter count content events instead of every event,
	// so that CutAfter 3 cuts after the third word of the answer in either wire format,
	// whatever preamble came first. The cut or error event then comes before the next event
	// past the preamble: with CutAfter 0, right after the preamble; with CutAfter equal to the
	// number of content events, after the whole answer but before its finish chunk or
	// content_block_stop. A count past the answer's content events cuts nothing. Without Cut
	// or StreamError it does nothing.
	CountContent bool
	// FirstTokenDelay holds a stream's first content event back this long, after the 200
	// headers (text/event-stream) and the preamble went out at once: the client's headers and
	// first bytes arrive in time, only its first token is late. It ends early, dropping the
	// connection, when the client goes away or the server closes. For a first token that never
	// comes, give a duration longer than the client waits (time.Hour): the wait ends with the
	// client anyway. 0 or negative: no delay. A JSON reply ignores it (use Delay).
	FirstTokenDelay time.Duration
	// StallAfter, when positive, makes a stream go silent after that many content events, for
	// StallFor, and then go on normally to the end. A reply with fewer content events does not
	// stall; one with exactly that many stalls after its whole answer, before its finish chunk
	// or content_block_stop. 0 or negative: no stall (for a stall right after the preamble use
	// FirstTokenDelay). A JSON reply ignores it.
	StallAfter int
	// StallFor is how long the StallAfter silence lasts; 0 or negative means until the client
	// goes away or the server closes, when the connection drops. Without StallAfter it does
	// nothing.
	StallFor time.Duration
	// KeepAlive, when positive, fills a stream's waits for content — FirstTokenDelay, the
	// StallAfter silence, a latency profile's first token — with an SSE comment line
	// (": keep-alive") every KeepAlive: a server that keeps the connection busy without
	// producing anything, as providers and proxies do with pings. A client that counts any byte
	// as progress never sees the stream idle. 0 or negative: the waits are silent.
	KeepAlive time.Duration
	// Trickle, when positive, fills the same waits with one byte every Trickle, of comment
	// lines (": keep-alive") sent a byte at a time: a server or proxy that dribbles, so that a
	// read blocked in the middle of a line keeps receiving bytes but never a whole event. It
	// wins over KeepAlive. 0 or negative: no trickle.
	Trickle time.Duration
	// MalformedAt, when positive, sends the stream's MalformedAt-th content event (counting
	// from 1) with its JSON cut in half, and goes on with the rest of the stream, finish
	// reason and terminal event included: a client that skips the bad event presents an
	// answer missing a piece as complete. 0 or negative, or past the last content event:
	// nothing is malformed. A JSON reply ignores it (see Malformed).
	MalformedAt int
	// OmitTerminal ends a complete stream without its terminal event: every content event,
	// the finish chunk with its finish_reason and, when the request asked for it
	// (stream_options.include_usage), the usage chunk, then the body ends cleanly without
	// "data: [DONE]" (OpenAI); for Anthropic, message_delta with its stop_reason and usage,
	// but no message_stop. Unlike CutClean, the answer and its finish reason are whole. A JSON
	// reply ignores it, and so does a Responses stream, whose terminal event
	// (response.completed) is the one that carries the finish and the usage.
	OmitTerminal bool
	// Refuse, when set, makes the answer a refusal, after RefuseAfter content events of the
	// normal answer (0: at once), in JSON and streams alike. OpenAI: the message's refusal
	// field holds Refuse (content is null, or the part of the answer sent before), streamed
	// as delta.refusal pieces, finish_reason "stop". Anthropic: a 200 whose stop_reason is
	// "refusal" and whose stop_details is {"type":"refusal","category":RefuseCategory,
	// "explanation":Refuse} (on message_delta in a stream, then message_stop); the content is
	// the part of the answer sent before. A refusal replaces a tool call.
	Refuse string
	// RefuseCategory is the Anthropic stop_details category of a refusal ("cyber", "bio", …;
	// "" = null, a refusal of no named category). Without Refuse or ContentFilter it does
	// nothing; OpenAI ignores it.
	RefuseCategory string
	// RefuseAfter is how many content events of the normal answer come before the refusal or
	// content filter; past the answer's length, the whole answer comes first. 0 or negative:
	// the refusal is the whole answer.
	RefuseAfter int
	// ContentFilter ends the answer after RefuseAfter content events with OpenAI's
	// finish_reason "content_filter" (JSON and streams; the content is the part sent before).
	// Anthropic has no such reason and answers stop_reason "refusal" instead, with
	// RefuseCategory and a null explanation. With Refuse also set, OpenAI sends the refusal text and then
	// finish_reason "content_filter". It replaces a tool call.
	ContentFilter bool
	// Expire makes a background answer (Responses' background: true) gone as soon as this
	// step has answered the call that started it, as after its retention ended: reading,
	// cancelling or resuming it is then a 404, and a previous_response_id naming it a 400. A cut
	// background stream (Cut) therefore cannot be resumed. It does nothing to other calls.
	Expire bool
	// Blocks are content blocks an Anthropic answer holds before its own (after its thinking),
	// each a JSON object sent as it is: a server tool's call and result, or a block type a
	// client may not know. A stream sends each whole in its content_block_start, then its
	// content_block_stop. Other dialects ignore them.
	Blocks []json.RawMessage
	// Repeat is how many consecutive calls this step answers (0 and 1 = one call).
	Repeat int
	// Forever makes the step answer every call from then on.
	Forever bool
}

// CutMode says how a cut reply ends.
type CutMode string

const (
	// CutAbort drops the connection mid-body: the client sees an unexpected EOF.
	CutAbort CutMode = "abort"
	// CutClean ends the body normally but early: no [DONE] or message_stop, no finish reason.
	CutClean CutMode = "clean"
)

// ToolCall is a scripted tool (function) call reply.
type ToolCall struct {
	// ID identifies the call ("" = a deterministic id).
	ID string `json:"id,omitempty"`
	// Name is the tool's name.
	Name string `json:"name"`
	// Arguments is the JSON object of arguments ("" = {}).
	Arguments string `json:"arguments,omitempty"`
}

// OK is a normal, successful reply.
func OK() Step { return Step{} }

// Reply is a successful reply with the given text.
func Reply(text string) Step { return Step{Text: text} }

// CallTool is a successful reply that calls the tool name with the JSON arguments args.
func CallTool(name, args string) Step { return Step{ToolCall: &ToolCall{Name: name, Arguments: args}} }

// Status is an error reply with the given HTTP status in the provider's error envelope.
// Status(200) is the same as [OK].
func Status(code int) Step { return Step{Status: code} }

// Error is an error reply with the given status, provider error type and message.
func Error(code int, errType, message string) Step {
	return Step{Status: code, ErrorType: errType, Message: message}
}

// RateLimited is a 429 rate-limit error that asks the client to wait retryAfter, through the
// retry-after-ms and Retry-After headers, with the provider's rate-limit headers showing an empty
// bucket. A retryAfter <= 0 sends no hint.
func RateLimited(retryAfter time.Duration) Step {
	return Step{Status: http.StatusTooManyRequests, RetryAfter: retryAfter}
}

// QuotaExceeded is the permanent 429: OpenAI insufficient_quota, Anthropic spend limit reached.
func QuotaExceeded() Step { return Step{Status: http.StatusTooManyRequests, Quota: true} }

// Overloaded is Anthropic's 529 overloaded_error (sent with the same status on OpenAI paths).
func Overloaded() Step { return Step{Status: 529} }

// Latency is a successful reply whose headers are held back for d. For delays drawn per
// request, with stragglers, per model or per deployment, see [LatencyProfile].
func Latency(d time.Duration) Step { return Step{Delay: d} }

// Stall is a call that never answers (see [Step.Stall]).
func Stall() Step { return Step{Stall: true} }

// ResetConnection resets the connection before any response (see [Step.Reset]).
func ResetConnection() Step { return Step{Reset: true} }

// Malformed is a 200 reply whose body is not valid JSON (see [Step.Malformed]).
func Malformed() Step { return Step{Malformed: true} }

// SlowStream is a successful reply whose stream events are d apart.
func SlowStream(d time.Duration) Step { return Step{ChunkDelay: d} }

// CutStream is a successful reply whose connection drops after n stream events (for a JSON
// reply: after half the body).
func CutStream(n int) Step { return Step{Cut: CutAbort, CutAfter: n} }

// TruncateStream is a successful reply whose stream ends cleanly after n events, without its
// terminal event.
func TruncateStream(n int) Step { return Step{Cut: CutClean, CutAfter: n} }

// StreamError is a 200 stream that sends the provider error errType as an in-stream error event
// after n events (Anthropic "event: error", OpenAI "data: {"error":…}").
func StreamError(n int, errType string) Step { return Step{StreamError: errType, ErrorAfter: n} }

// WithDelay returns a copy of st whose headers are held back for d.
func (st Step) WithDelay(d time.Duration) Step { st.Delay = d; return st }

// WithRetryAfter returns a copy of st that sends the retry hint d.
func (st Step) WithRetryAfter(d time.Duration) Step { st.RetryAfter = d; return st }

// WithShouldRetry returns a copy of st that sends x-should-retry: retry.
func (st Step) WithShouldRetry(retry bool) Step { st.ShouldRetry = &retry; return st }

// WithHeader returns a copy of st that also sends the header key: value.
func (st Step) WithHeader(key, value string) Step {
	h := st.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Add(key, value)
	st.Header = h
	return st
}

// WithChunkDelay returns a copy of st whose stream events are d apart.
func (st Step) WithChunkDelay(d time.Duration) Step { st.ChunkDelay = d; return st }

// WithText returns a copy of st that replies with text.
func (st Step) WithText(text string) Step { st.Text = text; return st }

// WithCode sets the OpenAI error code of an error reply.
func (st Step) WithCode(code string) Step { st.Code = code; return st }

// WithMessage returns a copy of st whose error carries message.
func (st Step) WithMessage(message string) Step { st.Message = message; return st }

// Times returns a copy of st that answers n consecutive calls.
func (st Step) Times(n int) Step { st.Repeat = n; return st }

// Always returns a copy of st that answers every call from then on.
func (st Step) Always() Step { st.Forever = true; return st }

// isError reports whether st answers with an HTTP error status.
func (st Step) isError() bool { return st.Status != 0 && st.Status != http.StatusOK }

// String describes st briefly, as recorded in the journal ("ok", "429 retry-after=150ms", …).
func (st Step) String() string {
	var parts []string
	switch {
	case st.Stall:
		parts = append(parts, "stall")
	case st.Reset:
		parts = append(parts, "reset")
	case st.isError():
		parts = append(parts, fmt.Sprint(st.Status))
		if st.Quota {
			parts = append(parts, "quota")
		}
	case st.Malformed:
		parts = append(parts, "malformed")
	case st.Refuse != "":
		parts = append(parts, fmt.Sprintf("refusal@%d", max(st.RefuseAfter, 0)))
	case st.ContentFilter:
		parts = append(parts, fmt.Sprintf("content-filter@%d", max(st.RefuseAfter, 0)))
	case st.ToolCall != nil:
		parts = append(parts, "tool:"+st.ToolCall.Name)
	default:
		parts = append(parts, "ok")
	}
	if st.Delay > 0 {
		parts = append(parts, "delay="+st.Delay.String())
	}
	if st.RetryAfter > 0 {
		parts = append(parts, "retry-after="+st.RetryAfter.String())
	}
	if st.ShouldRetry != nil {
		parts = append(parts, fmt.Sprintf("should-retry=%t", *st.ShouldRetry))
	}
	if st.ChunkDelay > 0 {
		parts = append(parts, "chunk-delay="+st.ChunkDelay.String())
	}
	if st.Cut != "" {
		parts = append(parts, fmt.Sprintf("cut=%s@%d", st.Cut, st.CutAfter))
	}
	if st.StreamError != "" {
		parts = append(parts, fmt.Sprintf("stream-error=%s@%d", st.StreamError, st.ErrorAfter))
	}
	if st.CountContent && (st.Cut != "" || st.StreamError != "") {
		parts = append(parts, "in-content")
	}
	if st.FirstTokenDelay > 0 {
		parts = append(parts, "first-token-delay="+st.FirstTokenDelay.String())
	}
	if st.StallAfter > 0 {
		stall := "forever"
		if st.StallFor > 0 {
			stall = st.StallFor.String()
		}
		parts = append(parts, fmt.Sprintf("stall-after=%d for=%s", st.StallAfter, stall))
	}
	switch {
	case st.Trickle > 0:
		parts = append(parts, "trickle="+st.Trickle.String())
	case st.KeepAlive > 0:
		parts = append(parts, "keep-alive="+st.KeepAlive.String())
	}
	if st.MalformedAt > 0 {
		parts = append(parts, fmt.Sprintf("malformed-at=%d", st.MalformedAt))
	}
	if st.OmitTerminal {
		parts = append(parts, "omit-terminal")
	}
	if st.Expire {
		parts = append(parts, "expire")
	}
	return strings.Join(parts, " ")
}
