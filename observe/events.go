package observe

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"

	"github.com/steadyllm/steady/resilience"
)

// Each pipeline event is described once, in the table below: the counter it adds to and that
// counter's label, the span event it becomes, its log level and message, and the fields it
// carries. The metric, trace and log sinks all render from this table; none of them switches
// over event types of its own.

// field is one attribute of an event, named for each sink: its log key and its span event key
// ("" when spans leave it out).
type field struct {
	log  string
	span attribute.Key
}

// The fields of events.
var (
	fAttempt     = field{LogAttempt, keyEvAttempt}
	fMaxAttempts = field{LogMaxAttempts, keyEvMaxAttempts}
	fStatus      = field{LogStatus, semconv.HTTPResponseStatusCodeKey}
	fDelayMs     = field{LogDelayMs, keyEvDelayMs}
	fServerHint  = field{LogServerHint, keyEvServerHint}
	fReason      = field{LogReason, keyEvReason}
	fTimeout     = field{LogTimeout, keyEvTimeout}
	fFrom        = field{LogFrom, keyEvFrom}
	fTo          = field{LogTo, keyEvTo}
	fState       = field{LogTo, keyEvState}
	fDurationMs  = field{LogDurationMs, ""}
	fWaitedMs    = field{LogDurationMs, keyEvWaitedMs}
	fPriority    = field{LogPriority, keyEvPriority}
	fLimit       = field{LogLimit, keyEvLimit}
	fPrevLimit   = field{LogPrevLimit, ""}
)

// value is a field's value: an integer, a string or a boolean.
type value struct {
	f    field
	kind byte // 'i', 's' or 'b'
	i    int64
	s    string
	b    bool
}

// fields collects the fields of one event, on the stack for the usual handful.
type fields struct {
	list [8]value
	n    int
}

func (fs *fields) int(f field, v int64) { fs.put(value{f: f, kind: 'i', i: v}) }
func (fs *fields) str(f field, v string) {
	fs.put(value{f: f, kind: 's', s: v})
}
func (fs *fields) bool(f field, v bool) { fs.put(value{f: f, kind: 'b', b: v}) }
func (fs *fields) ms(f field, d time.Duration) {
	fs.int(f, d.Round(time.Millisecond).Milliseconds())
}
func (fs *fields) put(v value) {
	if fs.n < len(fs.list) {
		fs.list[fs.n] = v
		fs.n++
	}
}

// eventDesc describes one event type for every sink.
type eventDesc struct {
	// counter is the llm_resilience_* counter the event adds to (nil: none); label gives the
	// counter's attribute besides provider (its key "" for none) and the cache key's values.
	counter func(*instruments) metric.Int64Counter
	label   func(e resilience.Event) (key attribute.Key, s string, n int)
	// label2, when set, gives the counter a second attribute (omitted when its value is "");
	// also records what else the event measures, with the counter's attributes o.
	label2 func(e resilience.Event) (key attribute.Key, s string)
	also   func(ctx context.Context, in *instruments, e resilience.Event, o options)
	// span is the name of the span event it becomes ("" for none).
	span    string
	level   func(e resilience.Event) slog.Level
	message func(e resilience.Event) string
	// fields adds the event's own fields (attempt, status and the error are common to all).
	fields func(e resilience.Event, fs *fields)
}

func levelOf(l slog.Level) func(resilience.Event) slog.Level {
	return func(resilience.Event) slog.Level { return l }
}

func hintSource(e resilience.Event) string {
	if e.ServerHint {
		return "server hint"
	}
	return "backoff"
}

