package client

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/resilience"
)

// CallOption changes one call of Chat, ChatStream or Embed. Calls without options pay nothing
// for them.
type CallOption func(*callOptions)

// callOptions is what the options of one call asked for.
type callOptions struct {
	policy    string        // a named policy (WithPolicy)
	timeout   time.Duration // a total time limit (WithTimeout); 0 for the policy's
	hasTO     bool
	only      []string // the providers to try, in order (WithProviders)
	skip      []string // providers not to try (WithoutProviders)
	noFall    bool     // the first provider alone (WithoutFallback)
	header    http.Header
	fields    map[string]map[string]any // target (provider name or system) → body fields
	requestID string
	attrs     []slog.Attr
	sticky    string
	deferred  bool
	attempt   int // the job's attempt number, with deferred
	// firstToken is the call's first-token limit (WithFirstTokenTimeout), nil for the policy's;
	// rescue its StreamRescue (WithRescue), "" for the policy's.
	firstToken *time.Duration
	rescue     string
	// hedge is the call's own hedging (WithHedge; WithoutHedge: After 0), nil for the
	// policy's.
	hedge *resilience.Hedge
	// priority is the call's class (WithPriority), "" for its policy's.
	priority    resilience.Priority
	hasPriority bool
	// restartGone lets the call start over when its stored answer is gone (WithRestartIfGone).
	restartGone bool
	// callTimeout is the call's whole-call deadline (WithCallTimeout), nil for its policy's.
	callTimeout *time.Duration
	// keys are the call's budget keys (WithBudgetKey, WithTenant).
	keys []cost.Key
}

// WithFirstTokenTimeout sets, for a stream, the first-token limit of each route's try (the
// policy's FirstTokenTimeoutSeconds): the time from sending to the first content, after which
// the call moves to the next route. d must be above 0 (a call never turns the policy's limit
// off; give a long one instead). A stream that asks for reasoning (ChatRequest.Reasoning) has
// no first-token limit but this one, since a model that streams no reasoning may think for
// minutes before its first token.
func WithFirstTokenTimeout(d time.Duration) CallOption {
	return func(o *callOptions) { o.firstToken = &d }
}

// WithRescue sets what a stream that fails after content does (the policy's StreamRescue):
// "continue" (the default), "continue-or-buffer", "off", "restart" or "buffer" (see
// ChatStream). Another value is a bad_request.
func WithRescue(mode string) CallOption {
	return func(o *callOptions) { o.rescue = mode }
}

// WithRestartIfGone lets a call whose stored answer is gone start over. A background stream
// (ChatRequest.Background) that is cut is resumed on its route; when the server no longer
// holds the answer (a 404: providers.ErrResponseGone) the call fails by default, with the text
// delivered in Partial, because asking again produces — and bills — the answer a second time,
// which only the caller may decide. With this option the whole request is sent again instead:
// first to the route that lost the answer (once), then along the chain as after a failure that
// falls back; a stream that had delivered content delivers the new answer after a delta marked
// Restart, as StreamRescue "restart" does (other failures after content are rescued only as
// the call's StreamRescue says). A call that continues from stored state
// (ChatRequest.Previous, Conversation, a conversation pruned at its compaction item: any
// ChatRequest.Pin) never starts over: without that state there is nothing
// to start from, so its gone error is the call's.
func WithRestartIfGone() CallOption {
	return func(o *callOptions) { o.restartGone = true }
}

// Deferred runs the call in deferred mode, for a background job whose queue will retry it:
// each provider of the chain gets at most one attempt; nothing sleeps — not for a backoff, a
// server's hint, a rate-limit pause, a budget or a bulkhead slot; and a failure comes back as a
// *deferral.Error carrying the decision (retry at T, or never, and why) computed for attempt,
// the job's attempt number (1 for the first), with the call's policy (WithPolicy, else the
// first provider's); for a chain, the earliest time any of its providers may serve. Hand the
// decision to the queue: see package deferral.
//
// An attempt below 1 is a bad_request.
func Deferred(attempt int) CallOption {
	return func(o *callOptions) { o.deferred, o.attempt = true, attempt }
}

// WithStickyKey routes the call, within a provider of several deployments, to the deployment
// that key (a session or user ID) maps to, so that calls of one conversation land where its
// prompt cache is warm. When that deployment cannot take the call now (its circuit, a
// rate-limit pause, no budget left), the call goes to the next deployment in the key's order.
func WithStickyKey(key string) CallOption {
	return func(o *callOptions) { o.sticky = key }
}

