package observe

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/steadyllm/steady/resilience"
)

// The attribute keys of the log records, stable so that queries and alerts can rely on them.
const (
	LogProvider    = "provider"     // the pipeline's (provider's) name
	LogEvent       = "event"        // resilience.EventType.String(): retry_scheduled, gave_up…
	LogAttempt     = "attempt"      // the attempt the event is about, 1-based
	LogMaxAttempts = "max_attempts" // RetryCount+1
	LogStatus      = "status"       // the attempt's HTTP status, when it had one
	LogDelayMs     = "delay_ms"     // the wait, hint, limit or time to the next probe
	LogServerHint  = "server_hint"  // the delay came from Retry-After or retry-after-ms
	LogReason      = "reason"       // why a retry (text), or why the retry layer gave up (a resilience.GaveUp code)
	LogTimeout     = "timeout"      // total, attempt or stream-idle
	LogFrom        = "from"         // circuit state before a transition
	LogTo          = "to"           // circuit state after a transition, or when it rejected
	LogDurationMs  = "duration_ms"  // how long the attempt took, or the caller queued
	LogError       = "error"        // the error's text, URLs and credentials removed

	// Keys of the client's records (Telemetry with WithLogger): a fallback, a call's end.
	LogFallbackTo = "fallback_to" // the provider the chain tries next
	LogErrorKind  = "error_kind"  // the providers.ErrorKind of a failure
	LogOperation  = "operation"   // chat or embeddings
	LogModel      = "model"       // the model asked of the chain's first provider
	LogOutcome    = "outcome"     // success, closed, or the providers.ErrorKind of the failure
	LogAttempts   = "attempts"    // HTTP attempts over every provider tried
	LogFallbacks  = "fallbacks"   // how many times the chain moved on
)

// NewSlogObserver returns an observer that logs every pipeline event to logger (nil means
// slog.Default()), with the stable attribute keys Log… and these levels:
//
//	attempt started, attempt finished                 Debug
//	retry scheduled, timeout                          Warn
//	circuit opened or isolated, circuit rejected call Warn
//	bulkhead rejected call                            Warn
//	circuit half-open or closed                       Info
//	gave up retrying                                  Error
//
// Records are written with the event's context (resilience.Event.Context) when it has one,
// so a handler that adds trace IDs finds the call's span. They never hold a URL, a header, a
// body or a key: events carry none, and error text is scrubbed once more on the way out.
func NewSlogObserver(logger *slog.Logger) resilience.Observer {
	if logger == nil {
		logger = slog.Default()
	}
	return func(e resilience.Event) { logEvent(logger, e) }
}

// logEvent writes one event, at no cost beyond a level check when its level is disabled.
func logEvent(logger *slog.Logger, e resilience.Event) {
	ctx := e.Context
	if ctx == nil {
		ctx = context.Background()
	}
	level := eventLevel(e)
	if !logger.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 8)
	attrs = append(attrs, slog.String(LogProvider, e.Pipeline), slog.String(LogEvent, e.Type.String()))
	if e.Attempt > 0 {
		attrs = append(attrs, slog.Int(LogAttempt, e.Attempt), slog.Int(LogMaxAttempts, e.MaxAttempts))
	}
	if e.Status != 0 {
		attrs = append(attrs, slog.Int(LogStatus, e.Status))
	}
	switch e.Type {
	case resilience.EventRetryScheduled:
		attrs = append(attrs, slog.Int64(LogDelayMs, e.Delay.Round(time.Millisecond).Milliseconds()), slog.Bool(LogServerHint, e.ServerHint),
			slog.String(LogReason, e.Reason))
	case resilience.EventGaveUp:
		attrs = append(attrs, slog.String(LogReason, string(e.GaveUp)))
		if e.Delay > 0 {
			attrs = append(attrs, slog.Int64(LogDelayMs, e.Delay.Round(time.Millisecond).Milliseconds()), slog.Bool(LogServerHint, true))
		}
	case resilience.EventTimeout:
		attrs = append(attrs, slog.String(LogTimeout, string(e.Timeout)), slog.Int64(LogDelayMs, e.Delay.Round(time.Millisecond).Milliseconds()))
	case resilience.EventBreakerStateChanged:
		attrs = append(attrs, slog.String(LogFrom, e.From.String()), slog.String(LogTo, e.To.String()))
	case resilience.EventBreakerRejected:
		attrs = append(attrs, slog.String(LogTo, e.To.String()))
		if e.Delay > 0 {
			attrs = append(attrs, slog.Int64(LogDelayMs, e.Delay.Round(time.Millisecond).Milliseconds()))
		}
	case resilience.EventAttemptFinished, resilience.EventBulkheadRejected:
		attrs = append(attrs, slog.Int64(LogDurationMs, e.Duration.Round(time.Millisecond).Milliseconds()))
	}
	if e.Err != nil {
		attrs = append(attrs, slog.String(LogError, safeText(e.Err)))
	}
	logger.LogAttrs(ctx, level, eventMessage(e), attrs...)
}

