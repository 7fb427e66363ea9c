package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/internal/wire"
)

// drainLimit is how much of a stream body is read after [DONE] before closing it, so the
// connection can be reused (only the chunked-encoding trailer is normally left).
const drainLimit = 4 << 10

// ChatStream sends a streamed chat completion (or, with Config.API Responses, a streamed
// response: see responses_stream.go). It returns once the response headers have
// arrived: an error status is returned here as a *providers.Error, with the response body
// already closed. The stream asks for a final usage chunk (stream_options.include_usage)
// unless Config.OmitStreamUsage is set.
func (p *Provider) ChatStream(ctx context.Context, req *providers.ChatRequest) (providers.Stream, error) {
	if ctx == nil {
		return nil, p.badRequest(providers.NilContext)
	}
	if err := p.checkPrefill(req); err != nil {
		return nil, err
	}
	if p.api == Responses {
		return p.responsesStream(ctx, req)
	}
	msgs := getMessages(req)
	defer putMessages(msgs)
	creq, err := p.chatRequest(req, *msgs)
	if err != nil {
		return nil, err
	}
	if p.streamUsage {
		creq.StreamOptions = includeUsage
	}
	s := &stream{p: p}
	s.Context, s.streaming, s.guardRoom = ctx, true, &s.sse
	s.prefill = p.prefillOf(req)
	st, err := p.client.CreateChatCompletionStream(&s.exchange, creq)
	if err != nil {
		return nil, p.toError(&s.exchange, &s.exchange, err)
	}
	s.st = st
	s.rl = providers.ParseRateLimit(s.header, time.Now())
	s.answer.Init(p.limits.MaxResponseBytes)
	return s, nil
}

// includeUsage asks for the final usage chunk; go-openai only reads it.
var includeUsage = &goopenai.StreamOptions{IncludeUsage: true}

// stream adapts a go-openai chat stream to providers.Stream.
//
// Recv skips chunks that carry nothing for the caller (the role-only first chunk, the
// finish chunk, the usage chunk) and remembers their finish reason and usage for the final
// Done delta, which it returns when go-openai reports io.EOF and the body watcher saw
// [DONE]. The answer is whole once a choice brought its finish_reason: a body that ends after
// it without [DONE] — cleanly, even before the usage chunk (the Done delta's Usage is then
// zero), or broken (a dropped connection, the pipeline's timeout, a limit) — still gives the
// Done delta. A body that ends before any finish_reason is a truncated stream. Nor does Recv
// wait for the body's end once nothing more can come: after the finish_reason and the usage
// chunk (or the finish_reason alone, when no usage was asked for), the stream is done at once,
// so that a server that holds the connection open after its answer costs no idle limit.
//
// Not every whole stream is an answer: refusal pieces (delta.refusal) are never delivered as
// text but kept, and make the stream's end a KindRefused error with the refusal as its
// message; a finish_reason "content_filter" makes it a KindContentFiltered error (the answer
// is cut, though the stream is whole). A chunk that is not valid JSON ends the stream with a
// KindUnavailable error naming it, and so does an answer that grows past
// Limits.MaxResponseBytes (wrapping a *providers.LimitError). Every failure carries the text
// delivered so far in Partial, the usage reported so far in Usage and the rate-limit snapshot
// of the response headers in RateLimit, as the Anthropic provider's do. The snapshot rides on
// the first delta the stream yields (the Done delta of an answer with no visible content),
// and the Done delta names the model the chunks named. Once Recv has
// returned the Done delta or an error, later calls return io.EOF or the same error again; the
// Done delta also releases the body (drained a little and closed).
//
// Recv must be called from one goroutine at a time; Close may be called from any goroutine,
// any number of times, to abort the stream.
type stream struct {
	exchange // the call's: its context, and what the HTTP layer saw
	p        *Provider
	st       *goopenai.ChatCompletionStream
	finish   providers.FinishReason
	usage    providers.Usage
	billed   bool  // a usage chunk came
	events   int   // the chunks read so far, to name a malformed one
	complete bool  // the finish_reason and the usage asked for came: the next Recv ends the stream
	err      error // sticky: io.EOF after the Done delta, or the failure
	sent     bool  // a delta went out: the rate-limit snapshot rode on the first
	// rl is the response headers' rate-limit snapshot, for the first delta and every failure.
	rl *providers.RateLimit
	// model is the model the chunks name (the first that names one; Azure's first chunk, of
	// prompt filter results, names none).
	model string
	// refusal is the refusal text streamed so far (at most wire.KeepText bytes of it), and
	// refused whether any came: the stream's end is then the refusal's error.
	refusal strings.Builder
	refused bool
	// answer counts what the stream delivered against Limits.MaxResponseBytes; partial is the
	// text delivered so far (for the error of a failed stream), reasoning the reasoning_content
	// (OpenAI-compatible servers), both kept within it.
	answer    wire.Answer
	partial   wire.Text
	reasoning wire.Text

	closed atomic.Bool

	sse wire.SSEGuard // the room for the exchange's guard
}

