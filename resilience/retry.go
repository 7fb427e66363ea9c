package resilience

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/steadyllm/steady/internal/signals"
)

// keepLimit bounds how much of a retryable error body is kept in memory during the backoff,
// in case the call gives up after the wait and must return that response intact.
const keepLimit = 64 << 10

// retryTransport runs the attempts of a call with go-retryablehttp as the engine. The engine
// is configured so that none of its known defects in v0.7.8 reach the caller:
//
//   - It would log every request to stderr: Logger is nil and no hooks are set.
//   - Its policy retries 500 and 501 and its backoff honours Retry-After uncapped, only on
//     429/503: CheckRetry is ours and makes every decision, including the wait, which it
//     also sleeps (on the pipeline's clock, ending at once when the context ends); Backoff
//     returns 0.
//   - It buffers the whole request body and ignores GetBody (FromRequest): we build the
//     Request without a body reader, send the caller's body on the first attempt and a fresh
//     one from GetBody on each retry. Only a body without GetBody is buffered.
//   - It calls CloseIdleConnections on every give-up, flushing the caller's pool: its
//     http.Client's transport is attemptTransport, which does not have that method.
//   - It replaces the last response with a generic "giving up" error: CheckRetry answers
//     "do not retry, no error" so the response goes back untouched, and ErrorHandler passes
//     errors through (unwrapping the *url.Error its inner http.Client adds, which would
//     repeat the URL with its query string).
//   - Its inner http.Client would follow redirects a second time: CheckRedirect stops it.
type retryTransport struct {
	r       *retrier
	attempt *attemptTransport
	client  *retryablehttp.Client
}

// retrier is the retry layer's state: its policy, its budget, and the one thing it asks of
// the circuit breaker above it — whether other calls have opened the circuit meanwhile.
type retrier struct {
	ev     *emitter
	pol    *Policy   // the pipeline's own policy, for calls that bring none
	budget *budget   // nil when RetryBudgetPercent is 0
	cool   *cooldown // paused by 429s
	pace   *pacer    // learns the budgets from the answers' headers
	// adaptive is the deployment's adaptive concurrency limit, which hears every answer; nil
	// when the limit is fixed.
	adaptive *limiter
	circuit  interface {
		blocked(ctx context.Context) bool
	}
}

func (r *retrier) init(o Options, pol *Policy, ev *emitter, circuit interface{ blocked(context.Context) bool }) {
	r.ev, r.pol, r.circuit = ev, pol, circuit
	if o.RetryBudgetPercent > 0 {
		r.budget = newBudget(o, ev)
	}
}

