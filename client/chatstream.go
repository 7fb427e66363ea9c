package client

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// ChatStream starts a streamed answer along the fallback chain. It waits for the first
// content (text, reasoning, a tool call, or the end of the stream) before returning, so that every
// failure before that point — an error status, an error event inside the 200 stream, a
// stream that ends early, no first token within FirstTokenTimeoutSeconds or TimeoutSeconds,
// whichever is tighter (headers and keep-alives or not) — can still be retried by the pipeline
// or answered by the next route. A route whose first token did not come in time is not tried
// again when another route can serve, nor when the policy allows no retries (RetryCount 0).
//
// After content, a stream silent for longer than its route's rhythm allows (StreamStallFactor
// times the 99th percentile of its recent waits for bytes, within StreamStallMinSeconds and
// StreamStallMaxSeconds) has stalled: a timeout (resilience.TimeoutStreamStall), long before
// StreamIdleTimeoutSeconds.
//
// What a failure after content does is the call's StreamRescue (its policy's, or WithRescue):
//   - "continue" (the default): the next route that can continue an answer — an assistant
//     prefill, or a continuation prompt where WithContinuation declares one — is sent the
//     question and the answer so far and asked for the rest, which the stream delivers after
//     a delta marked Continued: nothing repeated, nothing taken back. A route that cannot is
//     skipped, never sent the partial answer; where none can (or the answer is past the
//     carry-over bound, or streamed reasoning), the failure is the error, as with "off". A tool
//     call cut mid-arguments is asked for again and delivered whole, its first fragment marked
//     ToolCallDelta.Restart (see Continuation);
//   - "continue-or-buffer": "continue", but a stream that no route after its own could continue
//     is buffered, as with "buffer";
//   - "off": the failure is a *providers.Error that carries the text received so far in
//     Partial;
//   - "restart": the next route (another deployment, else the next provider, as for a failure
//     before content) is asked for the whole answer, which the stream then delivers after a
//     delta marked Restart — discard what you have; a failure of the rescue too ends the stream
//     with the first failure;
//   - "buffer": ChatStream returns only once the whole answer has arrived, and delivers it from
//     memory: a failure at any point moves to the next route unseen (all-or-nothing, for JSON).
//
// A rescue that fails (a refused prefill included) ends the stream with the failure that cut
// it, not the rescue's.
//
// An overload or a break inside a stream is reported to that provider's circuit breaker as
// a failure, although the stream began with 200. Always Close the stream.
func (c *Client) ChatStream(ctx context.Context, req *providers.ChatRequest, opts ...CallOption) (*Stream, error) {
	op := operation{kind: OperationChat, stream: true, chat: req, o: collect(opts)}
	s, err := c.call(ctx, &op)
	if err != nil {
		return nil, c.failed(op.o, err)
	}
	return s.(*Stream), nil
}

// handOver ends the prologue of a stream's call, whose walk ended with resp or err, the
// attempts it abandoned having cost acct.Cost: the stream is handed to the caller, its
// whole-call deadline no longer applying — cutting a healthy answer at an arbitrary point would
// turn it into a truncated one that no rescue can save, and the idle limit and the caller's
// context bound the rest — or the call ends, its budgets settled.
func (op *operation) handOver(resp any, err error, acct *Accounting) (any, error) {
	dl := op.dl
	if err != nil {
		dl.release()
		op.settle(nil, err, acct)
		return nil, err
	}
	s := resp.(*Stream)
	if !dl.detach() {
		// The deadline ran out as the stream was handed over: its context is ended, so the
		// call is the deadline's, as it would have been a moment earlier.
		perr := s.fail(dl.cause())
		_ = s.Close()
		dl.release()
		return nil, perr
	}
	s.deadline = dl
	return s, nil
}

// serveStream completes the stream s that attempt at served (res: its telemetry, nil
// without), the walk w having got there, and reports whether the call goes on (it does, and
// reports its own end, when it has telemetry).
func (op *operation) serveStream(w *walk, s *Stream, at *attempt, res *TryResult) bool {
	s.model, s.acct, s.c, s.bill, s.ticket = at.key, w.acct, op.c, op.bill, op.ticket
	if s.continues && !w.continuable() {
		// No route could continue it: a failure after content is the answer — unless it is an
		// answer that is gone and the call starts over then (WithRestartIfGone).
		s.continues = false
		s.restarts, s.goneOnly = op.o != nil && op.o.restartGone, true
	}
	if s.restarts {
		// The walk as it stands (the routes tried) and the call's operation, for the rest of
		// the chain: a copy, so that a call without rescue keeps them where they were made.
		// Taken here, on the walk's goroutine: a hedged try runs on its own.
		s.ready(w)
	}
	if res == nil {
		return false
	}
	res.TimeToFirstChunk = res.Duration
	s.tel = &streamTelemetry{tracker: op.tr, result: *res, start: time.Now().Add(-res.Duration)}
	return true // the stream reports its end when it ends
}