// Recv returns the next delta; see stream.
func (s *stream) Recv() (providers.Delta, error) {
	if s.err != nil {
		return providers.Delta{}, s.err
	}
	for {
		if s.complete {
			return s.end(io.EOF) // the answer and its usage came: nothing is left to wait for
		}
		chunk, err := s.st.Recv()
		if err != nil {
			return s.end(err)
		}
		s.events++
		if s.model == "" {
			s.model = chunk.Model
		}
		if chunk.Usage != nil {
			s.usage, s.billed = usage(chunk.Usage), true
		}
		if len(chunk.Choices) == 0 {
			s.complete = s.finish != "" && s.billed
			continue
		}
		c := chunk.Choices[0] // one choice asked for (n is never set)
		if f := finishReason(c.FinishReason); f != "" {
			s.finish = f
		}
		if r := c.Delta.Refusal; r != "" {
			// Kept for the error the stream's end becomes, never shown as the answer.
			if err := s.answer.Take(len(r)); err != nil {
				return providers.Delta{}, s.fail(s.p.errs.TooLong(err))
			}
			s.refused = true
			if room := wire.KeepText - s.refusal.Len(); room > 0 {
				s.refusal.WriteString(r[:min(len(r), room)])
			}
		}
		s.complete = s.finish != "" && (s.billed || !s.p.streamUsage)
		d := providers.Delta{Text: c.Delta.Content, ToolCalls: toolCallDeltas(c.Delta), Reasoning: c.Delta.ReasoningContent}
		if d.Text != "" || len(d.ToolCalls) > 0 || d.Reasoning != "" {
			if err := s.answer.Take(wire.Size(&d)); err != nil {
				return providers.Delta{}, s.fail(s.p.errs.TooLong(err))
			}
			s.answer.Add(&s.partial, d.Text)
			s.answer.Add(&s.reasoning, d.Reasoning)
			if !s.sent {
				s.sent = true
				d.RateLimit = s.rl
			}
			return d, nil
		}
	}
}

