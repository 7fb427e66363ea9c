package client

import (
	"context"
	"errors"
	"io"
	"iter"
	"strings"
	"sync/atomic"
	"time"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// ChatStream starts a streamed answer along the fallback chain. It waits for the first
// content (text, reasoning, a tool call, or the end of the stream) before returning, so that every
// failure before that point — an error status, an error event inside the 200 stream, a
// stream that ends early, no content within the provider's TimeoutSeconds — can still be
// retried by the pipeline or answered by the next provider. Once content has reached the
// caller there is no going back: a later failure is a *providers.Error that carries the
// text received so far in Partial.
//
// An overload or a break inside a stream is reported to that provider's circuit breaker as
// a failure, although the stream began with 200. Always Close the stream.
func (c *Client) ChatStream(ctx context.Context, req *providers.ChatRequest, opts ...CallOption) (*Stream, error) {
	o := collect(opts)
	st, err := c.chatStream(ctx, req, o)
	if err != nil {
		return nil, c.failed(o, err)
	}
	return st, nil
}

func (c *Client) chatStream(ctx context.Context, req *providers.ChatRequest, o *callOptions) (*Stream, error) {
	if ctx == nil {
		return nil, errNilContext()
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	pl, err := c.planFor(o)
	if err != nil {
		return nil, err
	}
	ctx, tr := c.begin(ctx, o, pl, OperationChat, true, req.Model, req.MaxTokens, req.Temperature, req.TopP)
	tokens := EstimateTokens(req)
	return walkChain(c, ctx, tr, pl, req.Model, req.Needs(true),
		func(ctx context.Context, t try) (*Stream, *resilience.CallInfo, error) {
			d := t.d
			s := &Stream{ctx: ctx, provider: d.name, served: d.owner}
			s.call.Init(ctx, true) // the stream reports in-stream failures to the breaker
			s.call.MaxWait, s.call.Tokens = o.maxWait(t.maxWait), tokens
			s.call.OutcomeReported, s.call.Route = true, t.route
			s.pipe = d.pipeline.Route(t.route)
			firstContent := d.firstContent
			if pol := pl.policyFor(d, o); pol != nil {
				s.call.Policy = pol
				firstContent = pol.Timeout()
			}
			inner, err := d.provider.ChatStream(&s.call, withModel(req, t.model))
			if err != nil {
				return nil, &s.call.Info, err
			}
			s.inner = inner
			if _, keeps := inner.(providers.TextKeeper); !keeps {
				s.text = new(strings.Builder) // a third-party stream: keep the text here
			}
			s.pending = s.first[:0]
			if perr := s.awaitContent(firstContent); perr != nil {
				return nil, &s.call.Info, perr
			}
			return s, &s.call.Info, nil
		},
		func(s *Stream, _ *deployment, model string, res *TryResult, start time.Time) bool {
			s.model = model
			if res == nil {
				return false
			}
			res.TimeToFirstChunk = res.Duration
			s.tel = &streamTelemetry{tracker: tr, result: *res, start: start}
			return true // the stream reports its end when it ends
		})
}

// Stream is a streamed answer from one provider. Read it with Recv or range over Deltas.
// It is not safe for concurrent use, except Close.
type Stream struct {
	ctx      context.Context // the caller's, for telling its cancellation from a failure
	call     resilience.Call // the provider's context: CallInfo, and failures for the breaker
	provider string          // the deployment's name, in errors
	served   string          // the provider's name
	model    string          // the model the provider was asked for
	inner    providers.Stream
	pending  []providers.Delta  // received while waiting for the first content
	first    [1]providers.Delta // pending's room for the usual case: the first content alone
	text     *strings.Builder   // the text delivered, when inner is no providers.TextKeeper
	err      error              // sticky
	done     bool
	closed   atomic.Bool
	tel      *streamTelemetry // nil without telemetry
	rl       *providers.RateLimit
	pipe     *resilience.Pipeline // settles the token estimate when the usage arrives
}

// RateLimit returns what the provider's rate-limit headers said when the stream began, nil
// when it sent none.
func (s *Stream) RateLimit() *providers.RateLimit { return s.rl }

// streamTelemetry reports the end of a stream's call, once: at the Done delta, at a failure
// or at Close, whichever comes first.
type streamTelemetry struct {
	tracker CallTracker
	result  TryResult // filled in when the first content arrived
	start   time.Time
	ended   atomic.Bool
}

// end reports the stream's try and call as ended with perr (nil for success); closed marks a
// stream the caller closed before its end.
func (t *streamTelemetry) end(perr *providers.Error, last providers.Delta, closed bool) {
	if t == nil || !t.ended.CompareAndSwap(false, true) {
		return
	}
	r := t.result
	r.Duration = time.Since(t.start)
	r.Err, r.Closed = perr, closed
	r.FinishReason, r.Usage = last.FinishReason, last.Usage
	t.tracker.TryDone(r)
	var err error // not perr itself: a nil *providers.Error is a non-nil error
	if perr != nil {
		err = perr
	}
	t.tracker.End(err)
}

// Provider returns the name of the provider that serves the stream.
func (s *Stream) Provider() string { return s.served }

// Deployment returns the deployment that serves the stream, "<provider>/<deployment>", or the
// provider's name for a provider of one.
func (s *Stream) Deployment() string { return s.provider }

// Model returns the model the serving provider was asked for (after the client's model
// mapping for a fallback, or the provider's own default when the call named none); "" when
// nobody named one.
func (s *Stream) Model() string { return s.model }

// Text returns the text received so far.
func (s *Stream) Text() string {
	if s.text != nil {
		return s.text.String()
	}
	if k, ok := s.inner.(providers.TextKeeper); ok {
		return k.Text()
	}
	return ""
}

// awaitContent reads until the first delta that carries content or ends the stream, within
// limit (0 = no limit). On failure it closes the stream and returns the classified error.
func (s *Stream) awaitContent(limit time.Duration) *providers.Error {
	var expired atomic.Bool
	var timer *time.Timer
	if limit > 0 {
		timer = time.AfterFunc(limit, func() {
			expired.Store(true)
			_ = s.inner.Close() // unblocks Recv
		})
	}
	for {
		d, err := s.inner.Recv()
		if err == nil && d.RateLimit != nil {
			s.rl = d.RateLimit // known as soon as ChatStream returns
		}
		if err == nil && d.Text == "" && d.Reasoning == "" && len(d.ToolCalls) == 0 && !d.Done {
			s.pending = append(s.pending, d)
			continue
		}
		if err == nil && timer != nil && !timer.Stop() {
			// The limit struck as the content arrived, and closed the stream under it.
			err = errFirstContent
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
		s.pending = append(s.pending, d)
		return nil
	}
}

var errFirstContent = errors.New("first content arrived after the limit")

// Recv returns the next delta. After the delta with Done set it returns io.EOF. Any failure
// is a *providers.Error (KindStreamTruncated when the stream ended without its terminal
// event) with Partial holding the text received before it; the error repeats on later calls.
func (s *Stream) Recv() (providers.Delta, error) {
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
	if err != nil {
		if err == io.EOF {
			err = &providers.Error{Provider: s.provider, Kind: providers.KindStreamTruncated,
				Message: "stream ended without its final event"}
		}
		return providers.Delta{}, s.fail(err)
	}
	s.accept(d)
	return d, nil
}

func (s *Stream) accept(d providers.Delta) {
	if d.RateLimit != nil {
		s.rl = d.RateLimit
	}
	if s.text != nil {
		s.text.WriteString(d.Text)
	}
	if d.Done {
		s.done = true
		s.pipe.SettleTokens(s.call.Tokens, d.Usage.Total())
		s.tel.end(nil, d, false)
	}
}

// fail classifies err, records it as the stream's sticky error, and reports failures that
// mean the provider is unwell to its circuit breaker.
func (s *Stream) fail(err error) *providers.Error {
	perr := classify(s.ctx, s.provider, err, &s.call.Info)
	perr.Partial = s.Text()
	if perr.Kind.Unwell() {
		s.call.ReportFailure(perr)
	}
	s.err = perr
	s.tel.end(perr, providers.Delta{}, false)
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

// Close releases the stream's connection and its bulkhead slot. It is safe to call more
// than once, and from another goroutine to abort a Recv.
func (s *Stream) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.tel.end(nil, providers.Delta{}, true)
	return s.inner.Close()
}
