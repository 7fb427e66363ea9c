package resilience

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/steadyllm/steady/internal/headers"
)

// breaker is the circuit breaker layer's view of the circuit: it admits calls, reports their
// outcomes and emits the events of both. The state itself lives in the circuit alone.
type breaker struct {
	c  *circuit
	ev *emitter
	// parent is the breaker of the pipeline a route belongs to (nil for a pipeline that is no
	// route): consulted before the route's own, and told whether the host was reachable.
	parent *breaker
	share  func(Advice) // tells the other instances the circuit opened or closed (WithSharedState)

	// With a ProbeElection (WithSharedState): the store, how long a probe may hold its
	// election, until when (circuit time) another instance holds it, whether this one does,
	// and how many times this one won it (see probeFinished).
	elect     ProbeElection
	hold      time.Duration
	elsewhere atomic.Int64
	probing   atomic.Bool
	won       atomic.Uint64

	active *activeProbe // WithActiveProbe; nil without
}

func (b *breaker) init(o Options, ev *emitter) {
	b.c = newCircuit(o, ev.clock)
	b.ev = ev
	b.active.init(b, o)
}

// announce emits a state change, if there was one, with the context of the call that made it
// visible (nil for a read of the state, Isolate and Reset).
func (b *breaker) announce(ctx context.Context, ch change) {
	if ch.ok {
		if b.share != nil {
			switch {
			case ch.to == CircuitOpen:
				if a := b.c.opening(); a != (Advice{}) {
					b.share(a)
				}
			case ch.from == CircuitHalfOpen && ch.to == CircuitClosed:
				b.share(Advice{ClosedAt: b.c.wallOf(b.c.now())})
			}
		}
		if b.elect != nil {
			b.probeFinished(ch)
		}
		b.ev.emit(Event{Type: EventBreakerStateChanged, From: ch.from, To: ch.to, Delay: ch.brk, Context: ctx})
	}
}

func (b *breaker) state() CircuitState {
	s, ch := b.c.read()
	b.announce(nil, ch)
	return s
}

func (b *breaker) info() CircuitInfo {
	info, ch := b.c.info()
	b.announce(nil, ch)
	return info
}

func (b *breaker) isolate() { b.announce(nil, b.c.isolate()) }

// reset closes the circuit here only: a closing is shared when a probe made it.
func (b *breaker) reset() {
	ch := b.c.reset()
	if b.elect != nil {
		b.probeFinished(ch)
	}
	if ch.ok {
		b.ev.emit(Event{Type: EventBreakerStateChanged, From: ch.from, To: ch.to})
	}
}

// blocked reports whether the circuit now turns calls away (open or isolated), which tells
// the retry layer that other calls tripped it and retrying is pointless. A route's is blocked
// by its deployment's circuit too.
func (b *breaker) blocked(ctx context.Context) bool {
	if b.parent != nil && b.parent.blocked(ctx) {
		return true
	}
	s, ch := b.c.read()
	b.announce(ctx, ch)
	return s == CircuitOpen || s == CircuitIsolated
}

// reject turns a call away: it closes the request body, as a RoundTripper must, and reports
// the rejection.
func (b *breaker) reject(req *http.Request, r rejection) error {
	closeRequestBody(req)
	b.ev.emit(Event{Type: EventBreakerRejected, To: r.state, Delay: r.retryAfter, Context: req.Context()})
	return &CircuitOpenError{Pipeline: b.ev.name, State: r.state, RetryAfter: r.retryAfter}
}

// fastReject rejects a call when the circuit is isolated or open with its break not yet over,
// without taking the circuit's lock. The outer layers call it first, so a call to a provider
// that is down fails before any layer allocates. It returns nil to let the call go on.
func (b *breaker) fastReject(req *http.Request) error {
	if b.parent != nil {
		if r, ok := b.parent.c.fastReject(); ok {
			return b.parent.reject(req, r)
		}
	}
	if r, ok := b.c.fastReject(); ok {
		return b.reject(req, r)
	}
	return nil
}

// verdictOf classifies how a call ended with err (nil for a success): the caller's own
// cancellation or deadline is excluded whatever else happened, our own timeout and every
// other error are failures.
func verdictOf(ctx context.Context, err error) verdict {
	if callerGaveUp(ctx) {
		return verdictExcluded
	}
	if err != nil {
		var be *BulkheadRejectedError
		if errors.As(err, &be) {
			return verdictExcluded // a retry the bulkhead turned away (callState.requeue): not the provider's doing
		}
		return verdictFailure
	}
	return verdictSuccess
}

// callerGaveUp reports whether ctx, the context a layer below the timeout layer sees, ended
// because the caller's context did, rather than by one of the pipeline's own limits. The
// steady client's whole-call deadline (TimeoutCall) is the caller's: its budget ran out, not
// the provider's patience.
func callerGaveUp(ctx context.Context) bool {
	if ctx.Err() == nil {
		return false
	}
	switch c := context.Cause(ctx).(type) {
	case *TimeoutError:
		return c.Limit == TimeoutCall // else the timeout layer's own expiry
	case *callEnded:
		return false // the timeout layer's release of a finished call
	}
	return true
}

// breakerTransport asks the circuit before each logical call and reports its outcome. A 5xx
// (including 529), 401 or 403 is a failure known at once; any other response is judged when its body
// ends, so a stream that breaks halfway, or that the caller marks with a failure reporter,
// counts as a failure. The report is guaranteed (EOF, read error or Close), so a half-open
// probe can never leave the circuit stuck.
type breakerTransport struct {
	b    *breaker
	next http.RoundTripper
}

