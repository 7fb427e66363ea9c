package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/internal/wire"
)

// streamEvent is the data of any Messages stream event. "delta" has two shapes that share
// this struct: a content_block_delta's (type, text, partial_json) and a message_delta's
// (stop_reason).
type streamEvent struct {
	Type         string        `json:"type"`
	Message      *wireResponse `json:"message"`       // message_start
	Index        int           `json:"index"`         // content_block_*
	ContentBlock *respBlock    `json:"content_block"` // content_block_start
	Delta        *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"` // content_block_delta, message_delta
	Usage *wireUsage `json:"usage"` // message_delta (cumulative)
}

// stream is the providers.Stream of one streamed message. Recv must be called from one
// goroutine at a time; Close may be called from any goroutine, also while Recv blocks, to
// abort it.
type stream struct {
	ctx   context.Context
	p     *Provider
	body  io.ReadCloser
	sse   *wire.SSEReader
	reqID string

	// answer counts what the stream delivers and keeps (text, thinking, tool calls, kept
	// blocks) against Limits.MaxResponseBytes; partial is the text delivered so far, for the
	// error of a failed stream, kept within it.
	answer  wire.Answer
	partial wire.Text
	usage   providers.Usage
	billed  bool             // the server reported usage (message_start, message_delta)
	stop    string           // the last stop_reason seen: the answer is whole once it came
	details *wireStopDetails // the stop_details that came with it
	events  int              // the events read so far, to name a malformed one
	tools   map[int]int      // content block index → neutral tool call index
	done    bool             // the Done delta was returned
	err     error            // the terminal error, returned again by every later Recv

	rl       *providers.RateLimit // the response headers' snapshot: the first delta's and every failure's
	sent     bool                 // a delta went out, with rl
	model    string               // the model message_start names, "" until it does
	forced   string               // the tool of forced tool use whose input is the answer (SchemaByTool)
	answerAt int                  // the content block index of that tool's call, -1 for none
	thinking []providers.ThinkingBlock
	thinkAt  map[int]int // content block index → index in thinking
	// thought and signed are the text and signature each block of thinking has from its
	// deltas, set on the blocks when the stream ends.
	thought, signed []wire.Text
	// kept holds the blocks kept verbatim (providers.ProviderBlock), nil for none, counted
	// against the answer's limit with the rest.
	kept   []keptBlock
	keptAt map[int]int // content block index → its place in kept

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

func newStream(ctx context.Context, p *Provider, resp *http.Response, forced string) *stream {
	s := &stream{
		ctx:      ctx,
		p:        p,
		body:     resp.Body,
		sse:      wire.NewSSEReader(resp.Body, p.limits.MaxEventBytes),
		reqID:    p.errs.Field(wire.RequestID(resp.Header)),
		tools:    make(map[int]int),
		rl:       providers.ParseRateLimit(resp.Header, time.Now()),
		forced:   forced,
		answerAt: -1,
	}
	s.answer.Init(p.limits.MaxResponseBytes)
	return s
}

// Recv returns the next delta. Text arrives as Delta.Text; a tool call as a first
// ToolCallDelta with its ID and Name, then fragments of its Arguments (Index numbers the
// calls of the answer from 0). The last delta has Done, FinishReason and Usage (input tokens
// from message_start, output tokens from the last message_delta); Recv then returns io.EOF.
//
// The answer is whole once message_delta brought its stop_reason, and Recv returns the Done
// delta then, without waiting for message_stop or the body's end: what comes after it — or
// does not (a server that holds the connection open, drops it or sends no message_stop) — does
// not matter.
//
// The first delta the stream yields carries the rate-limit snapshot of the response headers
// (the Done delta, for an answer with no visible content), and the Done delta names the model
// message_start named.
//
// Every failure is a *providers.Error carrying the text received so far in Partial, the
// usage reported so far in Usage and the headers' rate-limit snapshot in RateLimit: a
// stop_reason "refusal" is KindRefused (stop_details' category in Code, its explanation in
// Message); an error event inside the stream is classified by its type (overloaded_error is
// KindOverloaded); an event that is not a JSON object is KindUnavailable naming it, and so is
// an answer that grows past Limits.MaxResponseBytes — its text, thinking, tool calls and the
// blocks kept verbatim together (wrapping a *providers.LimitError); a body that ends before
// the stop_reason is KindStreamTruncated; the pipeline's timeout is KindTimeout; a broken
// connection is KindUnavailable wrapping the read error (KindCanceled when the context ended);
// a Recv after Close is KindCanceled. Once Recv has failed it returns the same error again.
func (s *stream) Recv() (providers.Delta, error) {
	if s.err != nil {
		return providers.Delta{}, s.err
	}
	if s.done {
		return providers.Delta{}, io.EOF
	}
	for {
		var (
			d  providers.Delta
			ok bool
			e  *providers.Error
		)
		ev, err := s.sse.Next()
		switch {
		case err != nil && s.stop != "" && !s.closed.Load() && s.ctx.Err() == nil:
			d, e = s.finish() // the answer came whole; only its end was lost
			ok = e == nil
		case err != nil:
			e = s.readError(err)
		default:
			s.events++
			d, ok, e = s.handle(ev)
		}
		if e != nil {
			return providers.Delta{}, s.fail(e)
		}
		if ok {
			if !d.Done {
				// Thinking and signatures were counted as they came; the rest counts here.
				if err := s.answer.Take(wire.Size(&d) - len(d.Reasoning)); err != nil {
					return providers.Delta{}, s.fail(s.p.errs.TooLong(err))
				}
				s.answer.Add(&s.partial, d.Text)
			}
			if !s.sent {
				s.sent, d.RateLimit = true, s.rl
			}
			return d, nil
		}
	}
}

// handle interprets one event. It reports whether the event yields a delta for the caller,
// or the error that ends the stream.
func (s *stream) handle(ev wire.Event) (providers.Delta, bool, *providers.Error) {
	if ev.Name == "error" {
		return providers.Delta{}, false, s.p.streamError(ev.Data, s.reqID)
	}
	var e streamEvent
	if err := json.Unmarshal(ev.Data, &e); (err != nil && !e.opensUnknown(err)) || !isObject(ev.Data) {
		return providers.Delta{}, false, s.p.errs.Malformed(s.events, err)
	}
	kind := ev.Name
	if kind == "" {
		kind = e.Type
	}
	switch kind {
	case "message_start":
		if e.Message != nil {
			s.usage, s.billed = e.Message.Usage.neutral(), true
			s.model = e.Message.Model
		}
	case "content_block_start":
		if b := e.ContentBlock; b != nil {
			switch b.Type {
			case "text":
				if b.Text != "" {
					return providers.Delta{Text: b.Text}, true, nil
				}
			case "tool_use":
				if s.forced != "" && b.Name == s.forced {
					s.answerAt = e.Index // its input is the answer's text
					return providers.Delta{}, false, nil
				}
				if err := s.answer.Take(wire.BlockOverhead); err != nil { // the record of its index
					return providers.Delta{}, false, s.p.errs.TooLong(err)
				}
				i := len(s.tools)
				s.tools[e.Index] = i
				return providers.Delta{ToolCalls: []providers.ToolCallDelta{{Index: i, ID: b.ID, Name: b.Name}}}, true, nil
			case "thinking", "redacted_thinking":
				if err := s.answer.Take(wire.BlockOverhead + len(b.Thinking) + len(b.Signature) + len(b.Data)); err != nil {
					return providers.Delta{}, false, s.p.errs.TooLong(err)
				}
				if s.thinkAt == nil {
					s.thinkAt = map[int]int{}
				}
				s.thinkAt[e.Index] = len(s.thinking)
				s.thinking = append(s.thinking, providers.ThinkingBlock{Redacted: b.Data})
				s.thought, s.signed = append(s.thought, wire.Text{}), append(s.signed, wire.Text{})
				i := len(s.thinking) - 1
				s.answer.Add(&s.thought[i], b.Thinking)
				s.answer.Add(&s.signed[i], b.Signature)
				if b.Thinking != "" {
					return providers.Delta{Reasoning: b.Thinking}, true, nil
				}
			case "":
			default: // a server tool's call or result, or a block type added later: kept verbatim
				return providers.Delta{}, false, s.keep(e.Index, b.Type, ev.Data)
			}
		}
	case "content_block_delta":
		if d := e.Delta; d != nil {
			switch d.Type {
			case "text_delta":
				if d.Text != "" {
					return providers.Delta{Text: d.Text}, true, nil
				}
			case "input_json_delta":
				if e.Index == s.answerAt && d.PartialJSON != "" {
					return providers.Delta{Text: d.PartialJSON}, true, nil
				}
				if i, ok := s.tools[e.Index]; ok && d.PartialJSON != "" {
					return providers.Delta{ToolCalls: []providers.ToolCallDelta{{Index: i, Arguments: d.PartialJSON}}}, true, nil
				}
				if len(s.kept) > 0 && d.PartialJSON != "" {
					return providers.Delta{}, false, s.keepInput(e.Index, d.PartialJSON)
				}
			case "thinking_delta":
				if err := s.answer.Take(len(d.Thinking)); err != nil {
					return providers.Delta{}, false, s.p.errs.TooLong(err)
				}
				if i, ok := s.thinkAt[e.Index]; ok {
					s.answer.Add(&s.thought[i], d.Thinking)
				}
				if d.Thinking != "" {
					return providers.Delta{Reasoning: d.Thinking}, true, nil
				}
			case "signature_delta":
				if err := s.answer.Take(len(d.Signature)); err != nil {
					return providers.Delta{}, false, s.p.errs.TooLong(err)
				}
				if i, ok := s.thinkAt[e.Index]; ok {
					s.answer.Add(&s.signed[i], d.Signature)
				}
			}
		}
	case "message_delta":
		if e.Delta != nil && e.Delta.StopReason != "" {
			s.stop = e.Delta.StopReason
			if s.stop == stopRefusal {
				s.details = stopDetails(ev.Data)
			}
		}
		if u := e.Usage; u != nil {
			s.billed = true
			if u.OutputTokens > 0 {
				s.usage.OutputTokens = u.OutputTokens
			}
			if in := u.input(); in > 0 {
				n := u.neutral()
				s.usage.InputTokens, s.usage.CachedInputTokens, s.usage.CacheWriteInputTokens =
					n.InputTokens, n.CachedInputTokens, n.CacheWriteInputTokens
			}
			if d := u.OutputTokensDetails; d != nil {
				s.usage.ReasoningTokens = d.ThinkingTokens
			}
		}
		if s.stop != "" {
			// The stop_reason and the final usage: nothing but message_stop can follow, so the
			// answer is whole now, and a server that holds the connection open costs no wait.
			d, e := s.finish()
			return d, e == nil, e
		}
	case "error": // an error event without an event name
		return providers.Delta{}, false, s.p.streamError(ev.Data, s.reqID)
	case "message_stop":
		d, e := s.finish()
		return d, e == nil, e
	}
	// ping, content_block_stop, thinking and citation deltas, and events added to the API
	// later carry nothing the neutral stream has a place for.
	return providers.Delta{}, false, nil
}

// finish ends a stream whose answer came whole (message_stop, or the body's end after the
// stop_reason): the Done delta, or the error of a refusal. Without a stop_reason the finish
// reason is FinishOther.
func (s *stream) finish() (providers.Delta, *providers.Error) {
	s.done = true
	if s.stop == stopRefusal {
		return providers.Delta{}, s.p.refusal(s.details)
	}
	finish := finishReason(s.stop)
	if s.answerAt >= 0 && finish == providers.FinishToolCalls && len(s.tools) == 0 {
		finish = providers.FinishStop // the forced "tool call" was the answer
	}
	for i := range s.thinking {
		s.thinking[i].Text, s.thinking[i].Signature = s.thought[i].String(), s.signed[i].String()
	}
	return providers.Delta{Done: true, FinishReason: finish, Usage: s.usage, Thinking: s.thinking,
		ProviderBlocks: s.keptBlocks(), Model: s.p.errs.Field(s.model)}, nil
}

// stopDetails reads the stop_details of a message_delta event's data, nil when it has none. It
// is read apart, for a refusal only, so that the struct every event of a stream is decoded
// into stays as small as the text deltas need.
func stopDetails(data []byte) *wireStopDetails {
	var ev struct {
		Delta struct {
			StopDetails *wireStopDetails `json:"stop_details"`
		} `json:"delta"`
	}
	_ = json.Unmarshal(data, &ev) // the event was decoded once already: it is valid JSON
	return ev.Delta.StopDetails
}

// isObject reports whether data is a JSON object, as every event's data must be: json.Unmarshal
// takes null into a struct without a word.
func isObject(data []byte) bool {
	data = bytes.TrimLeft(data, " \t\r\n")
	return len(data) > 0 && data[0] == '{'
}

// readError turns the error that ended reading the body into the stream's error.
func (s *stream) readError(err error) *providers.Error {
	switch {
	case s.closed.Load():
		return &providers.Error{Kind: providers.KindCanceled, Message: "the stream was closed", Err: err}
	case s.ctx.Err() == nil && errors.Is(err, io.EOF):
		return &providers.Error{Kind: providers.KindStreamTruncated,
			Message: "the stream ended before its stop_reason (message_delta)"}
	}
	// The caller's cancellation, the pipeline's idle or total timeout, a dropped connection,
	// a limit: classified where every wire classifies them.
	return s.p.errs.Failure(s.ctx, "reading the stream", err)
}

// fail records e, completed with what the stream knows, as the terminal error. The connection
// stays open until the caller's Close, so that the caller can first report the failure to the
// resilience pipeline (see providers.Stream).
func (s *stream) fail(e *providers.Error) error {
	e.StatusCode = http.StatusOK
	if e.RequestID == "" {
		e.RequestID = s.reqID
	}
	e.Partial = s.partial.String()
	if s.billed && e.Usage == nil {
		u := s.usage
		e.Usage = &u
	}
	e.RateLimit = s.rl
	s.err = s.p.errs.Finish(e)
	return e
}

// Close releases the connection. It is safe to call more than once and from any goroutine;
// every call returns the result of the first.
func (s *stream) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.closeErr = s.body.Close()
	})
	return s.closeErr
}

var _ providers.TextKeeper = (*stream)(nil)

// Text returns the text delivered so far (providers.TextKeeper).
func (s *stream) Text() string { return s.partial.String() }