func eventLevel(e resilience.Event) slog.Level {
	switch e.Type {
	case resilience.EventAttemptStarted, resilience.EventAttemptFinished:
		return slog.LevelDebug
	case resilience.EventGaveUp:
		return slog.LevelError
	case resilience.EventBreakerStateChanged:
		if e.To == resilience.CircuitOpen || e.To == resilience.CircuitIsolated {
			return slog.LevelWarn
		}
		return slog.LevelInfo
	}
	return slog.LevelWarn // retry, timeout, rejections
}

// eventMessage says what happened in words an on-call engineer reads at a glance.
func eventMessage(e resilience.Event) string {
	p := e.Pipeline
	switch e.Type {
	case resilience.EventAttemptStarted:
		return fmt.Sprintf("attempt %d of %d for %s started", e.Attempt, e.MaxAttempts, p)
	case resilience.EventAttemptFinished:
		if e.Err != nil {
			return fmt.Sprintf("attempt %d of %d for %s failed after %s", e.Attempt, e.MaxAttempts, p, ms(e.Duration))
		}
		return fmt.Sprintf("attempt %d of %d for %s got status %d after %s", e.Attempt, e.MaxAttempts, p, e.Status, ms(e.Duration))
	case resilience.EventRetryScheduled:
		source := "backoff"
		if e.ServerHint {
			source = "server hint"
		}
		return fmt.Sprintf("attempt %d of %d for %s failed (%s); next attempt in %s (%s)", e.Attempt, e.MaxAttempts, p,
			e.Reason, ms(e.Delay), source)
	case resilience.EventGaveUp:
		msg := fmt.Sprintf("gave up on %s after attempt %d of %d: %s", p, e.Attempt, e.MaxAttempts, e.Reason)
		if e.Delay > 0 {
			msg += fmt.Sprintf(" (server asked for %s)", ms(e.Delay))
		}
		return msg
	case resilience.EventTimeout:
		return fmt.Sprintf("%s timeout of %s ran out for %s", e.Timeout, ms(e.Delay), p)
	case resilience.EventBreakerStateChanged:
		switch e.To {
		case resilience.CircuitOpen:
			return fmt.Sprintf("circuit for %s opened (was %s): calls fail fast", p, e.From)
		case resilience.CircuitHalfOpen:
			return fmt.Sprintf("circuit for %s half-open: letting probes through", p)
		case resilience.CircuitIsolated:
			return fmt.Sprintf("circuit for %s isolated by hand: calls fail fast until Reset", p)
		}
		return fmt.Sprintf("circuit for %s closed (was %s): calls flow again", p, e.From)
	case resilience.EventBreakerRejected:
		if e.Delay > 0 {
			return fmt.Sprintf("circuit for %s is %s: call rejected, next probe in %s", p, e.To, ms(e.Delay))
		}
		return fmt.Sprintf("circuit for %s is %s: call rejected", p, e.To)
	case resilience.EventBulkheadRejected:
		if e.Duration > 0 {
			return fmt.Sprintf("bulkhead for %s: no free slot after waiting %s, call rejected", p, ms(e.Duration))
		}
		return fmt.Sprintf("bulkhead for %s full: call rejected", p)
	}
	return fmt.Sprintf("%s event for %s", e.Type, p)
}

// ms rounds a duration for humans: to the millisecond, or to 10 ms past ten seconds.
func ms(d time.Duration) time.Duration {
	if d >= 10*time.Second {
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}
