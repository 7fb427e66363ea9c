package client

import (
	"context"
	"errors"
	"io"
	"iter"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// ChatStream starts a streamed answer along the fallback chain. It waits for the first
// content (text, reasoning, a tool call, or the end of the stream) before returning, so that every
// failure before that point — an error status, an error event inside the 200 stream, a
// stream that ends early, no first token within FirstTokenTimeoutSeconds (headers or not) —
// can still be retried by the pipeline or answered by the next route. A route whose first token
// did not come in time is not tried again when another route can serve.
//
// What a failure after content does is the call's StreamRescue (its policy's, or WithRescue):
//   - "off" (the default): the failure is a *providers.Error that carries the text received so
//     far in Partial;
//   - "restart": the next route (another deployment, else the next provider, as for a failure
//     before content) is asked for the whole answer, which the stream then delivers after a
//     delta marked Restart — discard what you have; a failure of the rescue too ends the stream
//     with the first failure;
//   - "buffer": ChatStream returns only once the whole answer has arrived, and delivers it from
//     memory: a failure at any point moves to the next route unseen (all-or-nothing, for JSON).
//
// No route continues another's partial answer (by assistant prefill or otherwise): a rescue
// always asks for the whole answer again.
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
	if s.restarts {
		// The walk as it stands (the routes tried) and the call's operation, for the rest of
		// the chain: a copy, so that a call without rescue keeps them where they were made.
		// Taken here, on the walk's goroutine: a hedged try runs on its own.
		s.rescue = &rescuer{w: *w}
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
	r := withModel(req, t.model)
	tokens := d.preflight(ctx, t.key, r, op.tokens, op.prior, op.tr)
	s := &Stream{ctx: ctx, provider: d.name, served: d.owner, route: t.route}
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
	limit := d.firstContent // without a first-token limit: the total timeout bounds the wait
	// A request that asks for reasoning may think for minutes before its first token on
	// models that stream no reasoning (OpenAI's): it waits as without a limit, unless the
	// call set one itself.
	if pol.FirstTokenTimeout() > 0 && (req.Reasoning == nil || (o != nil && o.firstToken != nil)) {
		s.call.AwaitFirstToken()
		limit = 0 // the pipeline bounds it, from the moment the call is sent
	}
	mode := pol.Rescue()
	if o != nil && o.rescue != "" {
		mode = o.rescue
	}
	inner, err := d.provider.ChatStream(&s.call, r)
	if err != nil {
		return nil, &s.call.Info, err
	}
	s.inner = inner
	if _, keeps := inner.(providers.TextKeeper); !keeps {
		s.text = new(strings.Builder) // a third-party stream: keep the text here
	}
	s.pending = s.first[:0]
	if perr := s.awaitContent(op.c.clock, limit, mode == resilience.RescueBuffer); perr != nil {
		return nil, &s.call.Info, perr
	}
	s.restarts = mode == resilience.RescueRestart
	if !s.restarts && o != nil && o.restartGone {
		s.restarts, s.goneOnly = true, true // a rescue for a gone answer alone (WithRestartIfGone)
	}
	return s, &s.call.Info, nil
}

// rescuer restarts a stream that failed after content on the rest of its chain: the walk as
// it stood when the stream served (the call's operation with it).
type rescuer struct {
	w walk
}

// Stream is a streamed answer. Read it with Recv or range over Deltas. It is not safe for
// concurrent use, except Close.
type Stream struct {
	ctx      context.Context // the caller's, for telling its cancellation from a failure
	call     resilience.Call // the provider's context: CallInfo, and failures for the breaker
	provider string          // the deployment's name, in errors
	served   string          // the provider's name
	route    route           // the route it was sent to, for a rescue's decision
	model    string          // the model the provider was asked for
	inner    providers.Stream
	pending  []providers.Delta  // received while waiting for the first content
	first    [1]providers.Delta // pending's room for the usual case: the first content alone
	// run is what the last delta a buffered stream holds is a piece of (see buffer), and
	// runText the pieces merged into it so far (of the tool call runIndex).
	run      piece
	runIndex int
	runText  strings.Builder
	text     *strings.Builder // the text delivered, when inner is no providers.TextKeeper
	err      error            // sticky
	done     bool
	closed   atomic.Bool
	tel      *streamTelemetry // nil without telemetry
	rl       *providers.RateLimit
	pipe     *resilience.Pipeline // settles the token estimate when the usage arrives
	acct     Accounting

	// servedModel is the model that served as the server named it (the Done delta's Model),
	// "" until the Done delta, or when the server named none.
	servedModel string
	// kept is the size of the answer so far when its text is kept here (text is not nil),
	// bounded by maxKeptAnswer.
	kept int64

	// c prices the stream's try with bill (see charge), once: billed is set, and cost holds
	// the call's cost (acct's and the try's), under mu.
	c       *Client
	bill    bill
	billed  bool
	cost    providers.CallCost
	tryCost providers.CallCost
	// ticket is what the call holds in the client's budgets (nil: none), settled once when
	// the call ends with the cost of the whole call; usage is the Done delta's, for it.
	ticket *cost.Ticket
	usage  providers.Usage
	// delivered counts the bytes of text given to the caller, for an estimate of what the
	// server generated when it reported no usage.
	delivered atomic.Int64

	// rescue, when the call's StreamRescue is "restart" (restarts), restarts the call on the
	// rest of its chain after a failure; next is the stream that took over, to which
	// everything defers.
	restarts bool
	goneOnly bool // the rescue is for a gone answer only (WithRestartIfGone without "restart")
	rescue   *rescuer
	// release, for the try of a hedged call that won, ends the context the stream reads
	// under (see hold); deadline, for the stream ChatStream returned, is the whole-call
	// deadline whose context it reads under, released at Close.
	release  func()
	deadline *callDeadline
	mu       sync.Mutex // guards next against Close from another goroutine
	next     *Stream
}

// current returns the stream that serves now: s, or the one that took over after a rescue.
func (s *Stream) current() *Stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next != nil {
		return s.next.current()
	}
	return s
}

