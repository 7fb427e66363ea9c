package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/internal/wire"
)

// responsesStream is ChatStream over the Responses API. It returns once the response headers
// arrived: an HTTP error status is returned here, as a *providers.Error, never as a stream.
func (p *Provider) responsesStream(ctx context.Context, req *providers.ChatRequest) (providers.Stream, error) {
	body, err := p.responsesRequest(req, true)
	if err != nil {
		return nil, err
	}
	resp, err := p.responsesSend(ctx, body, true)
	if err != nil {
		return nil, err
	}
	if wire.IsJSON(resp.Header) {
		// A JSON 2xx cannot be the answer to a stream request: a gateway's error envelope,
		// usually. Classify it as such.
		defer resp.Body.Close()
		data, _, err := wire.ReadError(resp.Body, p.limits.MaxErrorBodyBytes)
		if err != nil {
			return nil, p.errs.ReadFailure(ctx, resp, "reading the response", err)
		}
		return nil, p.notAResponse(resp, data)
	}
	s := &respStream{ctx: ctx, p: p, body: resp.Body, sse: wire.NewSSEReader(resp.Body, p.limits.MaxEventBytes),
		reqID: p.errs.Field(wire.RequestID(resp.Header)), rl: providers.ParseRateLimit(resp.Header, time.Now()),
		store: req.Store == nil || *req.Store, background: req.Background, seq: -1}
	s.answer.Init(p.limits.MaxResponseBytes)
	return s, nil
}