func newRetryTransport(r *retrier, base http.RoundTripper) *retryTransport {
	t := &retryTransport{r: r, attempt: &attemptTransport{r: r, base: base}}
	t.client = &retryablehttp.Client{
		HTTPClient: &http.Client{
			Transport:     t.attempt,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		Logger:       nil,
		RetryMax:     maxRetryCount, // the call's policy stops it sooner (callState.decide)
		CheckRetry:   checkRetry,
		Backoff:      func(time.Duration, time.Duration, int, *http.Response) time.Duration { return 0 },
		ErrorHandler: passError,
	}
	return t
}

// callState is one logical call's retry state. It is also the context of the call's
// attempts, so the engine's CheckRetry, which only receives a context, can find it.
type callState struct {
	context.Context
	r       *retrier
	pol     *Policy
	attempt int
	gaveUp  GaveUp // why retrying stopped, once it has
	// refused is the wait retrying stopped for, and dl the deadline it would have passed
	// (GaveUpDeadline): what CallInfo reports.
	refused time.Duration
	dl      time.Time
	// through is set when the last attempt met an overload signal (a 529, a 503, a 429 for
	// too many at once) that the adaptive limit absorbed: its retry goes through the limit
	// (see requeue). throughs counts the retries after a 429 for too many at once, which
	// RetryCount does not count.
	through  bool
	throughs int
	getBody  func() (io.ReadCloser, error)
	req      retryablehttp.Request
}

type callStateKey struct{}

// Value returns the call state itself for callStateKey and defers everything else.
func (s *callState) Value(key any) any {
	if key == (callStateKey{}) {
		return s
	}
	return s.Context.Value(key)
}

func stateOf(ctx context.Context) *callState {
	if s, ok := ctx.(*callState); ok {
		return s
	}
	s, _ := ctx.Value(callStateKey{}).(*callState)
	return s
}

// RoundTrip sends the first attempt itself and hands the call to the engine only when that
// attempt failed in a retryable way, so a successful call never pays for the engine (its
// inner http.Client, a request copy, a context). The engine then runs every retry.
func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := t.r
	c := callOf(req.Context(), r.ev)
	pol := r.policy(c, req.Context())
	if r.budget != nil {
		if c != nil {
			r.budget.recordCall(c.now()) // the clock read the timeout layer made, if it did
		} else {
			r.budget.recordCall(r.ev.now())
		}
	}
	var getBody func() (io.ReadCloser, error)
	if req.Body != nil && req.Body != http.NoBody {
		getBody = req.GetBody
		if getBody == nil && pol.count > 0 {
			// No way to rewind: buffer once, so every attempt sends the same bytes.
			buf, err := io.ReadAll(req.Body)
			_ = req.Body.Close()
			if err != nil {
				return nil, err
			}
			getBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf)), nil }
			req = req.Clone(req.Context())
			req.Body, _ = getBody()
		}
	}
	resp, through, err := t.attempt.send(req, 1, pol)
	retry, reason := pol.classify(resp, err)
	if !retry || req.Context().Err() != nil {
		r.setOutcome(req.Context(), 1, notRetried(req.Context(), resp, err), 0, time.Time{})
		return resp, err
	}
	s := &callState{Context: req.Context(), r: r, pol: pol, attempt: 1, getBody: getBody, through: through}
	again, cerr := s.decide(resp, err, reason)
	if !again {
		r.setOutcome(req.Context(), s.attempt, s.gaveUp, s.refused, s.dl)
		if cerr != nil {
			if resp != nil {
				_ = resp.Body.Close()
			}
			return nil, cerr
		}
		return resp, err
	}
	if resp != nil {
		drain(resp.Body, 4<<10)
	}
	s.req.Request = req.WithContext(s)
	resp, err = t.client.Do(&s.req)
	r.setOutcome(req.Context(), s.attempt, s.gaveUp, s.refused, s.dl)
	return resp, err
}

// policy returns the policy of the call whose record is c (nil when the timeout layer is not
// above), made with ctx: the caller's, else the pipeline's.
func (r *retrier) policy(c *call, ctx context.Context) *Policy {
	if c != nil {
		return c.pol
	}
	if _, _, p := callers(ctx); p != nil {
		return p
	}
	return r.pol
}

// setOutcome fills in the CallInfo of the call, if the caller asked for one (see Call): the
// attempts made, why retrying stopped, the wait it refused and the deadline that wait would
// have passed.
func (r *retrier) setOutcome(ctx context.Context, attempts int, gaveUp GaveUp, refused time.Duration, dl time.Time) {
	var info *CallInfo
	if c := callOf(ctx, r.ev); c != nil {
		info = c.info // found once, by the timeout layer
	} else {
		info, _, _ = callers(ctx)
	}
	if info != nil {
		info.Attempts, info.GaveUp, info.Wait, info.Deadline = attempts, gaveUp, refused, dl
	}
}

// notRetried is why an attempt that is not retried ended the call: GaveUpNotRetryable for a
// failure, "" for a success or the caller's cancellation.
func notRetried(ctx context.Context, resp *http.Response, err error) GaveUp {
	if ctx.Err() != nil || (err == nil && resp.StatusCode < http.StatusBadRequest) {
		return ""
	}
	return GaveUpNotRetryable
}

// attemptTransport sends attempts to the base transport: the first directly from
// retryTransport, the others as the engine's inner transport. It rewinds the body for
// retries, applies the attempt timeout, and reports each attempt.
type attemptTransport struct {
	r    *retrier
	base http.RoundTripper
}

// RoundTrip is the engine's view: attempts after the first, with the call state in the
// request's context.
func (t *attemptTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	s := stateOf(req.Context())
	s.attempt++
	if s.getBody != nil {
		// The engine made a shallow copy of the request for this retry; it is ours to change.
		body, err := s.getBody()
		if err != nil {
			return nil, err
		}
		req.Body = body
	}
	resp, through, err := t.send(req, s.attempt, s.pol)
	s.through = through
	return resp, err
}

