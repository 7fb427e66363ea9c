package resilience

import (
	"context"
	"time"
)

// EventType says what a pipeline layer did.
type EventType int

// The events a pipeline reports to its observer (see OnEvent).
const (
	// EventAttemptStarted: the retry layer sends an attempt to the base transport.
	EventAttemptStarted EventType = iota + 1
	// EventAttemptFinished: an attempt ended with a status (Status) or an error (Err).
	EventAttemptFinished
	// EventRetryScheduled: the attempt failed in a retryable way and the next one starts after
	// Delay; ServerHint says whether Delay came from Retry-After or retry-after-ms.
	EventRetryScheduled
	// EventGaveUp: a retryable failure was not retried; GaveUp says why.
	EventGaveUp
	// EventTimeout: one of the pipeline's own time limits ran out (Timeout, Delay = the limit).
	EventTimeout
	// EventBreakerStateChanged: the circuit went From → To.
	EventBreakerStateChanged
	// EventBreakerRejected: the circuit rejected a call without touching the network.
	EventBreakerRejected
	// EventBulkheadRejected: the bulkhead turned a call away.
	EventBulkheadRejected
	// EventCooldownStarted: a 429 paused the pipeline for Delay (ServerHint: the server's
	// hint), or made a pause longer.
	EventCooldownStarted
	// EventCooldownWaited: a call waits Delay for the pause to end before it is sent.
	EventCooldownWaited
	// EventCooldownRejected: a call could not wait the Delay left of the pause; not sent.
	EventCooldownRejected
	// EventSharedStateFailed: the shared state (WithSharedState) stopped answering (Err says
	// why); calls go on with the instance's own state.
	EventSharedStateFailed
	// EventSharedStateRecovered: the shared state answers again.
	EventSharedStateRecovered
	// EventProbeFinished: the active probe (WithActiveProbe) ran for Duration; Err is why it
	// failed (a *TimeoutError with Limit TimeoutProbe when it ran out of time), nil when the
	// provider serves again. The circuit's change follows as EventBreakerStateChanged.
	EventProbeFinished
	// EventBulkheadAdmitted: the bulkhead gave the call a slot (Priority: its class), after
	// Duration in the queue (0 when a slot was free at once). Limit is the limit in force.
	EventBulkheadAdmitted
	// EventBulkheadQueued: no slot was free for the call (Priority), which waits in the queue.
	EventBulkheadQueued
	// EventConcurrencyLimitChanged: the adaptive concurrency limit (AdaptiveConcurrency) moved
	// from PrevLimit to Limit; Reason says why ("overload: status 529", "a clean round"…).
	EventConcurrencyLimitChanged
)

// String returns a stable snake_case name, suitable as a metric or log attribute.
func (k EventType) String() string {
	switch k {
	case EventAttemptStarted:
		return "attempt_started"
	case EventAttemptFinished:
		return "attempt_finished"
	case EventRetryScheduled:
		return "retry_scheduled"
	case EventGaveUp:
		return "gave_up"
	case EventTimeout:
		return "timeout"
	case EventBreakerStateChanged:
		return "breaker_state_changed"
	case EventBreakerRejected:
		return "breaker_rejected"
	case EventBulkheadRejected:
		return "bulkhead_rejected"
	case EventCooldownStarted:
		return "cooldown_started"
	case EventCooldownWaited:
		return "cooldown_waited"
	case EventCooldownRejected:
		return "cooldown_rejected"
	case EventSharedStateFailed:
		return "shared_state_failed"
	case EventSharedStateRecovered:
		return "shared_state_recovered"
	case EventProbeFinished:
		return "probe_finished"
	case EventBulkheadAdmitted:
		return "bulkhead_admitted"
	case EventBulkheadQueued:
		return "bulkhead_queued"
	case EventConcurrencyLimitChanged:
		return "concurrency_limit_changed"
	}
	return "unknown"
}

// GaveUp says why the retry layer stopped retrying a call that failed: a stable code, fit for
// a metric label or a log field, with a Description for people. The zero value means the call
// did not fail, or ended because the caller gave up.
type GaveUp string