// RateLimit returns what the provider's rate-limit headers said when the stream began, nil
// when it sent none.
func (s *Stream) RateLimit() *providers.RateLimit { return s.current().rl }

// Accounting returns what the call cost beyond its answer: the HTTP attempts that failed
// before the one that serves now, and the usage servers reported for abandoned attempts.
func (s *Stream) Accounting() Accounting { return s.current().acct }

// streamTelemetry reports the end of a stream's call, once: at the Done delta, at a failure
// or at Close, whichever comes first.
type streamTelemetry struct {
	tracker CallTracker
	result  TryResult // filled in when the first content arrived
	start   time.Time
	ended   atomic.Bool
}

// end reports the stream's try and call as ended with perr (nil for success), having cost cc;
// closed marks a stream the caller closed before its end.
func (t *streamTelemetry) end(perr *providers.Error, last providers.Delta, closed bool, cc providers.CallCost) {
	if t.tryDone(perr, last, closed, cc) {
		var err error // not perr itself: a nil *providers.Error is a non-nil error
		if perr != nil {
			err = perr
		}
		t.tracker.End(err)
	}
}

// tryDone reports the stream's try as ended, having cost cc, once, and whether this call
// reported it.
func (t *streamTelemetry) tryDone(perr *providers.Error, last providers.Delta, closed bool, cc providers.CallCost) bool {
	if t == nil || !t.ended.CompareAndSwap(false, true) {
		return false
	}
	r := t.result
	r.Duration = time.Since(t.start)
	r.Err, r.Closed, r.Cost = perr, closed, cc
	r.FinishReason, r.Usage, r.ResponseModel = last.FinishReason, last.Usage, last.Model
	t.tracker.TryDone(r)
	return true
}

// Provider returns the name of the provider that serves the stream.
func (s *Stream) Provider() string { return s.current().served }

// Deployment returns the deployment that serves the stream, "<provider>/<deployment>", or the
// provider's name for a provider of one.
func (s *Stream) Deployment() string { return s.current().provider }

// Model returns the model that serves the stream, as ChatResponse.Model does for a whole
// answer: once the stream has delivered its Done delta, the model that served as the server
// named it (providers.Delta.Model); before that, or when the server named none, the model the
// serving provider was asked for (after the client's model mapping for a fallback, or the
// provider's own default when the call named none); "" when nobody named one.
func (s *Stream) Model() string { return s.current().modelNamed() }