// descriptors is the table, indexed by resilience.EventType.
var descriptors = [...]eventDesc{
	resilience.EventAttemptStarted: {
		level: levelOf(slog.LevelDebug),
		message: func(e resilience.Event) string {
			return fmt.Sprintf("attempt %d of %d for %s started", e.Attempt, e.MaxAttempts, e.Pipeline)
		},
	},
	resilience.EventAttemptFinished: {
		level: levelOf(slog.LevelDebug),
		message: func(e resilience.Event) string {
			if e.Err != nil {
				return fmt.Sprintf("attempt %d of %d for %s failed after %s", e.Attempt, e.MaxAttempts, e.Pipeline, ms(e.Duration))
			}
			return fmt.Sprintf("attempt %d of %d for %s got status %d after %s", e.Attempt, e.MaxAttempts, e.Pipeline, e.Status, ms(e.Duration))
		},
		fields: func(e resilience.Event, fs *fields) { fs.ms(fDurationMs, e.Duration) },
	},
	resilience.EventRetryScheduled: {
		counter: func(in *instruments) metric.Int64Counter { return in.retries },
		label:   func(e resilience.Event) (attribute.Key, string, int) { return KeyAttempt, "", e.Attempt },
		span:    SpanEventRetry,
		level:   levelOf(slog.LevelWarn),
		message: func(e resilience.Event) string {
			return fmt.Sprintf("attempt %d of %d for %s failed (%s); next attempt in %s (%s)", e.Attempt, e.MaxAttempts,
				e.Pipeline, e.Reason, ms(e.Delay), hintSource(e))
		},
		fields: func(e resilience.Event, fs *fields) {
			fs.ms(fDelayMs, e.Delay)
			fs.bool(fServerHint, e.ServerHint)
			fs.str(fReason, e.Reason)
		},
	},
	resilience.EventGaveUp: {
		counter: func(in *instruments) metric.Int64Counter { return in.gaveUp },
		label:   func(e resilience.Event) (attribute.Key, string, int) { return KeyReason, string(e.GaveUp), 0 },
		span:    SpanEventRetryGaveUp,
		// The call's failure for a bare pipeline; within a client's call, one provider's
		// give-up, after which the call may still be served elsewhere (the client logs the
		// call's own failure).
		level: func(e resilience.Event) slog.Level {
			if e.InCall {
				return slog.LevelWarn
			}
			return slog.LevelError
		},
		message: func(e resilience.Event) string {
			msg := fmt.Sprintf("gave up on %s after attempt %d of %d: %s", e.Pipeline, e.Attempt, e.MaxAttempts, e.Reason)
			if e.Delay > 0 {
				msg += fmt.Sprintf(" (server asked for %s)", ms(e.Delay))
			}
			return msg
		},
		fields: func(e resilience.Event, fs *fields) {
			fs.str(fReason, string(e.GaveUp))
			if e.Delay > 0 {
				fs.ms(fDelayMs, e.Delay)
				fs.bool(fServerHint, true)
			}
		},
	},
	resilience.EventTimeout: {
		counter: func(in *instruments) metric.Int64Counter { return in.timeouts },
		label:   func(e resilience.Event) (attribute.Key, string, int) { return KeyTimeout, string(e.Timeout), 0 },
		span:    SpanEventTimeout,
		level:   levelOf(slog.LevelWarn),
		message: func(e resilience.Event) string {
			return fmt.Sprintf("%s timeout of %s ran out for %s", e.Timeout, ms(e.Delay), e.Pipeline)
		},
		fields: func(e resilience.Event, fs *fields) {
			fs.str(fTimeout, string(e.Timeout))
			fs.ms(fDelayMs, e.Delay)
		},
	},
	resilience.EventBreakerStateChanged: {
		counter: func(in *instruments) metric.Int64Counter { return in.transitions },
		label:   func(e resilience.Event) (attribute.Key, string, int) { return KeyState, e.To.String(), 0 },
		span:    SpanEventCircuitChanged,
		level: func(e resilience.Event) slog.Level {
			if e.To == resilience.CircuitOpen || e.To == resilience.CircuitIsolated {
				return slog.LevelWarn
			}
			return slog.LevelInfo
		},
		message: func(e resilience.Event) string {
			p := e.Pipeline
			switch e.To {
			case resilience.CircuitOpen:
				return fmt.Sprintf("circuit for %s opened (was %s): calls fail fast", p, e.From)
			case resilience.CircuitHalfOpen:
				return fmt.Sprintf("circuit for %s half-open: letting probes through", p)
			case resilience.CircuitIsolated:
				return fmt.Sprintf("circuit for %s isolated by hand: calls fail fast until Reset", p)
			}
			return fmt.Sprintf("circuit for %s closed (was %s): calls flow again", p, e.From)
		},
		fields: func(e resilience.Event, fs *fields) {
			fs.str(fFrom, e.From.String())
			fs.str(fTo, e.To.String())
		},
	},
	resilience.EventBreakerRejected: {
		counter: func(in *instruments) metric.Int64Counter { return in.circuitRejected },
		label:   func(e resilience.Event) (attribute.Key, string, int) { return KeyState, e.To.String(), 0 },
		span:    SpanEventCircuitRejected,
		level:   levelOf(slog.LevelWarn),
		message: func(e resilience.Event) string {
			if e.Delay > 0 {
				return fmt.Sprintf("circuit for %s is %s: call rejected, next probe in %s", e.Pipeline, e.To, ms(e.Delay))
			}
			return fmt.Sprintf("circuit for %s is %s: call rejected", e.Pipeline, e.To)
		},
		fields: func(e resilience.Event, fs *fields) {
			fs.str(fState, e.To.String())
			if e.Delay > 0 {
				fs.ms(fDelayMs, e.Delay)
			}
		},
	},
	resilience.EventBulkheadRejected: {
		counter: func(in *instruments) metric.Int64Counter { return in.bulkheadRejected },
		label:   priorityLabel,
		label2:  func(e resilience.Event) (attribute.Key, string) { return KeyReason, string(e.Rejected) },
		span:    SpanEventBulkheadRejected,
		level:   levelOf(slog.LevelWarn),
		message: func(e resilience.Event) string {
			switch {
			case e.Rejected == resilience.RejectedShed:
				return fmt.Sprintf("bulkhead for %s: %s call shed from the full queue for a call of another class", e.Pipeline,
					e.Priority)
			case e.Duration > 0:
				return fmt.Sprintf("bulkhead for %s: no free slot after waiting %s, call rejected", e.Pipeline, ms(e.Duration))
			}
			return fmt.Sprintf("bulkhead for %s full: call rejected", e.Pipeline)
		},
		fields: func(e resilience.Event, fs *fields) {
			fs.ms(fWaitedMs, e.Duration)
			priorityFields(e, fs)
			if e.Rejected != "" {
				fs.str(fReason, string(e.Rejected))
			}
			if e.Delay > 0 {
				fs.ms(fDelayMs, e.Delay) // when a slot would be free
			}
		},
	},
	resilience.EventBulkheadAdmitted: {
		counter: func(in *instruments) metric.Int64Counter { return in.bulkheadAdmitted },
		label:   priorityLabel,
		also: func(ctx context.Context, in *instruments, e resilience.Event, o options) {
			in.queueWait(ctx, e, o)
		},
		level: levelOf(slog.LevelDebug),
		message: func(e resilience.Event) string {
			return fmt.Sprintf("bulkhead for %s: %s call admitted after %s", e.Pipeline, e.Priority, ms(e.Duration))
		},
		fields: func(e resilience.Event, fs *fields) {
			fs.ms(fWaitedMs, e.Duration)
			priorityFields(e, fs)
		},
	},
	resilience.EventBulkheadQueued: {
		counter: func(in *instruments) metric.Int64Counter { return in.bulkheadQueued },
		label:   priorityLabel,
		span:    SpanEventBulkheadQueued,
		level:   levelOf(slog.LevelDebug),
		message: func(e resilience.Event) string {
			return fmt.Sprintf("bulkhead for %s: no free slot of %d, %s call queued", e.Pipeline, e.Limit, e.Priority)
		},
		fields: priorityFields,
	},
	resilience.EventConcurrencyLimitChanged: {
		counter: func(in *instruments) metric.Int64Counter { return in.limitChanges },
		label: func(e resilience.Event) (attribute.Key, string, int) {
			if e.Limit < e.PrevLimit {
				return KeyDirection, DirectionDecrease, 0
			}
			return KeyDirection, DirectionIncrease, 0
		},
		also: func(ctx context.Context, in *instruments, e resilience.Event, _ options) { in.limitNow(ctx, e) },
		level: func(e resilience.Event) slog.Level {
			if e.Limit < e.PrevLimit {
				return slog.LevelInfo
			}
			return slog.LevelDebug
		},
		message: func(e resilience.Event) string {
			verb := "raised"
			if e.Limit < e.PrevLimit {
				verb = "lowered"
			}
			return fmt.Sprintf("concurrency limit for %s %s from %d to %d (%s)", e.Pipeline, verb, e.PrevLimit, e.Limit, e.Reason)
		},
		fields: func(e resilience.Event, fs *fields) {
			fs.int(fLimit, int64(e.Limit))
			fs.int(fPrevLimit, int64(e.PrevLimit))
			fs.str(fReason, e.Reason)
		},
	},
	resilience.EventCooldownStarted: {
		counter: func(in *instruments) metric.Int64Counter { return in.cooldowns },
		label:   func(resilience.Event) (attribute.Key, string, int) { return "", "", 0 },
		span:    SpanEventCooldown,
		level:   levelOf(slog.LevelWarn),
		message: func(e resilience.Event) string {
			return fmt.Sprintf("%s rate-limited: pausing calls for %s (%s)", e.Pipeline, ms(e.Delay), hintSource(e))
		},
		fields: func(e resilience.Event, fs *fields) {
			fs.ms(fDelayMs, e.Delay)
			fs.bool(fServerHint, e.ServerHint)
		},
	},
	resilience.EventCooldownWaited: {
		span:  SpanEventCooldownWaited,
		level: levelOf(slog.LevelInfo),
		message: func(e resilience.Event) string {
			return fmt.Sprintf("%s is pausing after a rate limit: waiting %s before sending", e.Pipeline, ms(e.Delay))
		},
		fields: func(e resilience.Event, fs *fields) { fs.ms(fDelayMs, e.Delay) },
	},
	resilience.EventCooldownRejected: {
		counter: func(in *instruments) metric.Int64Counter { return in.cooldownRejected },
		label:   priorityLabel,
		span:    SpanEventCooldownRejected,
		level:   levelOf(slog.LevelWarn),
		message: func(e resilience.Event) string {
			if e.Reason != "" { // a per-minute limit, not a pause
				return fmt.Sprintf("%s has no room in its %s for %s more: call not sent", e.Pipeline, e.Reason, ms(e.Delay))
			}
			return fmt.Sprintf("%s is pausing after a rate limit for %s more: call not sent", e.Pipeline, ms(e.Delay))
		},
		fields: func(e resilience.Event, fs *fields) {
			fs.ms(fDelayMs, e.Delay)
			priorityFields(e, fs)
		},
	},
	resilience.EventSharedStateFailed: {
		counter: func(in *instruments) metric.Int64Counter { return in.sharedFailures },
		label:   func(resilience.Event) (attribute.Key, string, int) { return "", "", 0 },
		span:    SpanEventSharedState,
		level:   levelOf(slog.LevelWarn),
		message: func(e resilience.Event) string {
			return fmt.Sprintf("%s: the shared state does not answer; going on with this instance's own state", e.Pipeline)
		},
	},
	resilience.EventSharedStateRecovered: {
		span:  SpanEventSharedState,
		level: levelOf(slog.LevelInfo),
		message: func(e resilience.Event) string {
			return fmt.Sprintf("%s: the shared state answers again", e.Pipeline)
		},
	},
	resilience.EventProbeFinished: {
		counter: func(in *instruments) metric.Int64Counter { return in.probes },
		label: func(e resilience.Event) (attribute.Key, string, int) {
			if e.Err != nil {
				return KeyOutcome, OutcomeFailure, 0
			}
			return KeyOutcome, OutcomeSuccess, 0
		},
		level: func(e resilience.Event) slog.Level {
			if e.Err != nil {
				return slog.LevelWarn
			}
			return slog.LevelInfo
		},
		message: func(e resilience.Event) string {
			if e.Err != nil {
				return fmt.Sprintf("active probe of %s failed after %s: the circuit stays open", e.Pipeline, ms(e.Duration))
			}
			return fmt.Sprintf("active probe of %s succeeded after %s: the circuit closes", e.Pipeline, ms(e.Duration))
		},
		fields: func(e resilience.Event, fs *fields) { fs.ms(fDurationMs, e.Duration) },
	},
}