// end turns go-openai's final error into the stream's end: the Done delta of a whole answer
// (releasing the body at once), the error of a whole stream that is not an answer (a refusal,
// a content filter), or the stream's failure.
func (s *stream) end(err error) (providers.Delta, error) {
	done := err == io.EOF && s.guard != nil && s.guard.Done()
	if !done && (s.finish != "" || s.refused) && s.bodyEnded(err) {
		done = true // the answer (or the refusal) came; only the stream's end was lost
	}
	var e *providers.Error
	switch {
	case !done:
		e = s.failure(err)
	case s.finish == providers.FinishContentFilter:
		e = s.p.errs.Filtered(s.refusal.String())
	case s.refused:
		e = s.p.errs.Refused(s.refusal.String(), "")
	default:
		s.err = io.EOF
		if s.guard != nil && s.guard.Done() { // a body that ended or broke has nothing to drain
			_, _ = io.Copy(io.Discard, io.LimitReader(s.guard, drainLimit))
		}
		_ = s.Close()
		d := providers.Delta{Done: true, FinishReason: s.finish, Usage: s.usage, Model: s.p.errs.Field(s.model)}
		if d.FinishReason == "" {
			d.FinishReason = providers.FinishOther
		}
		if s.reasoning.Len() > 0 {
			d.Thinking = []providers.ThinkingBlock{{Text: s.reasoning.String()}}
		}
		if !s.sent {
			s.sent = true
			d.RateLimit = s.rl // an answer with no visible content: the Done delta is the first
		}
		return d, nil
	}
	return providers.Delta{}, s.fail(e)
}

// fail records e, completed with what the stream knows, as the terminal error. On failure the
// body stays open until the caller's Close: the caller may first report the failure to the
// resilience pipeline (see providers.Stream).
func (s *stream) fail(e *providers.Error) error {
	e.StatusCode = s.status
	if e.RequestID == "" {
		e.RequestID = wire.RequestID(s.header)
	}
	e.Partial = s.partial.String()
	if s.billed {
		u := s.usage
		e.Usage = &u
	}
	e.RateLimit = s.rl
	s.err = s.p.errs.Finish(e)
	return s.err
}

// bodyEnded reports whether err is the body's own end, clean or broken — the end of the data,
// a dropped connection, the pipeline's timeout, a limit — rather than something the server
// said (an error event, a chunk that is not JSON) or the caller's cancellation or Close.
func (s *stream) bodyEnded(err error) bool {
	if s.closed.Load() || s.Context.Err() != nil {
		return false
	}
	var limit *providers.LimitError
	return err == io.EOF || s.readErr() != nil || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &limit)
}

// failure maps an error from go-openai's Recv.
func (s *stream) failure(err error) *providers.Error {
	broke := s.readErr()
	var apiErr *goopenai.APIError
	if broke == nil && s.Context.Err() == nil && errors.As(err, &apiErr) {
		return s.p.streamError(apiErr, &s.exchange)
	}
	var e *providers.Error
	switch {
	case broke != nil:
		// The body broke under go-openai's reader: classify what the body failed with (the
		// pipeline's idle or total timeout, the caller's cancellation, a dropped connection).
		// go-openai may return another error in its place, pieced together from the lines it
		// kept before the break.
		e = s.p.errs.Failure(s.Context, "reading the stream", broke)
	case s.Context.Err() != nil:
		// The caller's own deadline or cancellation, wherever it struck.
		e = s.p.errs.Canceled(s.Context, err)
	case err == io.EOF:
		e = &providers.Error{Kind: providers.KindStreamTruncated,
			Message: "the stream ended before its finish_reason", Err: io.ErrUnexpectedEOF}
	case errors.Is(err, goopenai.ErrTooManyEmptyStreamMessages):
		e = &providers.Error{Kind: providers.KindUnavailable,
			Message: "the stream sent too many lines without data", Err: err}
	case isSyntax(err):
		e = s.p.errs.Malformed(s.events+1, err) // the chunk after the last one read
	default: // a limit
		e = s.p.errs.Failure(s.Context, "reading the stream", err)
	}
	return e
}

// isSyntax reports whether err is the JSON decoder's verdict on a chunk: not JSON at all, or
// JSON of the wrong shape.
func isSyntax(err error) bool {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	return errors.As(err, &se) || errors.As(err, &te)
}

// Close releases the connection. It is safe to call more than once (the calls after the first
// do nothing) and concurrently with Recv, which then fails.
func (s *stream) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	return s.st.Close()
}

var _ providers.TextKeeper = (*stream)(nil)

// Text returns the text delivered so far (providers.TextKeeper).
func (s *stream) Text() string { return s.partial.String() }
