package resilience

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// TimeoutProbe is the active probe's time limit (WithActiveProbe): the Limit of the
// *TimeoutError an EventProbeFinished carries when the probe ran out of time.
const TimeoutProbe TimeLimit = "probe"

// defaultProbeTimeout bounds an active probe given no timeout, in a pipeline without
// TimeoutSeconds.
const defaultProbeTimeout = 30 * time.Second

// WithActiveProbe has the pipeline test an open circuit itself when its break ends, with a
// cheap request of the application's (listing the models, say) instead of the next caller's
// call: the provider's return is noticed at the end of the break, whoever calls, and no
// caller waits on a provider that is still down.
//
// probe sends its request through rt, the transport the pipeline sends through (the base of
// its latest Wrap, http.DefaultTransport before any), and returns nil when the provider
// serves again, an error when it does not. Routes (Pipeline.Route) probe their own circuits
// with it too: route is the route key under test (the model whose circuit is open), "" for
// the deployment's own circuit, which opens on failures of the whole host; the route the
// models beyond MaxRoutes share ("*") names no model and is not probed (a caller's call is
// its probe). It runs outside the pipeline's layers — no
// retries, no bulkhead slot, no rate-limit pause, no retry budget: a probe is one request that
// nothing may delay, and its verdict is the application's (an answer with the wrong content
// may fail it), not a status — as the circuit's own half-open probe: while it runs, calls are rejected as during any probe (ErrCircuitOpen,
// state half-open), and its outcome decides for the circuit — nil closes it (shared as a
// closing with WithSharedState), an error reopens it for the next, longer break. With a
// ProbeElection store, the fleet elects which instance probes, as for a caller's probe.
// Its context ends after timeout (TimeoutSeconds when timeout <= 0, or 30 s when that is 0
// too), on the pipeline's clock; a probe that runs out of time has failed.
//
// The probe runs on a timer armed when the circuit opens: no goroutine and no timer while
// the circuit is closed. Should a caller's call take the probe slot first (it arrived as
// the break ended), that call's outcome decides, as without an active probe. Close stops the
// timer and cancels a probe in flight; a pipeline dropped without Close while its provider is
// down keeps probing it until the circuit closes. A nil probe sets none.
func WithActiveProbe(probe ProbeFunc, timeout time.Duration) Option {
	return func(p *Pipeline) {
		if probe == nil {
			p.breaker.active = nil
			return
		}
		p.breaker.active = &activeProbe{probe: probe, timeout: timeout, p: p}
	}
}

// ProbeFunc is an application's active probe (WithActiveProbe): one cheap request through rt
// that tells whether the route (a model, or "" for the whole deployment) serves again.
type ProbeFunc func(ctx context.Context, rt http.RoundTripper, route string) error

// activeProbe is the breaker's active probe (WithActiveProbe). It holds no state of the
// circuit: a timer that fires when the latest break ends, and the probe in flight.
type activeProbe struct {
	probe   ProbeFunc
	timeout time.Duration
	p       *Pipeline // for the fleet's advice (WithSharedState)
	b       *breaker
	base    atomic.Pointer[http.RoundTripper] // what the latest Wrap sends through

	mu     sync.Mutex
	timer  Timer
	closed bool
	cancel context.CancelCauseFunc // ends the probe in flight; nil when none
	wg     sync.WaitGroup          // the probe in flight
}

// errClosed is the cause with which Close ends a probe in flight.
var errClosed = errors.New("resilience: pipeline closed")

// init connects a, if set, to the breaker b of a pipeline with options o: every opening of
// the circuit arms a's timer for the end of its break.
func (a *activeProbe) init(b *breaker, o Options) {
	if a == nil {
		return
	}
	a.b = b
	if a.timeout <= 0 {
		a.timeout = seconds(o.TimeoutSeconds)
	}
	if a.timeout <= 0 {
		a.timeout = defaultProbeTimeout
	}
	b.c.opens = a.arm
}

// use notes base as the transport the probe sends through (Wrap). a may be nil.
func (a *activeProbe) use(base http.RoundTripper) {
	if a != nil {
		a.base.Store(&base)
	}
}

// arm has the probe run in d (at once when d <= 0). The circuit calls it under its lock when
// it opens: it only sets a timer.
func (a *activeProbe) arm(d time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.closed:
	case a.timer == nil:
		a.timer = a.b.ev.clock.AfterFunc(d, a.fire)
	default:
		a.timer.Reset(d)
	}
}