// send makes attempt number n under policy pol. through reports an answer whose retry goes
// through the adaptive limit (see limiter.observe).
func (t *attemptTransport) send(req *http.Request, n int, pol *Policy) (resp *http.Response, through bool, err error) {
	r := t.r
	var start time.Time
	if r.ev.on(EventAttemptStarted) {
		start = r.ev.clock.Now()
		r.ev.emit(Event{Type: EventAttemptStarted, Attempt: n, Time: start, Context: req.Context()})
	}
	var gen uint64
	if r.adaptive != nil {
		gen = r.adaptive.gen.Load()
	}
	if pol.attempt > 0 {
		resp, err = t.timedAttempt(req, pol.attempt)
	} else {
		resp, err = t.base.RoundTrip(req)
	}
	if resp != nil && r.pace != nil {
		r.pace.observe(resp.Header)
	}
	if r.adaptive != nil {
		rl := limitNone
		if resp != nil && resp.StatusCode == http.StatusTooManyRequests {
			rl = rateLimitOf(req.Context(), resp, r.ev.clock.Now())
		}
		through = r.adaptive.observe(resp, err, gen, rl)
	}
	if r.cool != nil && r.cool.capped.Load() {
		r.cool.answered(resp, err)
	}
	if r.ev.on(EventAttemptFinished) {
		end := r.ev.clock.Now()
		e := Event{Type: EventAttemptFinished, Attempt: n, Err: err, Time: end, Context: req.Context()}
		if !start.IsZero() { // else nobody wanted the start (or a watcher came during the attempt)
			e.Duration = end.Sub(start)
		}
		if resp != nil {
			e.Status = resp.StatusCode
		}
		r.ev.emit(e)
	}
	return resp, through, err
}

// timedAttempt bounds one attempt until its response headers arrive. The attempt's context
// lives on until the body ends, so the body stays readable.
func (t *attemptTransport) timedAttempt(req *http.Request, limit time.Duration) (*http.Response, error) {
	r := t.r
	ctx, cancel := context.WithCancelCause(req.Context())
	timer := r.ev.clock.AfterFunc(limit, func() {
		cancel(&TimeoutError{Pipeline: r.ev.name, Limit: TimeoutAttempt, After: limit})
	})
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	timer.Stop()
	if err != nil {
		if te, ok := context.Cause(ctx).(*TimeoutError); ok && req.Context().Err() == nil {
			err = te
			r.ev.emit(Event{Type: EventTimeout, Timeout: te.Limit, Delay: te.After, Err: te, Context: req.Context()})
		}
		cancel(nil)
		return nil, err
	}
	if resp.Body == nil {
		resp.Body = http.NoBody
	}
	resp.Body = &doneBody{rc: resp.Body, f: cancelFinisher(cancel)}
	return resp, nil
}

type cancelFinisher context.CancelCauseFunc

func (c cancelFinisher) finish(error) { c(nil) }

// checkRetry is the engine's CheckRetry: it classifies the attempt and lets the call state
// decide. It answers (false, nil) to hand the response or error back as it is, (true, nil)
// after sleeping to retry, and (false, err) only when the call's context ended during the wait
// or, for a retry through the adaptive limit, the bulkhead turned it away (see requeue).
func checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	s := stateOf(ctx)
	if s == nil || ctx.Err() != nil {
		return false, nil
	}
	err = stripURL(err)
	retry, reason := s.pol.classify(resp, err)
	if !retry {
		s.gaveUp = notRetried(ctx, resp, err)
		return false, nil
	}
	return s.decide(resp, err, reason)
}

// classify decides whether an attempt's outcome is worth another attempt under p, and why.
func (p *Policy) classify(resp *http.Response, err error) (bool, string) {
	if err != nil {
		return classifyError(err)
	}
	return p.classifyResponse(resp)
}

