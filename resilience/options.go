package resilience

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Rescue modes accepted in [Options.StreamRescue].
const (
	RescueOff     = "off"     // a stream that fails after content ends in an error with its partial text
	RescueRestart = "restart" // the next route answers again, after a delta marked Restart
	RescueBuffer  = "buffer"  // nothing is delivered until the answer is complete
	// RescueContinue: the next route that can continue an answer (an assistant prefill, or a
	// declared continuation prompt) is asked for the rest of it, delivered after what came
	// before, nothing repeated or retracted; where no route can, an error with the partial
	// text, as "off".
	RescueContinue = "continue"
	// RescueContinueOrBuffer is "continue" when a route after the first can continue the
	// answer, else "buffer" (decided as each try starts).
	RescueContinueOrBuffer = "continue-or-buffer"
)

// Backoff names accepted in [Options.RetryBackoff].
const (
	BackoffConstant    = "constant"    // every retry waits RetryBaseDelaySeconds
	BackoffLinear      = "linear"      // retry n waits n × RetryBaseDelaySeconds
	BackoffExponential = "exponential" // retry n waits 2^(n-1) × RetryBaseDelaySeconds
)

// Options is the resilience policy of one pipeline: the JSON object LLM.Resilience. Field names
// are the JSON keys. Durations are seconds as float64, so 0.25 means 250 ms.
//
// Start from [DefaultOptions] and change what you need: the zero value is not a usable policy
// and [Options.Validate] says why, field by field.
type Options struct {
	// RetryCount is the number of retries after the first attempt: 3 means at most 4 attempts.
	// 0 disables retries. Allowed: 0..20.
	RetryCount int `json:"RetryCount"`
	// RetryBaseDelaySeconds is the base of the computed backoff. Allowed: 0..3600.
	RetryBaseDelaySeconds float64 `json:"RetryBaseDelaySeconds"`
	// RetryMaxDelaySeconds caps every wait. A server hint (Retry-After, retry-after-ms) above it
	// is not shortened: the call gives up at once and returns the response with the hint intact.
	// Allowed: RetryBaseDelaySeconds..3600.
	RetryMaxDelaySeconds float64 `json:"RetryMaxDelaySeconds"`
	// RetryBackoff is "constant", "linear" or "exponential".
	RetryBackoff string `json:"RetryBackoff"`
	// RetryUseJitter multiplies each computed delay by a random factor in [0.5, 1.5) so that
	// clients that failed together do not retry together. Server hints are never jittered.
	RetryUseJitter bool `json:"RetryUseJitter"`
	// RetryableStatusCodes are the HTTP statuses that are retried. An x-should-retry response
	// header overrides this list either way. Allowed: codes in 400..599.
	RetryableStatusCodes []int `json:"RetryableStatusCodes"`
	// RetryBudgetPercent limits retries, over a sliding window of RetryBudgetWindowSeconds, to
	// this percentage of the calls in that window plus RetryBudgetFloor, so an outage does not
	// multiply the load on a provider. 0 turns the budget off. Allowed: 0..100.
	RetryBudgetPercent float64 `json:"RetryBudgetPercent"`
	// RetryBudgetFloor is the number of retries the budget allows in any window whatever the
	// traffic, so that a quiet client (or a fresh pipeline, which has seen no calls yet) can
	// still retry. Allowed: 0..1000.
	RetryBudgetFloor int `json:"RetryBudgetFloor"`
	// RetryBudgetWindowSeconds is the sliding window over which the budget counts calls and
	// retries. Allowed: 1..3600.
	RetryBudgetWindowSeconds float64 `json:"RetryBudgetWindowSeconds"`

	// CircuitBreakerThreshold is the number of consecutive failed calls that opens the circuit.
	// Allowed: 1..1000.
	CircuitBreakerThreshold int `json:"CircuitBreakerThreshold"`
	// CircuitBreakerDurationSeconds is the longest break: how long the circuit stays open
	// before it lets a probe through, once the breaks have grown (see
	// CircuitBreakerMinDurationSeconds). It also bounds an opening adopted from another
	// instance (WithSharedState). Allowed: 0.001..86400.
	CircuitBreakerDurationSeconds float64 `json:"CircuitBreakerDurationSeconds"`
	// CircuitBreakerMinDurationSeconds is the first break: an opening after the circuit has
	// been healthy lasts this long. Each failed probe doubles the break, up to
	// CircuitBreakerDurationSeconds, but never beyond a tenth of the time since the outage
	// began (nor below this minimum), so the wait after an outage ends stays a small share of
	// the outage: a one-minute outage is probed every few seconds, an hour-long one every
	// CircuitBreakerDurationSeconds. The breaks start from the minimum again once the circuit
	// has stayed closed for as long as its last break; a provider that fails again sooner
	// (one that flaps) goes on where it left off. 0, the default, means 5 seconds, or
	// CircuitBreakerDurationSeconds when that is shorter; equal to CircuitBreakerDurationSeconds,
	// every break lasts that long, as before the breaks grew. Allowed: 0, or
	// 0.001..CircuitBreakerDurationSeconds.
	CircuitBreakerMinDurationSeconds float64 `json:"CircuitBreakerMinDurationSeconds"`
	// CircuitBreakerFailureRatio, when above 0, also opens the circuit once this fraction of
	// the calls in the last CircuitBreakerSamplingSeconds failed, provided at least
	// CircuitBreakerMinThroughput calls were seen. 0 turns ratio mode off. Allowed: 0..1.
	CircuitBreakerFailureRatio float64 `json:"CircuitBreakerFailureRatio"`
	// CircuitBreakerSamplingSeconds is the sliding window of ratio mode. Allowed: 1..86400.
	CircuitBreakerSamplingSeconds float64 `json:"CircuitBreakerSamplingSeconds"`
	// CircuitBreakerMinThroughput is the number of calls ratio mode needs in its window before
	// it may open the circuit. Allowed: 1..100000.
	CircuitBreakerMinThroughput int `json:"CircuitBreakerMinThroughput"`
	// CircuitBreakerHalfOpenMaxRequests is the number of probes let through when the break
	// has elapsed; that many consecutive successes close the circuit, one failure reopens it.
	// Allowed: 1..1000.
	CircuitBreakerHalfOpenMaxRequests int `json:"CircuitBreakerHalfOpenMaxRequests"`

	// TimeoutSeconds bounds the whole logical call through the pipeline — with the steady
	// client, one route's try: every attempt, every backoff and reading an ordinary response
	// body. For an event stream whose reader reports its first content (Call.WatchStream, as the
	// steady client's ChatStream does) it ends with that content, so a server that sends
	// headers and keep-alives but nothing else is held to it; for any other event stream it ends
	// when the stream's headers arrive. With FirstTokenTimeoutSeconds too, the tighter of the two
	// ends a stream without content. 0 disables it. To bound a client call across its fallbacks,
	// see CallTimeoutSeconds. Allowed: 0..86400.
	TimeoutSeconds float64 `json:"TimeoutSeconds"`
	// CallTimeoutSeconds is the whole-call deadline of the steady client (client.Client): it
	// bounds one call — every try of every route, their retries, backoffs and hedges, and the
	// fallbacks — together, where TimeoutSeconds bounds one route's try. A wait that would end
	// past it (a Retry-After, a backoff, a rate-limit pause) is not started: the try gives up
	// at once; no route is started once it has passed; an attempt in flight when it runs out is
	// cancelled. The call then fails with kind timeout and GaveUp "deadline", never counted
	// against a circuit (it is the caller's budget, not the provider's failure). For a stream it
	// bounds the time until ChatStream returns (its first content, or with StreamRescue
	// "buffer" the whole answer); from then on StreamIdleTimeoutSeconds and the caller's context
	// bound the stream. The client reads it from the call's policy (client.WithPolicy), else
	// from the first provider of its chain; client.WithCallTimeout sets it per call. A bare
	// pipeline (Wrap), which makes one try per call, ignores it: TimeoutSeconds bounds that
	// try. 0, the default, sets no deadline of the call's own (the caller's context may).
	// Allowed: 0..86400.
	CallTimeoutSeconds float64 `json:"CallTimeoutSeconds"`
	// AttemptTimeoutSeconds bounds each attempt until its response headers arrive; an attempt
	// that runs out is retried. 0 disables it. Allowed: 0..86400, below TimeoutSeconds.
	AttemptTimeoutSeconds float64 `json:"AttemptTimeoutSeconds"`
	// StreamIdleTimeoutSeconds bounds each silence on the wire of an event stream
	// (Content-Type text/event-stream). The default, 20 s, cuts a stream that stalls for 30 s
	// after content (so a rescue can answer it) while leaving room for providers that pause
	// between chunks (they send pings meanwhile); raise it for servers that run long tools
	// in the middle of a stream without a word. After a client stream's first content, the
	// stall limit (StreamStallFactor) usually cuts a stall sooner. 0 disables it.
	// Allowed: 0..86400.
	StreamIdleTimeoutSeconds float64 `json:"StreamIdleTimeoutSeconds"`
	// FirstTokenTimeoutSeconds bounds, for a streamed call (Call.AwaitFirstToken: the client's
	// ChatStream), the time from sending to the first content — not to the headers, which a
	// provider sends before it has produced anything. When it runs out the attempt is
	// abandoned (its connection closed) with a timeout, never retried on the same pipeline, so
	// the client moves to the next route at once with the rest of the deadline (it asks the
	// same route again only when no other can serve and RetryCount is above 0). The default,
	// 10 s, turns a provider that answers its first token after 20 s — or never — into an
	// answer from the fallback within about 10 s plus the fallback's own time. 0 disables it.
	// Allowed: 0..86400.
	FirstTokenTimeoutSeconds float64 `json:"FirstTokenTimeoutSeconds"`
	// StreamStallFactor turns stall detection on (0 turns it off): once a stream's first
	// content has arrived, a silence on the wire longer than this many times the 99th
	// percentile of the route's recent waits between bytes (see Pipeline.StreamRhythm),
	// within StreamStallMinSeconds and StreamStallMaxSeconds, cuts the stream as stalled —
	// a timeout, rescued by StreamRescue like any failure after content, or ended with the
	// partial answer — long before StreamIdleTimeoutSeconds would. Until a route has seen 16
	// such waits (its own streams', the running one's included) the limit is
	// StreamStallMaxSeconds; the idle limit always applies too, the shorter wins. Only the steady
	// client's streams are watched (they report their first content); the pauses before the
	// first content are the first-token limit's, never this one's. The default, 8, with a
	// floor of 1 s, cuts a stream that delivered a token every 15 ms about 1 s into its
	// stall. Allowed: 0, or 2..1000.
	StreamStallFactor float64 `json:"StreamStallFactor"`
	// StreamStallMinSeconds is the shortest stall limit (default 1): a route whose tokens
	// come every few milliseconds still has this long to pause. Allowed: 0.05..3600.
	StreamStallMinSeconds float64 `json:"StreamStallMinSeconds"`
	// StreamStallMaxSeconds is the longest stall limit (default 10), and the limit while a
	// route's rhythm is still unknown: a stream silent this long after its first content is
	// stalled, whatever its route's rhythm (StreamIdleTimeoutSeconds cuts first when shorter).
	// Raise it, or set StreamStallFactor 0, for servers that pause longer mid-stream without
	// a byte. Allowed: StreamStallMinSeconds..86400.
	StreamStallMaxSeconds float64 `json:"StreamStallMaxSeconds"`
	// StreamRescue says what a stream that fails after content has reached the caller does:
	// "continue" (the default) asks the next route that can continue an answer for the rest
	// of it (see RescueContinue), and ends like "off" where none can — right for every
	// caller, a relay included, as it never takes back what was delivered nor holds back the
	// first token; "off" ends it with an error carrying the partial text; "continue-or-buffer" buffers instead when none can; "restart" asks the
	// next route for the whole answer again and delivers it after a delta marked Restart
	// (discard what you have); "buffer" delivers nothing until the answer is complete
	// (all-or-nothing, for JSON), so a failure at any point can move to the next route
	// unseen. See client.ChatStream.
	StreamRescue string `json:"StreamRescue"`

	// BulkheadMaxConcurrency is the number of exchanges in flight at once; an exchange holds
	// its slot until its response body is closed or read to the end. Allowed: 1..100000.
	BulkheadMaxConcurrency int `json:"BulkheadMaxConcurrency"`
	// BulkheadMaxQueue is the number of callers that may wait for a slot, first come first
	// served; the next one is rejected at once. 0 means no waiting. Allowed: 0..1000000.
	BulkheadMaxQueue int `json:"BulkheadMaxQueue"`
	// BulkheadQueueTimeoutSeconds is the longest a caller waits for a slot. 0 means the
	// caller waits until its own context ends. Allowed: 0..86400.
	BulkheadQueueTimeoutSeconds float64 `json:"BulkheadQueueTimeoutSeconds"`

	// RateLimitCooldown pauses the whole pipeline after a 429 (not an exhausted quota) until
	// the server's hint (Retry-After, retry-after-ms) says it may send again, or, without a
	// hint, for the first backoff delay: a new call waits for the pause when the wait fits its
	// deadline and RetryMaxDelaySeconds (and Call.MaxWait), and is refused with a
	// *CooldownError (kind rate_limited, nothing sent) otherwise. A 429 never counts against
	// the circuit. Under an adaptive limit above its floor, a 429 that signals too many calls
	// at once rather than a spent budget (no budget at 0 in its rate-limit headers, no hint
	// over a second) pauses nothing: it shrinks the limit instead (see AdaptiveConcurrency).
	RateLimitCooldown bool `json:"RateLimitCooldown"`
	// RateLimitMaxPauseSeconds is the longest one rate-limit pause lasts, whatever the server
	// asks for: a 429 with "Retry-After: 86400" pauses the pipeline this long, then one call
	// goes through as a probe while the others still wait; its answer ends the pause (anything
	// but a 429) or starts the next one. A pause shared by another instance
	// (WithSharedState) is bounded the same way. The call that met the long hint still gets
	// it intact (GaveUp hint_too_long), for a job queue to defer the work. Allowed: 1..86400.
	RateLimitMaxPauseSeconds float64 `json:"RateLimitMaxPauseSeconds"`

	// PaceRequestsPerMinute and PaceTokensPerMinute keep the pipeline under its provider's
	// rate limits before any 429: each call debits one request and its token estimate
	// (Call.Tokens) from per-minute limits, and waits for room when the wait fits its deadline
	// and RetryMaxDelaySeconds, else it is refused with a *CooldownError naming the budget
	// (kind rate_limited, nothing sent). 0 means unknown: the budget is learnt from the
	// answers' rate-limit headers (PaceFromHeaders), or not paced. Allowed: 0..100000000.
	PaceRequestsPerMinute int `json:"PaceRequestsPerMinute"`
	PaceTokensPerMinute   int `json:"PaceTokensPerMinute"`
	// PaceFromHeaders learns the budgets from the x-ratelimit-* / anthropic-ratelimit-*
	// headers of the answers: their limits, and what the server says remains.
	PaceFromHeaders bool `json:"PaceFromHeaders"`

	// RouteScope says where one model's trouble stays: "model" (the default) keeps the
	// circuit, the rate-limit pause, the learnt per-minute limits and the retry budget per
	// model of the deployment (the call's Call.Route), so model A's outage, 429s and retries
	// leave model B alone, while a refused key or an unreachable host still counts for every
	// model; "deployment" shares them between all the models of the deployment, for a server
	// that fails as a whole (one self-hosted server behind one URL). See Pipeline.Route.
	RouteScope string `json:"RouteScope"`

	// HedgeAfterSeconds turns hedging on; 0, the default, leaves it off. A call that has no
	// first content this long after it was sent is sent again, unchanged, to the next route
	// that can serve it at once (another deployment of the provider, else the next provider
	// of the chain: never one whose circuit is open, that pauses after a 429 or that has no
	// room in its budgets); the first to deliver content serves the call and the others are
	// cancelled at that moment, their connections closed. A hedge spends the route's retry
	// budget (RetryBudgetPercent), so retries and hedges together stay within it. With
	// HedgeQuantile the delay is learnt and this is its ceiling, and the delay until the
	// route has enough samples. Allowed: 0..600.
	HedgeAfterSeconds float64 `json:"HedgeAfterSeconds"`
	// HedgeQuantile, when above 0, learns each route's hedge delay as this quantile of its
	// recent times to first content (0.95: hedge the slowest twentieth), between
	// HedgeMinDelaySeconds and HedgeAfterSeconds. 0 keeps the delay fixed at
	// HedgeAfterSeconds. Allowed: 0, or 0.5..0.999.
	HedgeQuantile float64 `json:"HedgeQuantile"`
	// HedgeMinDelaySeconds is the shortest learnt hedge delay (default 0.1), so a route that
	// answers in milliseconds is not hedged on every jitter; HedgeAfterSeconds caps it too.
	// Allowed: 0..600.
	HedgeMinDelaySeconds float64 `json:"HedgeMinDelaySeconds"`
	// MaxHedges is how many hedges one call may send, each a delay after the last.
	// Allowed: 1..3.
	MaxHedges int `json:"MaxHedges"`

	// Priority is the class of the calls that name none themselves (client.WithPriority,
	// Call.Priority): "interactive", "default" (the default; "" means it too) or "batch". Under
	// LLM.Resilience it is the pipeline's; in a named policy, the class of the calls that run
	// under it, so a "batch" policy makes its calls batch. See Priority for what a class gets.
	Priority Priority `json:"Priority"`
	// PriorityReservePercent is the share of the bulkhead's slots and of each per-minute
	// budget that batch calls may not take, kept for interactive and default calls: with 10
	// (the default) and 20 slots, batch calls hold at most 18 at once, and they leave the last
	// tenth of a requests-per-minute limit to the others. The slots are counted against the
	// batch calls in flight, so the reserve is kept free only while the other classes hold
	// fewer slots than it: once they hold more, batch calls may fill every other slot. Batch
	// calls that wait long enough still get their minimum share (PriorityMinSharePercent) of
	// the reserve. 0 reserves nothing. Allowed: 0..90.
	PriorityReservePercent float64 `json:"PriorityReservePercent"`
	// PriorityMinSharePercent is the least share of the freed bulkhead slots (and of the
	// reserved budget) that calls of a lower class get while they wait, however many calls of
	// the higher classes wait too, so that no class starves: with 10 (the default) a waiting
	// batch call gets one slot in ten. 0 serves the classes in strict order. Allowed: 0..50.
	PriorityMinSharePercent float64 `json:"PriorityMinSharePercent"`

	// AdaptiveConcurrency replaces the fixed bulkhead size by a limit the pipeline finds: it
	// starts at BulkheadMaxConcurrency (kept between the two bounds below), grows by one slot
	// after each round of calls that met no overload while the slots were in use (faster,
	// half again per round, until the first overload), and shrinks by a tenth when the
	// provider says it is overloaded: a 529, a 503, a 429 that says too many calls at once (no
	// spent quota, no budget at 0 in its rate-limit headers, no hint over a second), an
	// overloaded error inside a 200 stream (Call.ReportOverload), or a time to first token
	// that has tripled. The retry of a call that met such a 429 gives its slot back and waits
	// for one under the lowered limit, without a pause of the pipeline, a backoff, or spending
	// RetryCount or the retry budget; a 429 that says a budget ran out pauses the pipeline
	// (RateLimitCooldown) and leaves the limit alone. Once it has met an overload at some
	// limit, it stays below that limit for a while before it tries it again, so it settles
	// just under the provider's real capacity instead of probing it every round. The limit is
	// per deployment (its routes share it), visible in Pipeline.Concurrency, health and
	// metrics. Off by default.
	AdaptiveConcurrency bool `json:"AdaptiveConcurrency"`
	// AdaptiveMinConcurrency and AdaptiveMaxConcurrency bound the adaptive limit. Allowed:
	// 1..100000, the minimum not above the maximum (checked when AdaptiveConcurrency is on).
	AdaptiveMinConcurrency int `json:"AdaptiveMinConcurrency"`
	AdaptiveMaxConcurrency int `json:"AdaptiveMaxConcurrency"`
}