// Why retrying stopped.
const (
	GaveUpNotRetryable GaveUp = "not_retryable" // the failure is not one a retry can cure (a 400, a TLS error…)
	GaveUpExhausted    GaveUp = "exhausted"     // RetryCount retries were made
	GaveUpBudget       GaveUp = "budget"        // the retry budget is spent (RetryBudgetPercent)
	GaveUpHintTooLong  GaveUp = "hint_too_long" // the server asked for a wait above RetryMaxDelaySeconds
	GaveUpDeadline     GaveUp = "deadline"      // the wait would outlast the call's deadline
	GaveUpCircuitOpen  GaveUp = "circuit_open"  // the circuit opened meanwhile: other calls tripped it
	// GaveUpWaitTooLong: the wait exceeds what the caller allows (Call.MaxWait), usually
	// because another provider can serve the call at once.
	GaveUpWaitTooLong GaveUp = "wait_too_long"
	// GaveUpProbe: the call was the half-open probe of the circuit, which makes one attempt
	// whatever its policy: its failure reopens the circuit at once, for a longer break.
	GaveUpProbe GaveUp = "probe"
	// GaveUpSilent: the attempt got nothing back (the attempt timeout, a connection closed or
	// reset before any response, a dial timeout) and the caller can send the call to another
	// route at once (Call.Elsewhere), which it should do rather than wait on this one again.
	GaveUpSilent GaveUp = "silent"
	// GaveUpBulkhead: the call met a 429 that signals too many calls at once, gave its slot
	// back to retry through the lowered adaptive limit, and the bulkhead turned it away before
	// it got one again (shed for a higher class, the queue timeout, a call that never waits).
	// The call fails with that *BulkheadRejectedError.
	GaveUpBulkhead GaveUp = "bulkhead"
)

// BulkheadRejection says why the bulkhead turned a call away: a stable code, fit for a metric
// label.
type BulkheadRejection string

// Why the bulkhead turned a call away.
const (
	// RejectedFull: no slot was free and the call could not queue (the queue was full of
	// calls of its class or higher, or the call may not wait: Call.MaxWait).
	RejectedFull BulkheadRejection = "full"
	// RejectedTimeout: the call queued for BulkheadQueueTimeoutSeconds without a slot.
	RejectedTimeout BulkheadRejection = "timeout"
	// RejectedShed: the call was waiting when the queue was full and a call of a higher class
	// arrived — the newest waiter of the lowest class makes room — or a call of a class that
	// had no place in the queue, which the class with the most waiters gives up (see
	// Priority).
	RejectedShed BulkheadRejection = "shed"
)

// Description explains the code in a few words.
func (g GaveUp) Description() string {
	switch g {
	case GaveUpNotRetryable:
		return "the failure is not retryable"
	case GaveUpExhausted:
		return "retries exhausted"
	case GaveUpBudget:
		return "retry budget spent"
	case GaveUpHintTooLong:
		return "the server's hint exceeds the max delay"
	case GaveUpDeadline:
		return "the wait would pass the deadline"
	case GaveUpCircuitOpen:
		return "the circuit opened"
	case GaveUpWaitTooLong:
		return "the wait exceeds what the caller allows"
	case GaveUpProbe:
		return "a half-open probe makes one attempt"
	case GaveUpSilent:
		return "the route was silent and another can serve the call"
	case GaveUpBulkhead:
		return "no slot again under the lowered concurrency limit"
	}
	return string(g)
}