func (t *breakerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	b, ctx := t.b, req.Context()
	if pb := b.parent; pb != nil {
		return t.routeTrip(req, pb)
	}
	tk, rej, ch := b.c.admit()
	b.announce(ctx, ch)
	if rej != nil {
		return nil, b.reject(req, *rej)
	}
	return t.trip(req, tk, false)
}

// routeTrip is RoundTrip for a route: its deployment's circuit (pb) admits the call first and
// hears whether the host was reachable (hostVerdict); the route's own circuit judges the rest.
func (t *breakerTransport) routeTrip(req *http.Request, pb *breaker) (*http.Response, error) {
	b, ctx := t.b, req.Context()
	ptk, rej, ch := pb.c.admit()
	pb.announce(ctx, ch)
	if rej != nil {
		return nil, pb.reject(req, *rej)
	}
	if ptk.probe && pb.elect != nil {
		// The deployment's probe is the fleet's, whichever model's call makes it.
		if err := pb.elected(req, ptk); err != nil {
			return nil, err
		}
	}
	tk, rej, ch := b.c.admit()
	b.announce(ctx, ch)
	if rej != nil {
		pb.c.report(ptk, verdictExcluded) // not sent: a probe slot of the deployment is given back
		return nil, b.reject(req, *rej)
	}
	resp, err := t.trip(req, tk, ptk.probe)
	pb.announce(ctx, pb.c.report(ptk, hostVerdict(ctx, resp, err)))
	return resp, err
}

// trip sends the call admitted with tk and reports its outcome, at once or when its body ends.
// A call that is a half-open probe — of this circuit, or of its deployment's (parentProbe) —
// makes one attempt.
func (t *breakerTransport) trip(req *http.Request, tk ticket, parentProbe bool) (*http.Response, error) {
	b, ctx := t.b, req.Context()
	if tk.probe || parentProbe {
		if tk.probe && b.elect != nil {
			if err := b.elected(req, tk); err != nil {
				return nil, err
			}
		}
		mark := tk
		mark.probe = true
		req = asProbe(req, b.ev, mark) // the retry layer makes one attempt
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		v := verdictOf(ctx, err)
		if v == verdictFailure {
			// Go's transport refuses a header it cannot send (a newline in a value): the
			// caller's mistake, which must not open the provider's circuit for everyone.
			if name, bad := headers.Invalid(req.Header); bad {
				v, err = verdictExcluded, &InvalidRequestError{Pipeline: b.ev.name, Header: name, Err: err}
			}
			if b.parent != nil && hostUnreachable(err) {
				v = verdictExcluded // the deployment's fault, counted there alone: one fault, one opening
			}
		}
		b.announce(ctx, b.c.report(tk, v))
		return nil, err
	}
	if failingStatus(resp.StatusCode) {
		v := verdictOf(ctx, errServerFailure)
		if b.parent != nil && refusedKey(resp.StatusCode) {
			v = verdictExcluded // a refused key is the deployment's, counted there alone
		}
		b.announce(ctx, b.c.report(tk, v))
		return resp, nil
	}
	if c := callOf(ctx, b.ev); c != nil && c.brk == nil {
		// The call's record settles the outcome at the body's end.
		c.brk, c.tk, c.waitClose = b, tk, c.report != nil
		return resp, nil
	}
	if resp.Body == nil {
		resp.Body = http.NoBody
	}
	_, report, _ := callers(ctx)
	c := &breakerCall{ctx: ctx, b: b, tk: tk, report: report, waitClose: report != nil}
	c.rc, c.f = resp.Body, c
	resp.Body = c
	return resp, nil
}

// failingStatus reports whether an answer with status code counts against the circuit: a
// server error (5xx, 529), or a refusal of the credentials (401, 403), after which every call
// fails the same way until someone fixes the key. Rate limits (429) and the other 4xx, which
// say something about one request, do not.
func failingStatus(code int) bool {
	return code >= 500 || code == http.StatusUnauthorized || code == http.StatusForbidden
}

// refusedKey reports whether a status says the credentials were refused (401, 403): a failure
// of the whole deployment, whichever model's call met it.
func refusedKey(code int) bool {
	return code == http.StatusUnauthorized || code == http.StatusForbidden
}

// errServerFailure stands for a failing status in verdictOf; it is never returned.
var errServerFailure = errors.New("resilience: server failure")

// settle reports the outcome of the call admitted with tk, made with ctx, once its body has
// ended: err is the read error that ended it, nil for EOF or Close, in which case a failure
// reported by the body's reader through report (see Call; report may be nil) decides.
func (b *breaker) settle(ctx context.Context, tk ticket, report *failureReport, err error) {
	if err == nil {
		err = report.failure()
	}
	b.announce(ctx, b.c.report(tk, verdictOf(ctx, err)))
}

// breakerCall reports the call's outcome when the response body ends, for a call without a
// record of this pipeline (see call), which is only the case when the breaker is used without
// the timeout layer above it. It is its own body wrapper's finisher. When the request carries a failure
// reporter (WithFailureReporter) the outcome waits for Close rather than EOF: the last bytes
// of a stream may hold an error event that the reader has yet to parse and report.
type breakerCall struct {
	doneBody
	ctx       context.Context
	b         *breaker
	tk        ticket
	report    *failureReport
	waitClose bool
}

func (c *breakerCall) Read(buf []byte) (int, error) {
	n, err := c.rc.Read(buf)
	switch {
	case err == nil:
	case err != io.EOF:
		c.end(err)
	case !c.waitClose:
		c.end(nil)
	}
	return n, err
}

func (c *breakerCall) finish(err error) { c.b.settle(c.ctx, c.tk, c.report, err) }
