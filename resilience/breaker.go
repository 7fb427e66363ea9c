package resilience

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"
)

// Outcomes reported to gobreaker. The breaker sees logical calls (it sits outside retry),
// and classifies each as a success, a failure (5xx, network error, our own timeout, a
// failure reported inside a stream) or neither (the caller's cancellation or deadline).
var (
	errCallFailed   = errors.New("resilience: call failed")
	errCallExcluded = errors.New("resilience: call abandoned by caller")
)

// breaker wraps gobreaker's two-step breaker. Isolation is our own flag, and Reset swaps in
// a fresh gobreaker, since gobreaker has neither. State changes, which gobreaker reports
// while holding its lock, are queued and emitted after the lock is released.
type breaker struct {
	cb       atomic.Pointer[gobreaker.TwoStepCircuitBreaker[struct{}]]
	isolated atomic.Bool
	open     atomic.Bool  // gobreaker's last reported state was open
	openedAt atomic.Int64 // wall-clock UnixNano of the last transition to open
	duration time.Duration

	mu      sync.Mutex
	pending []Event
	npend   atomic.Int32
}

func (b *breaker) init(p *Pipeline) {
	b.duration = seconds(p.opts.CircuitBreakerDurationSeconds)
	b.cb.Store(b.newBreaker(p))
}

func (b *breaker) newBreaker(p *Pipeline) *gobreaker.TwoStepCircuitBreaker[struct{}] {
	o := p.opts
	threshold := uint32(o.CircuitBreakerThreshold)
	st := gobreaker.Settings{
		Name:        p.name,
		MaxRequests: uint32(o.CircuitBreakerHalfOpenMaxRequests),
		Timeout:     b.duration,
		IsExcluded:  func(err error) bool { return err == errCallExcluded },
		OnStateChange: func(_ string, from, to gobreaker.State) {
			if to == gobreaker.StateOpen {
				b.openedAt.Store(time.Now().UnixNano())
			}
			b.open.Store(to == gobreaker.StateOpen)
			b.mu.Lock()
			b.pending = append(b.pending, Event{Kind: EventBreakerStateChanged, From: fromGobreaker(from), To: fromGobreaker(to)})
			b.mu.Unlock()
			b.npend.Add(1)
		},
	}
	if ratio := o.CircuitBreakerFailureRatio; ratio > 0 {
		// Ratio mode needs a sliding window: ten buckets over the sampling period.
		st.Interval = seconds(o.CircuitBreakerSamplingSeconds)
		st.BucketPeriod = st.Interval / 10
		minCalls := uint32(o.CircuitBreakerMinThroughput)
		st.ReadyToTrip = func(c gobreaker.Counts) bool {
			if c.ConsecutiveFailures >= threshold {
				return true
			}
			valid := c.Requests - c.TotalExclusions
			return valid >= minCalls && float64(c.TotalFailures) >= ratio*float64(valid)
		}
	} else {
		// gobreaker's default trips on threshold+1; ours trips on the threshold-th failure.
		st.ReadyToTrip = func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= threshold }
	}
	return gobreaker.NewTwoStepCircuitBreaker[struct{}](st)
}

// noCall is the context of events that no call made: nil, as Event.Context documents.
var noCall context.Context

// flush emits the state changes gobreaker queued, outside its lock, with ctx: the context of
// the call that made them visible, or noCall for a read of the state.
func (b *breaker) flush(ctx context.Context, p *Pipeline) {
	if b.npend.Load() == 0 {
		return
	}
	b.mu.Lock()
	events := b.pending
	b.pending = nil
	b.npend.Store(0)
	b.mu.Unlock()
	for _, e := range events {
		e.Context = ctx
		p.emit(e)
	}
}

func (b *breaker) state(p *Pipeline) CircuitState { return b.stateFor(noCall, p) }

// stateFor reads the state on behalf of the call whose context is ctx (noCall for none), which
// any transition the read makes visible is reported with.
func (b *breaker) stateFor(ctx context.Context, p *Pipeline) CircuitState {
	if b.isolated.Load() {
		return CircuitIsolated
	}
	s := fromGobreaker(b.cb.Load().State())
	b.flush(ctx, p)
	return s
}

func (b *breaker) info(p *Pipeline) CircuitInfo {
	cb := b.cb.Load()
	info := CircuitInfo{State: b.state(p), ConsecutiveFailures: int(cb.Counts().ConsecutiveFailures)}
	if info.State == CircuitOpen {
		info.NextProbeIn = b.nextProbeIn()
	}
	return info
}

func (b *breaker) nextProbeIn() time.Duration {
	d := time.Until(time.Unix(0, b.openedAt.Load()).Add(b.duration))
	if d < 0 {
		return 0
	}
	return d
}