// Event is one thing a layer did. It never carries headers, bodies, URLs or query strings,
// so it is safe to log or export as it is.
type Event struct {
	Type     EventType
	Pipeline string // the pipeline's name (WithName); for a route, its deployment's
	// Route is the route the event is about — the model, for a pipeline that keeps its state
	// per model (see Pipeline.Route) — "" for the pipeline's own state.
	Route string
	Time  time.Time // from the pipeline's clock

	// Attempt is the 1-based number of the attempt the event is about (attempt events,
	// EventRetryScheduled: the attempt that failed, EventGaveUp: the last attempt).
	Attempt int
	// MaxAttempts is RetryCount+1, of the call's policy.
	MaxAttempts int
	// Policy is the name of the per-call policy the call runs under (see Policy), "" for the
	// pipeline's own.
	Policy string
	// Status is the HTTP status of the attempt, or 0 when it ended without a response.
	Status int
	// Err is the attempt's or call's error, if any. Transport errors name addresses, never URLs.
	Err error
	// Reason is a short human explanation: why an attempt is retried ("status 503",
	// "connection reset") or, for EventGaveUp, GaveUp's Description.
	Reason string
	// GaveUp is why the retry layer stopped (EventGaveUp).
	GaveUp GaveUp
	// Delay is the wait before the next attempt (EventRetryScheduled), the rejected server
	// hint (EventGaveUp), the limit that ran out (EventTimeout), the time until the next
	// probe (EventBreakerRejected) or the break of an opening (EventBreakerStateChanged to
	// open; for an opening adopted from another instance, what is left of its break).
	Delay time.Duration
	// ServerHint reports whether Delay came from the server (Retry-After, retry-after-ms).
	ServerHint bool
	// Duration is how long the attempt took (EventAttemptFinished) or how long the call
	// queued (EventBulkheadRejected, EventBulkheadAdmitted).
	Duration time.Duration
	// Priority is the class of the call (bulkhead events; EventCooldownRejected and
	// EventCooldownWaited of a batch call held back by the budgets' reserve), "" when the
	// layer did not need to know it.
	Priority Priority
	// Rejected says why the bulkhead turned the call away (EventBulkheadRejected).
	Rejected BulkheadRejection
	// Limit is the bulkhead's concurrency limit: the new one (EventConcurrencyLimitChanged), or
	// the one in force (EventBulkheadAdmitted, EventBulkheadRejected); PrevLimit is the one
	// before a change.
	Limit, PrevLimit int
	// Timeout is the limit that ran out (EventTimeout).
	Timeout TimeLimit
	// From and To are the circuit states of EventBreakerStateChanged; To is also set on
	// EventBreakerRejected.
	From, To CircuitState
	// Context is the context of the call the event belongs to, as the layer that reports the
	// event saw it, for trace correlation: trace.SpanFromContext(e.Context) finds the span the
	// caller (or an otelhttp transport above the pipeline) started. A breaker transition
	// carries the context of the call that made it visible, which is usually the call that
	// caused it. Context is nil for events not tied to a call: a transition first seen by a
	// read of the state (CircuitState, CircuitInfo, a health check), Isolate and Reset.
	// Observers may read values from it; they must not wait on it or keep it after they return.
	Context context.Context
	// InCall is set when the event belongs to a call whose caller reports the call's outcome
	// itself (Call.OutcomeReported: the steady client, which may still serve the call from
	// another provider): a give-up is then that provider's, and observers log it as a warning,
	// leaving the call's failure, if it fails, to the caller's own record.
	InCall bool
}

// Observer receives a pipeline's events. It is called synchronously on the goroutine that
// made the call (never under a pipeline lock), so it must be quick and safe for concurrent use.
type Observer func(Event)

// emitter reports a pipeline's events to its observer. Every layer holds the pipeline's one
// emitter: it is how a layer tells the world what it did, and all it knows of the pipeline.
type emitter struct {
	name     string
	route    string // the route of a route pipeline, "" otherwise
	clock    Clock
	observer Observer
	// watch holds the observers added while the pipeline runs (Pipeline.Watch): the
	// pipeline's own, which its routes share. Never nil once the pipeline is built.
	watch       *watchers
	maxAttempts int
	// epoch is when the pipeline was built; wall says clock is the wall clock, which now
	// reads through the monotonic clock alone (see now).
	epoch time.Time
	wall  bool
}

// now reads the pipeline's clock for the hot path of a call. The wall clock is read as
// time.Since(epoch), which reads only the monotonic clock: half the cost of time.Now on a
// virtual machine whose clock is slow to read, and on the same monotonic time line.
func (m *emitter) now() time.Time {
	if m.wall {
		return m.epoch.Add(time.Since(m.epoch))
	}
	return m.clock.Now()
}

// on reports whether anyone listens to events of type t, so a layer can skip building one.
func (m *emitter) on(t EventType) bool { return m.observer != nil || m.watch.wants(t) }

// emit reports e to the observer and the watchers that want it, if there are any.
func (m *emitter) emit(e Event) {
	// Small enough to inline: without an observer or a watcher no event is built, and a
	// pipeline nobody watches pays one atomic load. Which events the watchers want is checked
	// in deliver, and before building the events of every call (on).
	if m.observer != nil || m.watch.list.Load() != nil {
		m.deliver(e)
	}
}

// deliver completes e with what every event carries and hands it to the observer.
func (m *emitter) deliver(e Event) {
	if m.observer == nil && !m.watch.wants(e.Type) {
		return
	}
	e.Pipeline, e.Route = m.name, m.route
	if e.Time.IsZero() { // the layer may have read the clock already
		e.Time = m.clock.Now()
	}
	e.MaxAttempts = m.maxAttempts
	if p := policyIn(e.Context); p != nil {
		e.MaxAttempts, e.Policy = p.count+1, p.name
	}
	e.InCall = outcomeReported(e.Context)
	if m.observer != nil {
		m.observer(e)
	}
	if l := m.watch.list.Load(); l != nil {
		bit := typeBit(e.Type)
		for i, w := range l.fns {
			if l.masks[i]&bit != 0 {
				w(e)
			}
		}
	}
}