// streamTry makes the try t of the stream op: it returns once the first content arrived (or,
// in buffer mode, the whole answer).
func (op *operation) streamTry(ctx context.Context, t try) (*Stream, *resilience.CallInfo, error) {
	d, req, o := t.d, op.chat, op.o
	if k := op.cont; k != nil && k.prefill != "" {
		req = k.request(req, op.c.continuesBy(t.route, req))
	}
	r := withModel(req, t.model)
	tokens, est := op.c.preflight(ctx, t, r, op.prior, op.tr)
	s := &Stream{ctx: ctx, provider: d.name, served: d.owner, route: t.route, est: est}
	pol := op.pl.policyFor(d, o)
	t.setUp(&s.call, ctx, true, pol, o, tokens) // the stream reports in-stream failures to the breaker
	s.pipe = d.pipeline.Route(t.key)
	if pol == nil {
		pol = d.pipeline.Policy()
	}
	if o != nil && o.firstToken != nil {
		pol = pol.WithFirstTokenTimeout(*o.firstToken)
		s.call.Policy = pol
	}
	// The pipeline holds the try to TimeoutSeconds until its first content, and to the stall
	// limit after it: the stream reports its content (FirstToken).
	s.call.WatchStream()
	limit := d.firstContent // without a first-token limit: the total timeout bounds the wait
	// A request that asks for reasoning may think for minutes before its first token on
	// models that stream no reasoning (OpenAI's): it waits as without a limit, unless the
	// call set one itself.
	if pol.FirstTokenTimeout() > 0 && (req.Reasoning == nil || (o != nil && o.firstToken != nil)) {
		s.call.AwaitFirstToken()
		limit = 0 // the pipeline bounds it, from the moment the call is sent
	}
	mode := op.rescueMode(d)
	inner, err := d.provider.ChatStream(&s.call, r)
	if err != nil {
		return nil, &s.call.Info, err
	}
	s.inner = inner
	if _, keeps := inner.(providers.TextKeeper); !keeps {
		s.text = new(strings.Builder) // a third-party stream: keep the text here
	}
	s.pending = s.first[:0]
	whole := mode == resilience.RescueBuffer || mode == resilience.RescueContinueOrBuffer && t.noContinue
	if perr := s.awaitContent(op.c.clock, limit, whole); perr != nil {
		return nil, &s.call.Info, perr
	}
	switch {
	case mode == resilience.RescueRestart:
		s.restarts = true
	case (mode == resilience.RescueContinue || mode == resilience.RescueContinueOrBuffer) && !whole:
		s.restarts, s.continues = true, true
	}
	if !s.restarts && o != nil && o.restartGone {
		s.restarts, s.goneOnly = true, true // a rescue for a gone answer alone (WithRestartIfGone)
	}
	return s, &s.call.Info, nil
}

