package openai

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/providers/internal/wire"
)

// A streamed background answer (ChatRequest.Background on ChatStream) outlives its connection:
// the provider keeps producing it and keeps its events, numbered by sequence_number. When the
// stream is cut — the connection broke, the body ended before the terminal event, the
// pipeline's idle timeout struck — the stream reads the rest of the same answer with GET
// /responses/{id}?stream=true&starting_after=N, N the sequence number of the last event it
// handled, and the caller sees no cut: no event lost, none twice. This is no retry of the
// request (nothing is asked again, nothing is billed twice), so it happens inside the stream,
// on the same route, before the client's rescue could send the call elsewhere.
//
// The sequence numbers are checked on every background stream: an event whose number is not
// above the last one handled is a repeat and is skipped; one past the next expected is a gap,
// and the stream resumes from the last event handled. A stream resumes at most
// maxStreamResumes times; past that, or when the cut came before the response named its ID,
// after the caller's Close or cancellation, or for a failure a resume cannot mend (a limit
// passed, an error event), the stream fails as any other does. A resume the server answers
// with 404 means the answer is gone (its retention ended, it was deleted, another key or
// project): the stream fails with providers.CodeResponseGone and the text it delivered, and the
// client does not ask anyone for the answer again (see providers.ErrResponseGone).

// maxStreamResumes bounds the resumes of one background stream.
const maxStreamResumes = 8

// inOrder reads the sequence number and the response ID of event x of a background stream. It
// reports whether x is to be handled: false for a repeat (skipped) and for a gap (s.gap set:
// Recv resumes). An event without a sequence number is handled.
func (s *respStream) inOrder(x *respEvent) bool {
	if s.id == "" && len(x.Response) > 0 {
		var r struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(x.Response, &r) == nil && len(r.ID) <= maxStoredIDLen {
			s.id = r.ID
		}
	}
	if x.SequenceNumber == nil {
		return true
	}
	switch n := *x.SequenceNumber; {
	case n <= s.seq:
		return false
	case s.seq >= 0 && n > s.seq+1:
		s.gap = true
		return false
	default:
		s.seq = n
		return true
	}
}

// resumable reports whether the read failure err (e, as the stream reads it) may be mended by
// reading the rest of the answer again.
func (s *respStream) resumable(err error, e *providers.Error) bool {
	var le *providers.LimitError
	switch {
	case !s.background || s.id == "" || s.done || s.closed.Load() || s.ctx.Err() != nil, errors.As(err, &le),
		s.resumes >= maxStreamResumes:
		return false
	}
	switch e.Kind {
	case providers.KindStreamTruncated, providers.KindUnavailable, providers.KindTimeout:
		return true
	}
	return false
}

// resume replaces the stream's body with the rest of the answer, after the last event handled;
// the error when it cannot.
func (s *respStream) resume() *providers.Error {
	if s.resumes >= maxStreamResumes {
		return &providers.Error{Kind: providers.KindStreamTruncated,
			Message: "the background stream was cut " + strconv.Itoa(s.resumes+1) + " times; it is not resumed again"}
	}
	s.resumes++
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		return &providers.Error{Kind: providers.KindCanceled, Message: "the stream was closed"}
	}
	_ = s.body.Close() // the cut connection, released before another is opened
	if s.stop != nil {
		s.stop()
	}
	ctx, stop := context.WithCancel(s.ctx)
	s.stop = stop
	s.mu.Unlock()
	u := s.p.responses.url + "/" + url.PathEscape(s.id) + "?stream=true"
	if s.seq >= 0 {
		u += "&starting_after=" + strconv.Itoa(s.seq)
	}
	resp, err := s.p.responsesDo(ctx, http.MethodGet, u, nil, true)
	if err != nil {
		var pe *providers.Error
		if errors.As(err, &pe) {
			return s.p.storedGone(pe, s.id, "the cut stream cannot be resumed, and it is not asked for again, "+
				"which would produce and bill the answer twice (Partial holds the text delivered)")
		}
		return s.p.errs.Failure(ctx, "resuming the stream", err)
	}
	if wire.IsJSON(resp.Header) {
		defer resp.Body.Close()
		data, _, err := wire.ReadError(resp.Body, s.p.limits.MaxErrorBodyBytes)
		if err != nil {
			return s.p.errs.ReadFailure(ctx, resp, "resuming the stream", err)
		}
		return s.p.notAResponse(resp, data)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		_ = resp.Body.Close()
		return &providers.Error{Kind: providers.KindCanceled, Message: "the stream was closed"}
	}
	s.body, s.sse = resp.Body, wire.NewSSEReader(resp.Body, s.p.limits.MaxEventBytes)
	if id := wire.RequestID(resp.Header); id != "" {
		s.reqID = s.p.errs.Field(id)
	}
	return nil
}