// respStream is the providers.Stream of one streamed response.
//
// Its events are the API's semantic events, each a JSON object with its type (or, from
// servers that leave it out, the SSE event name). Text comes from response.output_text.delta; a function call
// opens with response.output_item.added (its call_id and name, a first ToolCallDelta) and
// grows with response.function_call_arguments.delta; reasoning comes from
// response.reasoning_summary_text.delta (and response.reasoning_text.delta, from servers that
// show their reasoning), and each reasoning item is completed, with its encrypted content, by
// its response.output_item.done. Refusal pieces (response.refusal.delta) are kept, never
// delivered as text.
//
// Complete means complete: the stream is done at response.completed (the Done delta, with the
// finish reason and the usage it carries), response.incomplete (FinishLength for
// max_output_tokens, a KindContentFiltered error for content_filter) or response.failed (the
// error the response carries, classified by its code), and Recv returns then, without
// waiting for the body's end. A background stream cut before then reads the rest of its
// answer instead of failing (responses_resume.go). A body that ends before one of them is
// KindStreamTruncated (cleanly) or the failure that broke it (KindUnavailable, the
// pipeline's KindTimeout, the caller's KindCanceled); an "error" event is classified by its code; an event that is not a
// JSON object is KindUnavailable naming it, and so is an answer that grows past
// Limits.MaxResponseBytes (wrapping a *providers.LimitError); a refusal is KindRefused once
// the response completed. Every failure carries the text delivered so far in Partial, the
// rate-limit snapshot of the response headers in RateLimit and, when the response reported
// it, its usage. The snapshot rides on the first delta the stream yields (the Done delta of an
// answer with no visible content), and the Done delta names the model the response named
// (response.created, response.completed). Events of other types (hosted tools, annotations,
// the done events whose pieces came as deltas) carry nothing the neutral stream has a place
// for.
//
// Recv must be called from one goroutine at a time; Close may be called from any goroutine,
// also while Recv blocks, to abort it.
type respStream struct {
	ctx   context.Context
	p     *Provider
	body  io.ReadCloser
	sse   *wire.SSEReader
	reqID string
	rl    *providers.RateLimit // the response headers' snapshot: the first delta's and every failure's
	sent  bool                 // a delta went out, with rl
	store bool                 // the request let the provider store the answer
	model string               // the model the response names, "" until it does

	// A background stream's resume state (responses_resume.go): the response's ID, the
	// sequence number of the last event handled (-1: none), the resumes made, and whether a
	// gap was seen in the sequence numbers; stop cancels the context of the resumed
	// connection, so that Close aborts a resume under way. mu guards body, sse and stop, which
	// a resume replaces, against Close.
	background bool
	stop       context.CancelFunc
	id         string
	seq        int
	resumes    int
	gap        bool
	mu         sync.Mutex

	// answer counts what the stream delivered and keeps against Limits.MaxResponseBytes;
	// partial is the text delivered so far, kept within it.
	answer   wire.Answer
	partial  wire.Text
	refusal  strings.Builder // the refusal streamed so far (at most wire.KeepText bytes)
	refused  bool
	events   int           // the events read so far, to name a malformed one
	tools    map[int]*tool // output_index → the function call it holds
	thinkAt  map[int]int   // output_index → index in thinking
	thinking []providers.ThinkingBlock
	// thinkText is the text each block of thinking has from its deltas, until the block's
	// done item or the stream's end sets it.
	thinkText []wire.Text
	// compaction is the answer's compaction item, from its response.output_item.done.
	compaction *providers.Compaction
	done       bool  // the Done delta was returned
	err        error // the terminal error, returned again by every later Recv

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// tool is a function call being streamed: its index among the answer's calls, and whether
// its arguments came (as deltas, or whole in its done events).
type tool struct {
	index int
	args  bool
}

// Recv returns the next delta; see respStream.
func (s *respStream) Recv() (providers.Delta, error) {
	if s.err != nil {
		return providers.Delta{}, s.err
	}
	if s.done {
		return providers.Delta{}, io.EOF
	}
	for {
		ev, err := s.sse.Next()
		if err != nil {
			e := s.readError(err)
			if s.resumable(err, e) {
				if e = s.resume(); e == nil {
					continue
				}
			}
			return providers.Delta{}, s.fail(e)
		}
		s.events++
		d, ok, e := s.handle(ev)
		if e != nil {
			return providers.Delta{}, s.fail(e)
		}
		if s.gap {
			// Events were lost: read them again from the last one handled.
			s.gap = false
			if e := s.resume(); e != nil {
				return providers.Delta{}, s.fail(e)
			}
			continue
		}
		if ok {
			s.answer.Add(&s.partial, d.Text) // counted as the event was handled
			if !s.sent {
				s.sent, d.RateLimit = true, s.rl
			}
			return d, nil
		}
	}
}

// handle interprets one event: the delta it yields for the caller (ok), or the error that
// ends the stream.
func (s *respStream) handle(ev wire.Event) (d providers.Delta, ok bool, e *providers.Error) {
	var x respEvent
	if err := json.Unmarshal(ev.Data, &x); err != nil || !isObject(ev.Data) {
		return d, false, s.p.errs.Malformed(s.events, err)
	}
	kind := x.Type
	if kind == "" {
		kind = ev.Name
	}
	if s.background && !s.inOrder(&x) {
		return d, false, nil
	}
	switch kind {
	case "response.created", "response.in_progress":
		s.named(x.Response)
	case "response.output_text.delta":
		return providers.Delta{Text: x.Delta}, x.Delta != "", s.take(len(x.Delta))
	case "response.refusal.delta":
		if e := s.take(len(x.Delta)); e != nil {
			return d, false, e
		}
		s.refused = true
		if room := wire.KeepText - s.refusal.Len(); room > 0 {
			s.refusal.WriteString(x.Delta[:min(len(x.Delta), room)])
		}
	case "response.output_item.added":
		if it := x.Item; it != nil {
			return s.itemAdded(x.OutputIndex, it)
		}
	case "response.function_call_arguments.delta":
		if t := s.tools[x.OutputIndex]; t != nil && x.Delta != "" {
			t.args = true
			return providers.Delta{ToolCalls: []providers.ToolCallDelta{{Index: t.index, Arguments: x.Delta}}}, true,
				s.take(len(x.Delta))
		}
	case "response.function_call_arguments.done":
		return s.argumentsDone(x.OutputIndex, x.Arguments)
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		if e := s.take(len(x.Delta)); e != nil {
			return d, false, e
		}
		if i, found := s.thinkAt[x.OutputIndex]; found {
			s.answer.Add(&s.thinkText[i], x.Delta)
		}
		return providers.Delta{Reasoning: x.Delta}, x.Delta != "", nil
	case "response.output_item.done":
		if it := x.Item; it != nil {
			return s.itemDone(x.OutputIndex, it)
		}
	case "response.completed", "response.incomplete", "response.failed":
		return s.finish(kind, x.Response)
	case "error":
		re := x.Error
		if re == nil {
			re = &respError{Code: x.Code, Message: x.Message, Param: x.Param}
		}
		return d, false, s.p.responseError(re)
	}
	return d, false, nil
}

// take counts n more bytes of the answer, and returns the error that ends the stream past
// Limits.MaxResponseBytes.
func (s *respStream) take(n int) *providers.Error {
	if err := s.answer.Take(n); err != nil {
		return s.p.errs.TooLong(err)
	}
	return nil
}

// named notes the model a response object (raw, of response.created or response.in_progress)
// names, for the Done delta.
func (s *respStream) named(raw json.RawMessage) {
	var r struct {
		Model string `json:"model"`
	}
	if json.Unmarshal(raw, &r) == nil && r.Model != "" {
		s.model = r.Model
	}
}

// itemAdded opens output item it at output index at: a function call yields its first
// ToolCallDelta (its call_id and name), a reasoning item opens a thinking block. Each counts
// against the answer's limit, with the record kept of it.
func (s *respStream) itemAdded(at int, it *respOutItem) (providers.Delta, bool, *providers.Error) {
	switch it.Type {
	case "function_call", "reasoning":
		if e := s.take(wire.BlockOverhead + len(it.ID) + len(it.CallID) + len(it.Name) + len(it.Arguments)); e != nil {
			return providers.Delta{}, false, e
		}
	}
	switch it.Type {
	case "function_call":
		if s.tools == nil {
			s.tools = map[int]*tool{}
		}
		t := &tool{index: len(s.tools), args: it.Arguments != ""}
		s.tools[at] = t
		return providers.Delta{ToolCalls: []providers.ToolCallDelta{{Index: t.index, ID: it.CallID, Name: it.Name,
			Arguments: it.Arguments}}}, true, nil
	case "reasoning":
		if s.thinkAt == nil {
			s.thinkAt = map[int]int{}
		}
		s.thinkAt[at] = len(s.thinking)
		s.thinking = append(s.thinking, providers.ThinkingBlock{ID: it.ID, Origin: s.p.scope})
		s.thinkText = append(s.thinkText, wire.Text{})
	}
	return providers.Delta{}, false, nil
}

// argumentsDone delivers the whole arguments of the call at output index at when none came as
// deltas (a server that sends them whole).
func (s *respStream) argumentsDone(at int, args string) (providers.Delta, bool, *providers.Error) {
	t := s.tools[at]
	if t == nil || t.args || args == "" {
		return providers.Delta{}, false, nil
	}
	t.args = true
	return providers.Delta{ToolCalls: []providers.ToolCallDelta{{Index: t.index, Arguments: args}}}, true, s.take(len(args))
}

// itemDone closes output item it: a reasoning item's block takes the item's final form (its
// encrypted content, which only the done event carries whole, and its summary), a function
// call's arguments come if none did, a compaction item is kept for the Done delta.
func (s *respStream) itemDone(at int, it *respOutItem) (providers.Delta, bool, *providers.Error) {
	switch it.Type {
	case "function_call":
		return s.argumentsDone(at, it.Arguments)
	case "compaction":
		s.compaction = s.p.compaction(it)
	case "reasoning":
		b := s.p.thinkingBlock(it)
		i, found := s.thinkAt[at]
		// What the item adds to what the stream keeps: its encrypted content, and, for an item
		// that was never added, its record and its text (the deltas brought the text of one
		// that was). A done item replaces its block: one repeated is counted again, never kept
		// twice.
		n := len(b.Encrypted)
		if !found {
			n += wire.BlockOverhead + len(b.ID) + len(b.Text)
		}
		if e := s.take(n); e != nil {
			return providers.Delta{}, false, e
		}
		if found {
			if b.Text == "" {
				b.Text = s.thinkText[i].String() // the deltas', when the done item repeats no summary
			}
			s.thinking[i] = b
		} else {
			s.thinking = append(s.thinking, b)
			s.thinkText = append(s.thinkText, wire.Text{})
		}
	}
	return providers.Delta{}, false, nil
}

// finish ends the stream at its terminal event kind, whose data carries the response: the
// Done delta of an answer, or the error of one that failed, was filtered or refused. A
// response that states no status has the one its event names.
func (s *respStream) finish(kind string, raw json.RawMessage) (providers.Delta, bool, *providers.Error) {
	var r respResponse
	if len(raw) == 0 || json.Unmarshal(raw, &r) != nil {
		return providers.Delta{}, false, s.p.errs.Malformed(s.events, errors.New("the terminal event carries no response object"))
	}
	if r.Status == "" {
		r.Status = strings.TrimPrefix(kind, "response.")
	}
	if r.Model != "" {
		s.model = r.Model
	}
	s.done = true
	u := r.Usage.neutral()
	finish, e := s.p.responseEnd(&r, s.refusal.String(), s.refused, len(s.tools) > 0)
	if e != nil {
		if r.Usage != nil {
			e.Usage = &u
		}
		return providers.Delta{}, false, e
	}
	for i := range s.thinking {
		if s.thinking[i].Text == "" {
			s.thinking[i].Text = s.thinkText[i].String() // a block whose done item did not come
		}
	}
	d := providers.Delta{Done: true, FinishReason: finish, Usage: u, Thinking: s.thinking, Compaction: s.compaction,
		Conversation: s.p.conversation(&r), Model: s.p.errs.Field(s.model)}
	if s.store && r.ID != "" {
		d.Stored = &providers.StoredResponse{ID: s.p.errs.Field(r.ID), Origin: s.p.scope}
	}
	// Nothing but the body's end can follow: release the connection now, so a server that
	// holds it open costs no wait.
	_ = s.Close()
	return d, true, nil
}

// readError turns the error that ended reading the body before the terminal event into the
// stream's error.
func (s *respStream) readError(err error) *providers.Error {
	switch {
	case s.closed.Load():
		return &providers.Error{Kind: providers.KindCanceled, Message: "the stream was closed", Err: err}
	case s.ctx.Err() == nil && errors.Is(err, io.EOF):
		return &providers.Error{Kind: providers.KindStreamTruncated,
			Message: "the stream ended before its terminal event (response.completed)", Err: io.ErrUnexpectedEOF}
	}
	return s.p.errs.Failure(s.ctx, "reading the stream", err)
}

// fail records e, completed with what the stream knows, as the terminal error. The connection
// stays open until the caller's Close, so that the caller can first report the failure to the
// resilience pipeline (see providers.Stream).
func (s *respStream) fail(e *providers.Error) error {
	e.StatusCode = http.StatusOK
	if e.RequestID == "" {
		e.RequestID = s.reqID
	}
	e.Partial = s.partial.String()
	e.RateLimit = s.rl
	s.err = s.p.errs.Finish(e)
	return s.err
}

// Close releases the connection. It is safe to call more than once and from any goroutine;
// every call returns the result of the first.
func (s *respStream) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.closed.Store(true)
		s.closeErr = s.body.Close()
		if s.stop != nil {
			s.stop()
		}
	})
	return s.closeErr
}

var _ providers.TextKeeper = (*respStream)(nil)

// Text returns the text delivered so far (providers.TextKeeper).
func (s *respStream) Text() string { return s.partial.String() }

// isObject reports whether data is a JSON object, as every event's data must be: json.Unmarshal
// takes null into a struct without a word.
func isObject(data []byte) bool {
	for _, c := range data {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c == '{'
	}
	return false
}