func (b *breaker) isolate(p *Pipeline) {
	if b.isolated.Swap(true) {
		return
	}
	from := fromGobreaker(b.cb.Load().State())
	b.flush(noCall, p)
	p.emit(Event{Kind: EventBreakerStateChanged, From: from, To: CircuitIsolated})
}

func (b *breaker) reset(p *Pipeline) {
	from := b.state(p)
	b.cb.Store(b.newBreaker(p))
	b.open.Store(false)
	b.isolated.Store(false)
	if from != CircuitClosed {
		p.emit(Event{Kind: EventBreakerStateChanged, From: from, To: CircuitClosed})
	}
}

// outcome classifies how a call ended for gobreaker.
func outcome(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		if _, ours := context.Cause(ctx).(*TimeoutError); !ours {
			return errCallExcluded
		}
	}
	return errCallFailed
}

func fromGobreaker(s gobreaker.State) CircuitState {
	switch s {
	case gobreaker.StateOpen:
		return CircuitOpen
	case gobreaker.StateHalfOpen:
		return CircuitHalfOpen
	}
	return CircuitClosed
}

// breakerTransport asks the breaker before each logical call and reports its outcome. A 5xx
// (including 529) is a failure known at once; any other response is judged when its body
// ends, so a stream that breaks halfway, or that the caller marks with ReportStreamFailure,
// counts as a failure. The report is guaranteed (EOF, read error or Close), so a half-open
// probe can never leave the breaker stuck.
type breakerTransport struct {
	p    *Pipeline
	next http.RoundTripper
}

func (t *breakerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	p, b := t.p, &t.p.breaker
	if b.isolated.Load() {
		return nil, b.reject(p, req, CircuitIsolated, 0)
	}
	ctx := req.Context()
	done, err := b.cb.Load().Allow()
	b.flush(ctx, p)
	if err != nil {
		if errors.Is(err, gobreaker.ErrTooManyRequests) {
			return nil, b.reject(p, req, CircuitHalfOpen, 0)
		}
		return nil, b.reject(p, req, CircuitOpen, b.nextProbeIn())
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		done(outcome(ctx, err))
		b.flush(ctx, p)
		return nil, err
	}
	if resp.StatusCode >= 500 {
		done(errCallFailed)
		b.flush(ctx, p)
		return resp, nil
	}
	if resp.Body == nil {
		resp.Body = http.NoBody
	}
	c := &breakerCall{ctx: ctx, done: done, p: p, waitClose: hasFailureReporter(ctx)}
	c.rc, c.f = resp.Body, c
	resp.Body = c
	return resp, nil
}

func (b *breaker) reject(p *Pipeline, req *http.Request, s CircuitState, retryAfter time.Duration) error {
	closeRequestBody(req)
	p.emit(Event{Kind: EventBreakerRejected, To: s, Delay: retryAfter, Context: req.Context()})
	return &CircuitOpenError{Pipeline: p.name, State: s, RetryAfter: retryAfter}
}

// fastReject rejects a call when the circuit is isolated, or open with its break not yet
// elapsed, without asking gobreaker and before any layer allocates: the outer layers call it
// first, so a call to a provider that is down fails fast. Anything less certain (half-open, a
// break that just elapsed) is left to the breaker layer. It returns nil to let the call go on.
func (b *breaker) fastReject(p *Pipeline, req *http.Request) error {
	if b.isolated.Load() {
		return b.reject(p, req, CircuitIsolated, 0)
	}
	if b.open.Load() {
		if d := b.nextProbeIn(); d > 0 {
			return b.reject(p, req, CircuitOpen, d)
		}
	}
	return nil
}

// breakerCall reports the call's outcome to the breaker when the response body ends. It is
// its own body wrapper's finisher, so one allocation serves both. When the request carries a
// failure reporter (WithFailureReporter) the outcome waits for Close rather than EOF: the
// last bytes of a stream may hold an error event that the reader has yet to parse and report.
type breakerCall struct {
	doneBody
	ctx       context.Context
	done      func(error)
	p         *Pipeline
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

func (c *breakerCall) finish(err error) {
	switch {
	case err != nil:
		c.done(outcome(c.ctx, err))
	case reportedFailure(c.ctx) != nil:
		c.done(errCallFailed)
	default:
		c.done(nil)
	}
	c.p.breaker.flush(c.ctx, c.p)
}

// blocked reports whether the breaker currently rejects calls (open or isolated), which
// tells the retry layer that other calls tripped it and retrying is pointless.
func (b *breaker) blocked(ctx context.Context, p *Pipeline) bool {
	s := b.stateFor(ctx, p)
	return s == CircuitOpen || s == CircuitIsolated
}
