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

// Stream is a streamed answer. Read it with Recv or range over Deltas. It is not safe for
// concurrent use, except Close.
type Stream struct {
	ctx      context.Context // the caller's, for telling its cancellation from a failure
	call     resilience.Call // the provider's context: CallInfo, and failures for the breaker
	provider string          // the deployment's name, in errors
	served   string          // the provider's name
	route    route           // the route it was sent to, for a rescue's decision
	est      estimate        // its route's estimate of the prompt, learnt from once its usage is known
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
	// continues: the rescue continues the answer (StreamRescue "continue"), for which the
	// stream notes what it delivered besides text: reasoning, and the tool calls (how many
	// began, the index of the last). join, on a stream that continues another's answer,
	// joins its deltas to what came before (see continue.go).
	continues bool
	reasoned  bool
	tools     int
	toolIndex int
	join      *joiner
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

// Text returns the text received so far: of the whole answer after a continuation, of the
// answer that replaced the first after a restart.
func (s *Stream) Text() string {
	s = s.current()
	if s.join != nil {
		return s.join.carried + s.ownText()
	}
	return s.ownText()
}

// ownText is the text s received itself, as delivered.
func (s *Stream) ownText() string {
	if s.text != nil {
		return s.text.String() // what accept kept: as delivered
	}
	if k, ok := s.inner.(providers.TextKeeper); ok {
		t := k.Text()
		if s.join != nil {
			t = t[min(s.join.skipped, len(t)):] // the whitespace that was not delivered again
		}
		return t
	}
	return ""
}

// Recv returns the next delta. After the delta with Done set it returns io.EOF. Any failure
// is a *providers.Error (KindStreamTruncated when the stream ended without its terminal
// event) with Partial holding the text received before it; the error repeats on later calls.
// With StreamRescue "continue", a failure after content is followed, when another route can
// continue the answer, by the rest of it, its first delta marked Continued; with "restart",
// when another route answers, by a delta marked Restart and the whole new answer instead.
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
		if s.join != nil {
			s.join.fix(&d)
		}
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
			if err == nil && n.join != nil {
				d.Continued = true
			} else if err == nil {
				d.Restart = true
			}
			return d, err
		}
		return providers.Delta{}, perr
	}
	if s.join != nil {
		s.join.fix(&d)
	}
	s.accept(d)
	return d, nil
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
	if s.continues {
		s.note(&d)
	}
	if d.Done {
		s.done = true
		s.spare()
		if d.Model != "" {
			s.servedModel = d.Model
		}
		d.Model = s.modelNamed() // for telemetry: the model that served, as Chat reports it
		s.pipe.SettleTokens(s.call.Info.TokensDebited, d.Usage.Total())
		learn(s.pipe, s.est, d.Usage.InputTokens)
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