// fire runs when the break the timer was armed for ends. A break made longer meanwhile
// re-arms the timer for its end; a circuit that closed, was isolated, or whose probe a
// caller's call took, is left alone.
func (a *activeProbe) fire() {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return
	}
	a.wg.Add(1)
	a.mu.Unlock()
	defer a.wg.Done()

	b := a.b
	if a.p.shared != nil {
		a.p.adoptShared(nil) // the fleet's probe may have closed or reopened the circuit already
	}
	tk, left, ch := b.c.takeProbe()
	b.announce(nil, ch) // open → half-open, seen by the timer
	switch {
	case left > 0:
		a.arm(left)
		return
	case !tk.probe:
		return
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	timer := b.ev.clock.AfterFunc(a.timeout, func() {
		cancel(&TimeoutError{Pipeline: b.ev.name, Limit: TimeoutProbe, After: a.timeout})
	})
	defer timer.Stop()
	if b.elect != nil {
		if ok, retry := b.claim(ctx); !ok {
			b.c.dropProbe(tk)
			a.arm(retry) // the holder's outcome will reach us as advice; else probe then
			return
		}
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		a.settle(tk, verdictExcluded, nil, 0)
		return
	}
	a.cancel = cancel
	a.mu.Unlock()

	start := b.ev.clock.Now()
	err := a.send(ctx)
	took := b.ev.clock.Now().Sub(start)
	a.mu.Lock()
	a.cancel = nil
	a.mu.Unlock()
	v := verdictSuccess
	if err != nil {
		v = verdictFailure
		if cause := context.Cause(ctx); cause != nil {
			if errors.Is(cause, errClosed) {
				v = verdictExcluded // Close: the probe told nothing
			} else {
				err = cause // our time limit
			}
		}
	}
	a.settle(tk, v, err, took)
}

// send runs the application's probe through the pipeline's base transport (a route's: its
// deployment's).
func (a *activeProbe) send(ctx context.Context) error {
	rt := http.DefaultTransport
	base := a.base.Load()
	if par := a.p.parent; base == nil && par != nil && par.breaker.active != nil {
		base = par.breaker.active.base.Load()
	}
	if base != nil {
		rt = *base
	}
	return a.probe(ctx, rt, a.p.route)
}

// forRoute returns the active probe of route pipeline c, made from a (its deployment's), or
// nil when a is nil; a route made after its deployment's Close is closed from the start. The
// route the models beyond MaxRoutes share gets none: it names no model a probe could ask
// ("*"), so its half-open probe is a caller's call, as without an active probe.
func (a *activeProbe) forRoute(c *Pipeline) *activeProbe {
	if a == nil || c.route == overflowRoute {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return &activeProbe{probe: a.probe, timeout: a.timeout, p: c, closed: a.closed}
}

// settle reports the probe's verdict v to the circuit and the probe's end to the observer
// (err: why it failed; took: how long it ran). A probe that told nothing frees the circuit's
// probe, and gives the fleet's election back.
func (a *activeProbe) settle(tk ticket, v verdict, err error, took time.Duration) {
	b := a.b
	ch := b.c.settleProbe(tk, v)
	if v == verdictExcluded && b.elect != nil {
		b.probeFinished(change{from: CircuitHalfOpen})
	}
	b.announce(nil, ch)
	if v != verdictExcluded {
		b.ev.emit(Event{Type: EventProbeFinished, Err: err, Duration: took})
	}
}

// Close stops the pipeline's active probe (WithActiveProbe), and its routes': their timers,
// and probes in flight, which are canceled and waited for. The pipeline goes on serving
// calls; its half-open probes are callers' calls again, as without an active probe. Close is
// idempotent, safe for concurrent use, and does nothing for a pipeline without an active
// probe. It returns nil.
func (p *Pipeline) Close() error {
	a := p.breaker.active
	if a == nil {
		return nil
	}
	a.close()
	for _, r := range p.Routes() {
		r.breaker.active.close()
	}
	return nil
}

// close stops a's timer and its probe in flight, and waits for that probe. a may be nil.
func (a *activeProbe) close() {
	if a == nil {
		return
	}
	a.mu.Lock()
	a.closed = true
	if a.timer != nil {
		a.timer.Stop()
	}
	cancel := a.cancel
	a.mu.Unlock()
	if cancel != nil {
		cancel(errClosed)
	}
	a.wg.Wait()
}

// takeProbe is admission for the active probe: an open circuit whose break is not over
// returns the time left; a half-open one whose probe no call took gives the active probe
// every probe slot, so that calls are rejected while it runs. Anything else returns a ticket
// that is no probe.
func (cb *circuit) takeProbe() (ticket, time.Duration, change) {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	ch := cb.advance()
	s, gen := cb.load()
	switch {
	case s == CircuitOpen:
		return ticket{}, time.Duration(cb.until.Load() - cb.now()), ch
	case s == CircuitHalfOpen && cb.probes == 0:
		cb.probes = cb.halfOpenMax
		return ticket{generation: gen, probe: true}, 0, ch
	}
	return ticket{}, 0, ch
}

// dropProbe gives back the probe slots the active probe took with tk, unused.
func (cb *circuit) dropProbe(tk ticket) {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	if s, gen := cb.load(); s == CircuitHalfOpen && gen == tk.generation {
		cb.probes = 0
	}
}

// settleProbe records the active probe's verdict: a success closes the circuit at once (the
// probe stands for every probe slot), a failure reopens it, an excluded probe frees the slots.
// A ticket of an ended generation is ignored.
func (cb *circuit) settleProbe(tk ticket, v verdict) change {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	ch := cb.advance()
	if s, gen := cb.load(); s != CircuitHalfOpen || gen != tk.generation {
		return ch
	}
	switch v {
	case verdictSuccess:
		return cb.enter(CircuitClosed)
	case verdictFailure:
		return cb.enter(CircuitOpen)
	}
	cb.probes = 0
	return ch
}
