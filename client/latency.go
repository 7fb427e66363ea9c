package client

import (
	"errors"
	"time"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// observe records, on the route of attempt a (its deployment, its model), what its try
// taught about the route's speed (resilience.Pipeline.ObserveLatency), for
// StrategyLatency and for what Deployments and health show; it returns how long the try took on
// the client's clock (WithClock), read once here for the sample and for telemetry. resp and
// err are what the try returned. It allocates nothing for a success.
//
//   - A success counts the time to the try's return: a stream returns at its first content (its
//     time to first token), a whole answer once it has arrived, with its output tokens (its time
//     per output token). A stream whose whole answer was there when it returned (StreamRescue
//     "buffer", or an answer in one event) counts as a whole answer.
//   - A failure that is the route's (ErrorKind.Unwell: overloaded, unavailable, a timeout, a
//     stream cut short) counts for its error rate, and so does one of its configuration
//     (ErrorKind.Misconfigured: a model it does not have, a refused key), which makes every
//     call of the route fail until someone fixes it. A stream that timed out before any content
//     (its first-token limit, or the total timeout before it) counts its wait too, as a
//     censored time (the real one was longer): the tail of the route's times shows it.
//   - A try of a hedged call still without first content when its call sent another try says
//     so (resilience.LatencySample.Raced): its time counts for the hedge delay only while it
//     could not have depended on the other try's.
//   - Anything else says nothing of the route's speed and is not recorded: the request's own
//     fault, the caller's cancellation or deadline, a rate limit (the route's pause and budgets
//     answer it), a call turned away unsent (an open circuit, a full bulkhead).
func (w *walk) observe(a *attempt, resp any, err error) time.Duration {
	took := w.c.now().Sub(a.start)
	var s resilience.LatencySample
	switch {
	case err == nil:
		s = servedSample(took, resp)
	case w.ctx.Err() != nil:
		return took // the caller gave up
	default:
		var pe *providers.Error
		if !errors.As(err, &pe) || !(pe.Kind.Unwell() || pe.Kind.Misconfigured()) {
			return took
		}
		s.Failed = true
		if pe.Kind == providers.KindTimeout && w.need.Has(providers.CapStreaming) && pe.Partial == "" {
			s.FirstContent, s.Stream, s.Censored = took, true, true
		}
	}
	s.Raced = a.raced
	a.d.pipeline.Route(a.key).ObserveLatency(s)
	return took
}

// servedSample is the sample of a try that served resp after took.
func servedSample(took time.Duration, resp any) resilience.LatencySample {
	s := resilience.LatencySample{FirstContent: took}
	switch r := resp.(type) {
	case *providers.ChatResponse:
		s.OutputTokens = r.Usage.OutputTokens
	case *Stream:
		s.Stream = true
		if n := len(r.pending); n > 0 && r.pending[n-1].Done {
			s.Stream, s.OutputTokens = false, r.pending[n-1].Usage.OutputTokens
		}
	}
	return s
}