// priorityLabel is the priority attribute of a counter, omitted for an event that does not
// know the call's class.
func priorityLabel(e resilience.Event) (attribute.Key, string, int) {
	if e.Priority == "" {
		return "", "", 0
	}
	return KeyPriority, string(e.Priority), 0
}

// priorityFields adds the call's class and the bulkhead's limit, when the event has them.
func priorityFields(e resilience.Event, fs *fields) {
	if e.Priority != "" {
		fs.str(fPriority, string(e.Priority))
	}
	if e.Limit > 0 {
		fs.int(fLimit, int64(e.Limit))
	}
}

// describe returns the descriptor of e's type, or nil for a type this version does not know.
func describe(e resilience.Event) *eventDesc {
	if int(e.Type) <= 0 || int(e.Type) >= len(descriptors) || descriptors[e.Type].level == nil {
		return nil
	}
	return &descriptors[e.Type]
}

// collect returns the fields of e: attempt and status, which every event that has them
// carries, then the event's own.
func (d *eventDesc) collect(e resilience.Event) fields {
	var fs fields
	if e.Attempt > 0 {
		fs.int(fAttempt, int64(e.Attempt))
		fs.int(fMaxAttempts, int64(e.MaxAttempts))
	}
	if e.Status != 0 {
		fs.int(fStatus, int64(e.Status))
	}
	if d.fields != nil {
		d.fields(e, &fs)
	}
	return fs
}

// ms rounds a duration for humans: to the millisecond, or to 10 ms past ten seconds.
func ms(d time.Duration) time.Duration {
	if d >= 10*time.Second {
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}