// DefaultOptions returns the policy steady uses when nothing is configured: the seed values
// (3 retries from 1 s up to 30 s, circuit open after 5 failures, 30 s timeout, 10 concurrent
// calls with 100 waiting) plus the extensions' defaults — among them breaks that start at 5 s
// and grow up to 30 s while the provider stays down.
func DefaultOptions() Options {
	return Options{
		RetryCount:                        3,
		RetryBaseDelaySeconds:             1,
		RetryMaxDelaySeconds:              30,
		RetryBackoff:                      BackoffExponential,
		RetryUseJitter:                    true,
		RetryableStatusCodes:              []int{429, 502, 503, 504, 529},
		RetryBudgetPercent:                20,
		RetryBudgetFloor:                  3,
		RetryBudgetWindowSeconds:          10,
		CircuitBreakerThreshold:           5,
		CircuitBreakerDurationSeconds:     30,
		CircuitBreakerMinDurationSeconds:  0,
		CircuitBreakerFailureRatio:        0,
		CircuitBreakerSamplingSeconds:     60,
		CircuitBreakerMinThroughput:       10,
		CircuitBreakerHalfOpenMaxRequests: 1,
		TimeoutSeconds:                    30,
		AttemptTimeoutSeconds:             0,
		StreamIdleTimeoutSeconds:          20,
		FirstTokenTimeoutSeconds:          10,
		StreamStallFactor:                 8,
		StreamStallMinSeconds:             1,
		StreamStallMaxSeconds:             10,
		StreamRescue:                      RescueContinue,
		BulkheadMaxConcurrency:            10,
		BulkheadMaxQueue:                  100,
		BulkheadQueueTimeoutSeconds:       30,
		RateLimitCooldown:                 true,
		RateLimitMaxPauseSeconds:          300,
		HedgeMinDelaySeconds:              0.1,
		MaxHedges:                         1,
		PaceFromHeaders:                   true,
		RouteScope:                        RouteScopeModel,
		Priority:                          PriorityDefault,
		PriorityReservePercent:            10,
		PriorityMinSharePercent:           10,
		AdaptiveMinConcurrency:            1,
		AdaptiveMaxConcurrency:            100,
	}
}

