package observe

import (
	"context"
	"fmt"
	"log/slog"

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
	LogTimeout     = "timeout"      // total, attempt, stream-idle, stream-stall, first-token or probe
	LogFrom        = "from"         // circuit state before a transition
	LogTo          = "to"           // circuit state after a transition, or when it rejected
	LogDurationMs  = "duration_ms"  // how long the attempt took, or the caller queued
	LogError       = "error"        // the error's text, URLs and credentials removed
	LogPriority    = "priority"     // the class of the call (interactive, default, batch)
	LogLimit       = "limit"        // the bulkhead's concurrency limit
	LogPrevLimit   = "prev_limit"   // the concurrency limit before a change

	// Keys of the client's records (Telemetry with WithLogger): a fallback, a call's end. A
	// record's provider, deployment and model name one route, the one it is about: for a
	// fallback, the route that failed; for a call's end, the route that served, or whose
	// failure explains the call's error (the failure a chain's error leads with; the route
	// tried last when that failure is none's, as when the whole-call deadline passed between
	// two tries); for a call no route was tried for (a budget's refusal, a bad request), no
	// provider or deployment, and the model its first route would have been asked.
	LogFallbackTo = "fallback_to" // the provider the chain tries next
	LogErrorKind  = "error_kind"  // the providers.ErrorKind of a failure
	LogOperation  = "operation"   // chat or embeddings
	// LogModel is the model of the record's route: as the server named it in its answer, for
	// a call that was served; else as the route was asked (after the client's model mapping,
	// a budget's downgrade, the deployment's own model; the provider's default when the call
	// named none). On a pipeline event, the model whose route the event is about.
	LogModel = "model"
	// LogRequestModel is the model the call asked its first route for (after a budget's
	// downgrade), when LogModel names another: a fallback's, or the server's own name for it.
	LogRequestModel = "request_model"
	LogOutcome      = "outcome"           // success, closed, or the providers.ErrorKind of the failure
	LogAttempts     = "attempts"          // HTTP attempts over every provider tried
	LogFallbacks    = "fallbacks"         // how many times the chain moved on
	LogPolicy       = "policy"            // the named policy of the call (client.WithPolicy)
	LogDeployment   = "deployment"        // the deployment of the record's route, "<provider>/<name>"
	LogRequestID    = "client_request_id" // the call's own ID (client.WithRequestID)
)

// NewSlogObserver returns an observer that logs every pipeline event to logger (nil means
// slog.Default()), with the stable attribute keys Log… and these levels:
//
//	attempt started, attempt finished                 Debug
//	retry scheduled, timeout                          Warn
//	circuit opened or isolated, circuit rejected call Warn
//	bulkhead rejected call                            Warn
//	circuit half-open or closed                       Info
//	gave up retrying                                  Error; Warn within a client's call
//
// Within a call of the steady client (resilience.Event.InCall) a give-up is one provider's:
// the client may still serve the call from another, and logs the call's own failure at Error
// (Telemetry with WithLogger), so a call served by a fallback leaves no Error record. A call
// the caller canceled is logged at Info, and one a budget refused (budget_exhausted, the
// application's own policy: no provider failed) at Warn.
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
	d := describe(e)
	if d == nil {
		if logger.Enabled(ctx, slog.LevelWarn) {
			logger.LogAttrs(ctx, slog.LevelWarn, fmt.Sprintf("%s event for %s", e.Type, e.Pipeline),
				slog.String(LogProvider, e.Pipeline), slog.String(LogEvent, e.Type.String()))
		}
		return
	}
	level := d.level(e)
	if !logger.Enabled(ctx, level) {
		return
	}
	fs := d.collect(e)
	attrs := make([]slog.Attr, 0, fs.n+4)
	attrs = append(attrs, slog.String(LogProvider, e.Pipeline), slog.String(LogEvent, e.Type.String()))
	if e.Route != "" {
		attrs = append(attrs, slog.String(LogModel, e.Route))
		e.Pipeline += " (" + e.Route + ")" // the message names the model too: "gave up on openai (gpt-4o)…"
	}
	for _, v := range fs.list[:fs.n] {
		switch v.kind {
		case 'i':
			attrs = append(attrs, slog.Int64(v.f.log, v.i))
		case 's':
			attrs = append(attrs, slog.String(v.f.log, v.s))
		case 'b':
			attrs = append(attrs, slog.Bool(v.f.log, v.b))
		}
	}
	if e.Err != nil {
		attrs = append(attrs, slog.String(LogError, safeText(e.Err)))
	}
	logger.LogAttrs(ctx, level, d.message(e), attrs...)
}