// modelNamed is Model for s itself.
func (s *Stream) modelNamed() string {
	if s.servedModel != "" {
		return s.servedModel
	}
	return s.model
}

// Text returns the text received so far (after a restart, of the answer that replaced the
// first).
func (s *Stream) Text() string {
	s = s.current()
	if s.text != nil {
		return s.text.String()
	}
	if k, ok := s.inner.(providers.TextKeeper); ok {
		return k.Text()
	}
	return ""
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
	if d.Restart || d.Done || d.FinishReason != "" || d.RateLimit != nil || d.Model != "" || d.Usage != (providers.Usage{}) ||
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

// Recv returns the next delta. After the delta with Done set it returns io.EOF. Any failure
// is a *providers.Error (KindStreamTruncated when the stream ended without its terminal
// event) with Partial holding the text received before it; the error repeats on later calls.
// With StreamRescue "restart", a failure after content is followed, when another route
// answers, by a delta marked Restart and the whole new answer instead.
func (s *Stream) Recv() (providers.Delta, error) {
	if n := s.taken(); n != nil {
		return n.Recv()
	}
	if s.err != nil {
		return providers.Delta{}, s.err
	}
	if len(s.pending) > 0 {
		d := s.pending[0]
		s.pending = s.pending[1:]
		s.accept(d)
		return d, nil
	}
	if s.done {
		return providers.Delta{}, io.EOF
	}
	d, err := s.inner.Recv()
	if err == nil && s.text != nil {
		err = s.keep(&d)
	}
	if err != nil {
		if err == io.EOF {
			err = &providers.Error{Provider: s.provider, Kind: providers.KindStreamTruncated,
				Message: "stream ended without its final event"}
		}
		perr := s.fail(err)
		if n := s.restart(perr); n != nil {
			d, err := n.Recv()
			if err == nil {
				d.Restart = true
			}
			return d, err
		}
		return providers.Delta{}, perr
	}
	s.accept(d)
	return d, nil
}

// taken returns the stream that took over after a rescue, nil when none did.
func (s *Stream) taken() *Stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

// restart rescues the call after perr, a failure after content, when its StreamRescue is
// "restart" and the failure may go on (as before content: ErrorKind.FallsBack, or the kind's
// FallbackOn): it asks the rest of the chain for the whole answer and returns the stream that
// takes over, nil when there is none (the rescue's own failures are in the walk). The
// telemetry of the call ends with the rescue.
func (s *Stream) restart(perr *providers.Error) *Stream {
	r := s.rescue
	if r == nil || s.closed.Load() || (s.goneOnly && !providers.Gone(perr)) {
		s.tel.end(perr, providers.Delta{}, false, s.charged())
		s.settle()
		return nil
	}
	s.rescue = nil
	w := &r.w
	w.failures = append(w.failures, perr)
	// The walk was copied before the route served: its retries of that route are in s.acct.
	w.acct = s.acct
	w.acct.FailedAttempts++ // the attempt that served, then failed
	if perr.Usage != nil {
		w.acct.AbandonedUsage = w.acct.AbandonedUsage.Add(*perr.Usage)
	}
	w.acct.Cost = w.acct.Cost.Add(s.charged())
	// As before content: one decision (decide) — go on along the rest of the chain, or to the
	// providers of the kind's own chain, or ask the route that lost a stored answer again.
	at := attempt{route: s.route}
	if v, to := w.decide(perr, &at); !w.follow(v, to, &at) {
		s.tel.end(perr, providers.Delta{}, false, s.charged())
		s.settle()
		return nil
	}
	s.tel.tryDone(perr, providers.Delta{}, false, s.charged()) // the call goes on: the rescue ends it
	_ = s.inner.Close()
	resp, err := w.run()
	if err != nil {
		// The walk ended the call's telemetry with its error; the budgets hear of every try.
		w.c.settle(s.ticket, w.acct.Cost, "", "", providers.Usage{}, s.bill)
		return nil
	}
	n := resp.(*Stream)
	s.mu.Lock()
	s.next = n
	closed := s.closed.Load()
	s.mu.Unlock()
	if closed {
		_ = n.Close()
	}
	return n
}

func (s *Stream) accept(d providers.Delta) {
	if d.RateLimit != nil {
		s.rl = d.RateLimit
	}
	if s.text != nil && d.Text != "" {
		if need := s.text.Len() + len(d.Text); need > s.text.Cap() {
			// Doubling, but never past the bound: a builder left to itself doubles past it.
			b := new(strings.Builder)
			b.Grow(max(min(2*s.text.Cap(), maxKeptAnswer), need))
			b.WriteString(s.text.String())
			s.text = b
		}
		s.text.WriteString(d.Text)
	}
	if d.Text != "" {
		s.delivered.Add(int64(len(d.Text)))
	}
	if d.Done {
		s.done = true
		if d.Model != "" {
			s.servedModel = d.Model
		}
		d.Model = s.modelNamed() // for telemetry: the model that served, as Chat reports it
		s.pipe.SettleTokens(s.call.Info.TokensDebited, d.Usage.Total())
		s.tel.end(nil, d, false, s.charge(&d.Usage, nil))
		s.settle()
	}
}

// maxKeptAnswer bounds the answer of a stream whose provider keeps no text of its own (no
// providers.TextKeeper), whose text the client keeps: the default of Limits.MaxResponseBytes,
// which bounds the streams of this module's providers unless configured otherwise. A provider
// with another bound keeps its text itself.
const maxKeptAnswer = providers.DefaultMaxResponseBytes

// keep counts delta d of a provider that keeps no text against maxKeptAnswer, as this module's
// providers count theirs: its text, reasoning and tool calls. Past it the stream fails,
// KindUnavailable wrapping a *providers.LimitError, with the text kept so far.
func (s *Stream) keep(d *providers.Delta) error {
	n := len(d.Text) + len(d.Reasoning)
	for _, tc := range d.ToolCalls {
		n += len(tc.ID) + len(tc.Name) + len(tc.Arguments)
	}
	if s.kept+int64(n) > maxKeptAnswer {
		return &providers.Error{Provider: s.provider, Kind: providers.KindUnavailable,
			Message: "the streamed answer exceeds the client's bound on the text it keeps for a provider that keeps none",
			Err:     &providers.LimitError{Limit: "MaxResponseBytes", Max: maxKeptAnswer}}
	}
	s.kept += int64(n)
	return nil
}

// fail classifies err, records it as the stream's sticky error, and reports failures that
// mean the provider is unwell to its circuit breaker.
func (s *Stream) fail(err error) *providers.Error {
	perr := classify(s.ctx, s.provider, err, &s.call.Info)
	perr.Partial = s.Text()
	if perr.Kind.Unwell() {
		s.call.ReportFailure(perr)
	}
	if perr.Kind == providers.KindOverloaded {
		s.call.ReportOverload() // for an adaptive concurrency limit: no status showed it
	}
	s.err = perr
	cc := s.charge(nil, perr)
	if s.rescue == nil {
		s.tel.end(perr, providers.Delta{}, false, cc)
		s.settle()
	}
	return perr
}

// Deltas ranges over the remaining deltas. A failure ends the range with a non-nil error.
func (s *Stream) Deltas() iter.Seq2[providers.Delta, error] {
	return func(yield func(providers.Delta, error) bool) {
		for {
			d, err := s.Recv()
			if errors.Is(err, io.EOF) {
				return
			}
			if !yield(d, err) || err != nil {
				return
			}
		}
	}
}

// Close releases the stream's connection and its bulkhead slot (and those of the stream that
// took over after a rescue). It is safe to call more than once, and from another goroutine to
// abort a Recv.
func (s *Stream) Close() error {
	s.mu.Lock()
	n := s.next
	already := s.closed.Swap(true)
	s.mu.Unlock()
	if n != nil {
		_ = n.Close()
	}
	if already {
		return nil
	}
	s.tel.end(nil, providers.Delta{}, true, s.charge(nil, nil))
	s.settle()
	err := s.inner.Close()
	if s.release != nil {
		s.release()
	}
	s.deadline.release()
	return err
}

// hold gives the stream the release of the context it reads under, which Close calls: the
// try of a hedged call runs under a context of its own, cancelled for the tries that lose.
func (s *Stream) hold(release func()) { s.release = release }
