package resilience

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
)

// Two failures that the retry layer does not retry on the same route, although it would
// retry them in another call (see callState.decide):
//
//   - A half-open probe's: the probe asks whether the provider is back, and one attempt
//     answers that. Retrying it would hold the circuit half-open through backoffs (every
//     other call rejected meanwhile) and, when the provider is still down, send several
//     requests where one told enough (GaveUpProbe).
//   - A silent attempt's, when the caller can send the call to another route at once
//     (Call.Elsewhere): an attempt that got nothing back — no status, not even a refusal — has
//     already cost the caller its wait, and the next one on a silent route costs it again;
//     the other route likely answers at once (GaveUpSilent).

// probeKey marks, in a request's context, a call admitted as a half-open probe, when the
// call has no record of the pipeline to carry the mark (see asProbe).
type probeKey struct{}

// asProbe marks the call of req, admitted with tk as a half-open probe, for the retry layer
// below, and returns the request to send. The call's record carries the ticket (it keeps it
// for the outcome anyway), so this costs nothing; only a call without one, which the pipeline
// never makes (Wrap puts the timeout layer above the breaker), gets a marked context.
func asProbe(req *http.Request, ev *emitter, tk ticket) *http.Request {
	if c := callOf(req.Context(), ev); c != nil {
		c.tk = tk
		return req
	}
	return req.WithContext(context.WithValue(req.Context(), probeKey{}, true))
}

// isProbe reports whether the call made with ctx (the retry layer's view of it) was admitted
// as a half-open probe of the pipeline whose emitter is ev.
func isProbe(ctx context.Context, ev *emitter) bool {
	if c := callOf(ctx, ev); c != nil {
		return c.tk.probe
	}
	probe, _ := ctx.Value(probeKey{}).(bool)
	return probe
}

// elsewhere reports whether the innermost Call of ctx says the call can go to another route
// at once (Call.Elsewhere).
func elsewhere(ctx context.Context) bool {
	c, _ := ctx.Value(callKey{}).(*Call)
	return c != nil && c.Elsewhere
}

// silent reports whether an attempt's error says the route answered nothing at all: the
// attempt timeout, a connection closed or reset before any response header, a dial or other
// network timeout. A refused connection is not silent: it costs no wait, and a server that
// restarts accepts again in a moment, so it is retried as usual (within Call.MaxWait, which a
// caller that can go elsewhere sets). A server that closed an idle keep-alive connection, or
// sent GOAWAY, is not silent either: it answers on a fresh connection.
func silent(err error) bool {
	var te *TimeoutError
	if errors.As(err, &te) {
		return te.Limit == TimeoutAttempt
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false // the caller's, or the whole call's limit: nothing to fail over within
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return false
	}
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}