// decide applies the retry policy to a retryable failure of attempt s.attempt: count, a
// half-open probe (one attempt), a silent route the caller can leave (Call.Elsewhere), server
// hint, deadline, breaker, budget — then sleeps. See checkRetry for the answers.
func (s *callState) decide(resp *http.Response, err error, reason string) (bool, error) {
	r, pol := s.r, s.pol
	giveUp := func(why GaveUp, hint time.Duration) (bool, error) {
		s.gaveUp, s.refused = why, hint
		e := Event{Type: EventGaveUp, Attempt: s.attempt, GaveUp: why, Reason: why.Description(), Err: err, Delay: hint,
			Context: s.Context}
		if resp != nil {
			e.Status = resp.StatusCode
		}
		r.ev.emit(e)
		return false, nil
	}
	now := r.ev.clock.Now()
	delay, fromServer := pol.delay(s.attempt-s.throughs, resp, now)
	// requeued: the limit absorbed the attempt's overload signal, and the retry waits without
	// its slot (see requeue); through: that signal was a 429 for too many at once.
	requeued := s.through && resp != nil
	through := requeued && resp.StatusCode == http.StatusTooManyRequests
	// A retry after a 429 for too many at once is the limit catching up with the provider,
	// not the call failing: it does not count against RetryCount (but a call allowed no
	// retry gets none, and no call makes more than maxRetryCount attempts; see requeue).
	free := through && pol.count > 0
	switch {
	case through:
		// Too many at once: the lowered limit is the backoff. Only the server's own (short)
		// hint is waited for, without the slot.
		reason += ", too many at once: retried through the lowered limit"
		if !fromServer {
			delay = 0
		}
	case requeued:
		// An overload: the backoff is waited for as always, but without the slot, which the
		// lowered limit lets another call use; the retry then waits for one under that limit.
		reason += ", the slot given back for the wait: retried through the lowered limit"
	case resp != nil && resp.StatusCode == http.StatusTooManyRequests && r.cool != nil:
		r.cool.extend(s.Context, r.ev.now(), delay, fromServer) // nobody sends before the hint
	}
	if s.attempt > maxRetryCount || (!free && s.attempt-s.throughs > pol.count) {
		return giveUp(GaveUpExhausted, 0)
	}
	if isProbe(s.Context, r.ev) {
		return giveUp(GaveUpProbe, 0) // one attempt tells whether the provider is back
	}
	if err != nil && silent(err) && elsewhere(s.Context) {
		return giveUp(GaveUpSilent, 0) // another route can serve the call now: no second wait here
	}
	if fromServer && delay > pol.max {
		return giveUp(GaveUpHintTooLong, delay)
	}
	if w, set := maxWaitOf(s.Context); set && delay > w {
		return giveUp(GaveUpWaitTooLong, delay)
	}
	if dl, ok := s.Deadline(); ok && now.Add(delay).After(dl) {
		s.dl = dl
		return giveUp(GaveUpDeadline, delay)
	}
	if r.circuit.blocked(s.Context) {
		return giveUp(GaveUpCircuitOpen, 0)
	}
	// Nor does it spend the retry budget, which keeps retries from multiplying the load on a
	// failing provider: a retry through the limit is sent only into a free slot of a limit
	// just lowered, so it never adds to the calls in flight.
	if r.budget != nil && !through && !r.budget.tryRetry() {
		return giveUp(GaveUpBudget, 0)
	}
	if resp != nil {
		keepBody(resp)
	}
	e := Event{Type: EventRetryScheduled, Attempt: s.attempt, Reason: reason, Err: err, Delay: delay, ServerHint: fromServer,
		Context: s.Context}
	if resp != nil {
		e.Status = resp.StatusCode
	}
	r.ev.emit(e)
	if requeued {
		if free {
			s.throughs++
		}
		return s.requeue(resp, delay, giveUp)
	}
	if err := sleep(s, r.ev.clock, delay); err != nil {
		if resp != nil {
			_ = resp.Body.Close()
		}
		return false, err
	}
	if r.circuit.blocked(s.Context) {
		return giveUp(GaveUpCircuitOpen, 0)
	}
	// A retry spends the provider's budget as much as a new call: it waits its turn.
	if r.cool != nil {
		if err := r.cool.budget(s.Context); err != nil {
			if errors.Is(err, ErrCoolingDown) {
				return giveUp(GaveUpWaitTooLong, 0)
			}
			if resp != nil {
				_ = resp.Body.Close()
			}
			return false, err
		}
	}
	return true, nil
}