// WithPolicy runs the call under the named policy of the client (WithPolicies, or
// LLM.Policies in the configuration): its retries, backoff and time limits, for every provider
// the call tries. Each provider's circuit breaker, bulkhead and retry budget stay shared with
// its other calls. The name matches as in the configuration: exactly, else ignoring case. An
// unknown name is a bad_request, before anything is sent.
func WithPolicy(name string) CallOption {
	return func(o *callOptions) { o.policy = name }
}

// WithTimeout sets the total time limit of each provider's try of this call (the policy's
// TimeoutSeconds), keeping the rest of the policy; it may be shorter or longer than the
// policy's. d must be above 0: a per-call option never turns the policy's limit off, and d <= 0
// is a bad_request. To bound the whole call, fallbacks included, see WithCallTimeout.
func WithTimeout(d time.Duration) CallOption {
	return func(o *callOptions) { o.timeout, o.hasTO = d, true }
}

// WithProviders tries only the named providers, in this order, instead of the fallback chain.
// Each must be a provider of the client, matched as in the configuration (exactly, else
// ignoring case); an unknown name is a bad_request.
func WithProviders(names ...string) CallOption {
	return func(o *callOptions) { o.only = append(o.only[:0:0], names...) }
}

// WithoutProviders skips the named providers for this call, matched as WithProviders matches
// them; an unknown name is a bad_request.
func WithoutProviders(names ...string) CallOption {
	return func(o *callOptions) { o.skip = append(o.skip, names...) }
}

// WithoutFallback tries the first provider of the chain (after WithProviders and
// WithoutProviders) and no other.
func WithoutFallback() CallOption {
	return func(o *callOptions) { o.noFall = true }
}

// WithHeader adds a header to every HTTP request of the call, to every provider. It cannot
// replace the headers the provider sets itself for authentication (Authorization, x-api-key,
// api-key): those are dropped from the option. A name that is not an HTTP token, or a value
// with a control character (CR, LF, NUL…), is a bad_request before anything is sent; the
// value is never repeated in the error.
func WithHeader(key, value string) CallOption {
	return func(o *callOptions) {
		if o.header == nil {
			o.header = http.Header{}
		}
		o.header.Add(key, value)
	}
}

// WithExtraFields adds fields to the JSON body sent to target — a provider's name ("openai",
// "claude") or a GenAI system (providers.SystemOpenAI, SystemAzureOpenAI, SystemAnthropic) —
// and to no other provider, so a field one API accepts never reaches another in a fallback.
// A field replaces the one of the same name the provider wrote, except the fields that decide
// the kind of call (providers.Shaper: "stream", "stream_options", "model"…),
// which are a bad_request. Fields for a provider's name and for its GenAI system both apply;
// the name's win on the same key. A target that names neither is a bad_request. It is the
// escape hatch for what the neutral request lacks (a provider's newest parameter, a vendor
// extension of an OpenAI-compatible server); the values are encoded with encoding/json.
func WithExtraFields(target string, fields map[string]any) CallOption {
	return func(o *callOptions) {
		if o.fields == nil {
			o.fields = map[string]map[string]any{}
		}
		m := o.fields[target]
		if m == nil {
			m = map[string]any{}
			o.fields[target] = m
		}
		for k, v := range fields {
			m[k] = v
		}
	}
}

// WithRequestID gives the call a stable ID, sent as RequestIDHeader on every attempt and every
// fallback, and returned in the response (ClientRequestID) and in every error of the call
// (providers.Error.ClientRequestID), validation errors included, so logs on both sides can be
// joined. An ID with a control character (CR, LF, NUL…) or longer than MaxRequestIDBytes is a
// bad_request before anything is sent.
func WithRequestID(id string) CallOption {
	return func(o *callOptions) { o.requestID = id }
}

// WithAttributes adds attributes to the call's telemetry: its span and its log record (not its
// metrics, where unbounded values would multiply the series). Give only what may be recorded:
// a tenant or a feature name, never a prompt.
func WithAttributes(attrs ...slog.Attr) CallOption {
	return func(o *callOptions) { o.attrs = append(o.attrs, attrs...) }
}

// collect applies opts; it returns nil when there are none, so a call without options
// allocates nothing for them.
func collect(opts []CallOption) *callOptions {
	if len(opts) == 0 {
		return nil
	}
	o := &callOptions{}
	for _, f := range opts {
		if f != nil {
			f(o)
		}
	}
	return o
}