// awaitContent reads until the first delta that carries content or ends the stream — with
// whole, until the stream ends — within limit (0 = no limit of its own: the pipeline's
// first-token limit, or none), on clock (nil: the wall clock), the client's. The first
// content ends the pipeline's first-token limit. On failure it closes the stream and returns
// the classified error.
func (s *Stream) awaitContent(clock resilience.Clock, limit time.Duration, whole bool) *providers.Error {
	var expired atomic.Bool
	var timer resilience.Timer
	if limit > 0 {
		after := func(d time.Duration, f func()) resilience.Timer { return time.AfterFunc(d, f) }
		if clock != nil {
			after = clock.AfterFunc
		}
		timer = after(limit, func() {
			expired.Store(true)
			_ = s.inner.Close() // unblocks Recv
		})
	}
	content := false
	for {
		d, err := s.inner.Recv()
		if err == nil && s.text != nil {
			err = s.keep(&d)
		}
		if err == nil && d.RateLimit != nil {
			s.rl = d.RateLimit // known as soon as ChatStream returns
		}
		if err == nil && !content && (d.Text != "" || d.Reasoning != "" || len(d.ToolCalls) > 0 || d.Done) {
			content = true
			s.call.FirstToken()
			if timer != nil && !timer.Stop() {
				// The limit struck as the content arrived, and closes the stream under it (its
				// func may not have run yet).
				expired.Store(true)
				err = errFirstContent
			}
			// The limit is the first content's: the rest of a buffered answer (whole) has the
			// idle limit, as a stream read by the caller does.
			timer = nil
		}
		if err == nil && (!content || (whole && !d.Done)) {
			if whole {
				s.buffer(d)
			} else {
				s.pending = append(s.pending, d)
			}
			continue
		}
		if err != nil {
			if timer != nil {
				timer.Stop()
			}
			if expired.Load() {
				err = &providers.Error{Provider: s.provider, Kind: providers.KindTimeout,
					Message: "no content within " + limit.String(), Err: resilience.ErrTimeout}
			} else if err == io.EOF {
				err = &providers.Error{Provider: s.provider, Kind: providers.KindStreamTruncated,
					Message: "stream ended before any content"}
			}
			perr := s.fail(err)
			_ = s.Close()
			return perr
		}
		s.endRun()
		s.pending = append(s.pending, d)
		return nil
	}
}

var errFirstContent = errors.New("first content arrived after the limit")

// A buffered stream (StreamRescue "buffer") holds its whole answer before it delivers any of
// it. It holds it as a few deltas, not as the server sent it: a delta that is only a piece of
// text, of reasoning or of one tool call's arguments is merged into the one before it when that
// is a piece of the same, so that an answer sent in a million tiny pieces takes the memory of
// its text (which Limits.MaxResponseBytes bounds), not a million deltas.

// piece is what a delta that is only a fragment carries.
type piece uint8

// The pieces.
const (
	noPiece        piece = iota // the delta carries more than one fragment, or something else
	textPiece                   // Text alone
	reasoningPiece              // Reasoning alone
	argsPiece                   // one tool call's Arguments alone (no ID, no name)
)

// pieceOf returns what delta d is a piece of, the piece itself, and the tool call's index.
func pieceOf(d *providers.Delta) (piece, string, int) {
	if d.Restart || d.Continued || d.Done || d.FinishReason != "" || d.RateLimit != nil || d.Model != "" || d.Usage != (providers.Usage{}) ||
		d.Thinking != nil || d.ProviderBlocks != nil || d.Stored != nil || d.Compaction != nil || d.Conversation != nil {
		return noPiece, "", 0
	}
	switch {
	case d.Text != "" && d.Reasoning == "" && len(d.ToolCalls) == 0:
		return textPiece, d.Text, 0
	case d.Reasoning != "" && d.Text == "" && len(d.ToolCalls) == 0:
		return reasoningPiece, d.Reasoning, 0
	case len(d.ToolCalls) == 1 && d.Text == "" && d.Reasoning == "" && d.ToolCalls[0].ID == "" && d.ToolCalls[0].Name == "":
		return argsPiece, d.ToolCalls[0].Arguments, d.ToolCalls[0].Index
	}
	return noPiece, "", 0
}

// buffer appends d to the answer a buffered stream holds, merging it into the last delta held
// when both are pieces of the same.
func (s *Stream) buffer(d providers.Delta) {
	p, text, index := pieceOf(&d)
	if p != noPiece && p == s.run && (p != argsPiece || index == s.runIndex) {
		s.runText.WriteString(text)
		return
	}
	s.endRun()
	if p == argsPiece {
		d.ToolCalls = slices.Clone(d.ToolCalls) // the merged arguments are written into it
	}
	s.pending = append(s.pending, d)
	if p != noPiece {
		s.run, s.runIndex = p, index
		s.runText.WriteString(text)
	}
}

// endRun writes the pieces merged since the last delta held into it.
func (s *Stream) endRun() {
	if s.run == noPiece {
		return
	}
	d := &s.pending[len(s.pending)-1]
	switch s.run {
	case textPiece:
		d.Text = s.runText.String()
	case reasoningPiece:
		d.Reasoning = s.runText.String()
	case argsPiece:
		d.ToolCalls[0].Arguments = s.runText.String()
	}
	s.run, s.runText = noPiece, strings.Builder{}
}