// FieldError is one invalid option: its name, the value found and what is allowed.
type FieldError struct {
	Field   string // the JSON key, e.g. "RetryCount"
	Value   any    // the value that was rejected
	Allowed string // a human description of the allowed values
}

func (e FieldError) Error() string {
	return fmt.Sprintf("%s = %v: %s", e.Field, e.Value, e.Allowed)
}

// ValidationError lists every invalid option of an [Options] at once.
type ValidationError struct {
	Problems []FieldError
	// FromZero is set when the options look built from the zero value rather than from
	// DefaultOptions (most fields that have no usable zero are zero); the message says so.
	FromZero bool
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("resilience: invalid options: ")
	if e.FromZero {
		b.WriteString("they look built from the zero value: start from resilience.DefaultOptions() and change " +
			"the fields you need; ")
	}
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.Error())
	}
	return b.String()
}

// Validate reports every invalid field at once as a *[ValidationError], or nil when the
// options describe a usable policy. It checks ranges, finiteness and the relations between
// fields (RetryMaxDelaySeconds ≥ RetryBaseDelaySeconds, AttemptTimeoutSeconds < TimeoutSeconds,
// CircuitBreakerMinDurationSeconds ≤ CircuitBreakerDurationSeconds).
func (o Options) Validate() error {
	v := validator{}
	v.intRange("RetryCount", o.RetryCount, 0, 20)
	v.secRange("RetryBaseDelaySeconds", o.RetryBaseDelaySeconds, 0, 3600)
	if v.secRange("RetryMaxDelaySeconds", o.RetryMaxDelaySeconds, 0, 3600) &&
		o.RetryMaxDelaySeconds < o.RetryBaseDelaySeconds && isFinite(o.RetryBaseDelaySeconds) {
		v.add("RetryMaxDelaySeconds", o.RetryMaxDelaySeconds,
			fmt.Sprintf("must be at least RetryBaseDelaySeconds (%g)", o.RetryBaseDelaySeconds))
	}
	switch o.RetryBackoff {
	case BackoffConstant, BackoffLinear, BackoffExponential:
	default:
		v.add("RetryBackoff", fmt.Sprintf("%q", o.RetryBackoff), `must be "constant", "linear" or "exponential"`)
	}
	for i, code := range o.RetryableStatusCodes {
		if code < 400 || code > 599 {
			v.add(fmt.Sprintf("RetryableStatusCodes[%d]", i), code, "must be an HTTP error status between 400 and 599")
		}
	}
	if v.secRange("RetryBudgetPercent", o.RetryBudgetPercent, 0, 100) && o.RetryBudgetPercent > 0 {
		v.intRange("RetryBudgetFloor", o.RetryBudgetFloor, 0, 1000)
		v.secRange("RetryBudgetWindowSeconds", o.RetryBudgetWindowSeconds, 1, 3600)
	} else {
		v.finite("RetryBudgetWindowSeconds", o.RetryBudgetWindowSeconds) // unused, but never NaN
	}

	v.intRange("CircuitBreakerThreshold", o.CircuitBreakerThreshold, 1, 1000)
	longest := 86400.0
	if v.secRange("CircuitBreakerDurationSeconds", o.CircuitBreakerDurationSeconds, 0.001, 86400) {
		longest = o.CircuitBreakerDurationSeconds
	}
	if m := o.CircuitBreakerMinDurationSeconds; m != 0 && (!isFinite(m) || m < 0.001 || m > longest) {
		v.add("CircuitBreakerMinDurationSeconds", m, fmt.Sprintf(
			"must be 0 (automatic) or a number between 0.001 and CircuitBreakerDurationSeconds (%g)", longest))
	}
	v.secRange("CircuitBreakerFailureRatio", o.CircuitBreakerFailureRatio, 0, 1)
	if o.CircuitBreakerFailureRatio > 0 {
		v.secRange("CircuitBreakerSamplingSeconds", o.CircuitBreakerSamplingSeconds, 1, 86400)
		v.intRange("CircuitBreakerMinThroughput", o.CircuitBreakerMinThroughput, 1, 100000)
	} else {
		v.finite("CircuitBreakerSamplingSeconds", o.CircuitBreakerSamplingSeconds)
	}
	v.intRange("CircuitBreakerHalfOpenMaxRequests", o.CircuitBreakerHalfOpenMaxRequests, 1, 1000)

	timeoutOK := v.secRange("TimeoutSeconds", o.TimeoutSeconds, 0, 86400)
	v.secRange("CallTimeoutSeconds", o.CallTimeoutSeconds, 0, 86400)
	if v.secRange("AttemptTimeoutSeconds", o.AttemptTimeoutSeconds, 0, 86400) && timeoutOK &&
		o.AttemptTimeoutSeconds > 0 && o.TimeoutSeconds > 0 && o.AttemptTimeoutSeconds >= o.TimeoutSeconds {
		v.add("AttemptTimeoutSeconds", o.AttemptTimeoutSeconds,
			fmt.Sprintf("must be below TimeoutSeconds (%g), or 0 to disable", o.TimeoutSeconds))
	}
	v.secRange("StreamIdleTimeoutSeconds", o.StreamIdleTimeoutSeconds, 0, 86400)
	v.secRange("FirstTokenTimeoutSeconds", o.FirstTokenTimeoutSeconds, 0, 86400)
	if f := o.StreamStallFactor; f != 0 {
		if !isFinite(f) || f < 2 || f > 1000 {
			v.add("StreamStallFactor", f, "must be 0 (no stall detection) or a number between 2 and 1000")
		}
		minOK := v.secRange("StreamStallMinSeconds", o.StreamStallMinSeconds, 0.05, 3600)
		if v.secRange("StreamStallMaxSeconds", o.StreamStallMaxSeconds, 0.05, 86400) && minOK &&
			o.StreamStallMaxSeconds < o.StreamStallMinSeconds {
			v.add("StreamStallMaxSeconds", o.StreamStallMaxSeconds,
				fmt.Sprintf("must be at least StreamStallMinSeconds (%g)", o.StreamStallMinSeconds))
		}
	} else {
		v.finite("StreamStallMinSeconds", o.StreamStallMinSeconds) // unused, but never NaN
		v.finite("StreamStallMaxSeconds", o.StreamStallMaxSeconds)
	}
	switch o.StreamRescue {
	case RescueOff, RescueContinue, RescueContinueOrBuffer, RescueRestart, RescueBuffer:
	default:
		v.add("StreamRescue", fmt.Sprintf("%q", o.StreamRescue), `must be "off", "continue", "continue-or-buffer", "restart" or "buffer"`)
	}

	v.intRange("BulkheadMaxConcurrency", o.BulkheadMaxConcurrency, 1, 100000)
	v.intRange("BulkheadMaxQueue", o.BulkheadMaxQueue, 0, 1000000)
	v.secRange("BulkheadQueueTimeoutSeconds", o.BulkheadQueueTimeoutSeconds, 0, 86400)
	v.secRange("RateLimitMaxPauseSeconds", o.RateLimitMaxPauseSeconds, 1, 86400)
	switch o.RouteScope {
	case RouteScopeModel, RouteScopeDeployment:
	default:
		v.add("RouteScope", fmt.Sprintf("%q", o.RouteScope), `must be "model" or "deployment"`)
	}
	v.intRange("PaceRequestsPerMinute", o.PaceRequestsPerMinute, 0, 100_000_000)
	v.intRange("PaceTokensPerMinute", o.PaceTokensPerMinute, 0, 100_000_000)
	if v.secRange("HedgeAfterSeconds", o.HedgeAfterSeconds, 0, 600) && o.HedgeAfterSeconds > 0 {
		if q := o.HedgeQuantile; q != 0 && (!isFinite(q) || q < 0.5 || q > 0.999) {
			v.add("HedgeQuantile", q, "must be 0 (a fixed delay) or a quantile between 0.5 and 0.999")
		}
		v.secRange("HedgeMinDelaySeconds", o.HedgeMinDelaySeconds, 0, 600)
		v.intRange("MaxHedges", o.MaxHedges, 1, 3)
	} else {
		v.finite("HedgeQuantile", o.HedgeQuantile) // unused, but never NaN
		v.finite("HedgeMinDelaySeconds", o.HedgeMinDelaySeconds)
	}

	if !o.Priority.Valid() {
		v.add("Priority", fmt.Sprintf("%q", o.Priority), `must be "interactive", "default" or "batch"`)
	}
	v.secRange("PriorityReservePercent", o.PriorityReservePercent, 0, 90)
	v.secRange("PriorityMinSharePercent", o.PriorityMinSharePercent, 0, 50)
	if o.AdaptiveConcurrency {
		minOK := v.intRange("AdaptiveMinConcurrency", o.AdaptiveMinConcurrency, 1, 100000)
		if v.intRange("AdaptiveMaxConcurrency", o.AdaptiveMaxConcurrency, 1, 100000) && minOK &&
			o.AdaptiveMinConcurrency > o.AdaptiveMaxConcurrency {
			v.add("AdaptiveMinConcurrency", o.AdaptiveMinConcurrency,
				fmt.Sprintf("must not be above AdaptiveMaxConcurrency (%d)", o.AdaptiveMaxConcurrency))
		}
	}

	if len(v.problems) == 0 {
		return nil
	}
	zero := 0
	for _, z := range []bool{o.RetryBackoff == "", o.CircuitBreakerThreshold == 0, o.CircuitBreakerDurationSeconds == 0,
		o.CircuitBreakerHalfOpenMaxRequests == 0, o.BulkheadMaxConcurrency == 0} {
		if z {
			zero++
		}
	}
	return &ValidationError{Problems: v.problems, FromZero: zero >= 3}
}

type validator struct{ problems []FieldError }

func (v *validator) add(field string, value any, allowed string) {
	v.problems = append(v.problems, FieldError{Field: field, Value: value, Allowed: allowed})
}

func (v *validator) intRange(field string, value, lo, hi int) bool {
	if value < lo || value > hi {
		v.add(field, value, fmt.Sprintf("must be between %d and %d", lo, hi))
		return false
	}
	return true
}

// secRange checks a float field; it reports NaN and infinities as well as values out of range.
func (v *validator) secRange(field string, value, lo, hi float64) bool {
	if !isFinite(value) || value < lo || value > hi {
		v.add(field, value, fmt.Sprintf("must be a number between %g and %g", lo, hi))
		return false
	}
	return true
}

// finite checks a float field that its settings leave unused: any number will do, except NaN
// and the infinities, which no setting means.
func (v *validator) finite(field string, value float64) {
	if !isFinite(value) {
		v.add(field, value, "must be a finite number")
	}
}

func isFinite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// seconds converts a float number of seconds to a Duration; non-positive values become 0.
func seconds(s float64) time.Duration {
	if s <= 0 {
		return 0
	}
	return time.Duration(s * float64(time.Second))
}