// requeue is the end of decide for a retry through the adaptive limit: the call gives its
// bulkhead slot back, waits for delay (after a 429 for too many at once the server's hint, 0
// for none; after a 529 or a 503 the backoff or the hint), for the pipeline's budgets, then
// for a slot again — first within its class, for it was admitted before the calls that wait
// — and retries. A call the bulkhead turns away now (shed for a higher class,
// the queue timeout, a call that never waits) fails with that *BulkheadRejectedError, with
// GaveUpBulkhead; one whose context ends, with its error. Either way it holds a slot again
// when it returns, for the bulkhead layer above frees one when the call ends.
func (s *callState) requeue(resp *http.Response, delay time.Duration, giveUp func(GaveUp, time.Duration) (bool, error)) (bool, error) {
	r := s.r
	b := r.adaptive.b
	// The slot was taken at the bulkhead layer for the same context, by the same class.
	batch := b.counts(classOf(s, b.pol))
	b.release(batch)
	fail := func(err error) (bool, error) {
		b.hold(batch)
		if resp != nil {
			_ = resp.Body.Close()
		}
		return false, err
	}
	if err := sleep(s, r.ev.clock, delay); err != nil {
		return fail(err)
	}
	if r.circuit.blocked(s.Context) {
		b.hold(batch)
		return giveUp(GaveUpCircuitOpen, 0)
	}
	if r.cool != nil {
		if err := r.cool.budget(s.Context); err != nil {
			if errors.Is(err, ErrCoolingDown) {
				b.hold(batch)
				return giveUp(GaveUpWaitTooLong, 0)
			}
			return fail(err)
		}
	}
	if _, err := b.reacquire(s); err != nil {
		var be *BulkheadRejectedError
		if errors.As(err, &be) {
			s.gaveUp = GaveUpBulkhead
			ev := Event{Type: EventGaveUp, Attempt: s.attempt, GaveUp: GaveUpBulkhead, Reason: GaveUpBulkhead.Description(),
				Err: err, Context: s.Context}
			if resp != nil {
				ev.Status = resp.StatusCode
			}
			r.ev.emit(ev)
		}
		return fail(err)
	}
	return true, nil
}

// tokensOf is the token estimate of the innermost Call of ctx (Call.Tokens), 0 for none.
func tokensOf(ctx context.Context) int {
	if c, _ := ctx.Value(callKey{}).(*Call); c != nil {
		return c.Tokens
	}
	return 0
}

// delay returns the wait before retry number n (1-based) and whether it is the server's, at
// time now. Server hints are used as they are; computed delays are capped and jittered.
func (p *Policy) delay(n int, resp *http.Response, now time.Time) (time.Duration, bool) {
	if resp != nil {
		if d, ok := signals.RetryAfter(resp.Header, now); ok {
			return d, true
		}
	}
	return p.Backoff(n, rand.Float64()), false
}

// Backoff returns the policy's computed wait before retry number n (1-based): the base delay,
// constant, linear or exponential in n, capped at RetryMaxDelaySeconds, and with jitter
// multiplied by 0.5+random (random in [0, 1)) and capped again. It is the wait the pipeline
// sleeps between attempts, given the random value it drew, so a job queue that defers the
// retry (package deferral) computes the same one.
func (p *Policy) Backoff(n int, random float64) time.Duration {
	n = max(n, 1)
	base := float64(p.base)
	var d float64
	switch p.backoff {
	case BackoffConstant:
		d = base
	case BackoffLinear:
		d = base * float64(n)
	default:
		d = base * math.Pow(2, float64(n-1))
	}
	max := float64(p.max)
	d = math.Min(d, max)
	if p.jitter {
		d = math.Min(d*(0.5+random), max)
	}
	return time.Duration(d)
}

// MaxDelay returns the policy's cap on every wait (RetryMaxDelaySeconds).
func (p *Policy) MaxDelay() time.Duration { return p.max }

// keepBody swaps a retryable response's body for an in-memory copy of its first keepLimit
// bytes and closes the original, freeing the connection during the wait while keeping the
// response returnable if the call gives up after it.
func keepBody(resp *http.Response) {
	if resp.Body == nil || resp.Body == http.NoBody {
		return
	}
	buf, _ := io.ReadAll(io.LimitReader(resp.Body, keepLimit))
	drain(resp.Body, 4<<10)
	resp.Body = io.NopCloser(bytes.NewReader(buf))
	resp.ContentLength = int64(len(buf))
}

// sleep waits for d on clock c, or until ctx ends, returning ctx's error then.
func sleep(ctx context.Context, c Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	ch := make(chan struct{})
	t := c.AfterFunc(d, func() { close(ch) })
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	}
}

// passError is the engine's ErrorHandler: it hands errors back as they are, without the
// engine's *url.Error, and closes a response that comes with an error.
func passError(resp *http.Response, err error, _ int) (*http.Response, error) {
	if err == nil {
		return resp, nil
	}
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	return nil, stripURL(err)
}

// stripURL removes the *url.Error that the engine's inner http.Client wraps around transport
// errors: it repeats the URL, query string included, which may hold a key.
func stripURL(err error) error {
	if err == nil {
		return nil
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// infoOf is the CallInfo of the innermost Call of ctx, nil for none.
func infoOf(ctx context.Context) *CallInfo {
	if c, _ := ctx.Value(callKey{}).(*Call); c != nil {
		return &c.Info
	}
	return nil
}
