package resilience

import (
	"context"
	"time"
)

// maxRetryCount is the largest RetryCount Options.Validate allows.
const maxRetryCount = 20

// Policy is the part of a pipeline's Options that may change from one call to the next: the
// retries (count, backoff, jitter, retryable statuses) and the time limits (total, attempt,
// stream idle). The rest of Options — the circuit breaker, the bulkhead, the retry budget — is
// the state a pipeline shares between all its calls, and a Policy never changes it: a call
// made under a batch job's patient policy still counts towards the same circuit and holds a
// slot of the same bulkhead as an interactive call.
//
// Build a Policy once (NewPolicy) and give it to as many calls as you like, through
// WithPolicy or Call.Policy. A Policy is immutable and safe for concurrent use.
type Policy struct {
	name      string
	count     int
	base, max time.Duration
	backoff   string
	jitter    bool
	retryable statusSet
	attempt   time.Duration // AttemptTimeoutSeconds, 0 for none
	total     time.Duration // TimeoutSeconds, 0 for none
	call      time.Duration // CallTimeoutSeconds, 0 for none
	idle      time.Duration // StreamIdleTimeoutSeconds, 0 for none
	// firstToken is FirstTokenTimeoutSeconds, 0 for none; rescue is StreamRescue.
	firstToken time.Duration
	stall      stallLimits // StreamStallFactor and its bounds
	rescue     string
	hedge      Hedge
	// class is the class of the calls that name none (Options.Priority).
	class class
}

// Hedge is a policy's hedging (Options.HedgeAfterSeconds and the rest): After 0 is off.
type Hedge struct {
	// After is the delay after which a call without first content is hedged (with Quantile,
	// the ceiling of the learnt delay and the delay before a route has enough samples).
	After time.Duration
	// Quantile, when above 0, learns the delay as this quantile of the route's recent times
	// to first content, not below MinDelay.
	Quantile float64
	MinDelay time.Duration
	// Max is how many hedges one call may send.
	Max int
}

// Delay returns the hedge delay for a call on route r: After, or with Quantile the route's
// quantile (Pipeline.HedgeQuantile) clamped to [MinDelay, After] once the route has enough
// samples.
func (h Hedge) Delay(r *Pipeline) time.Duration {
	if h.Quantile > 0 && r != nil {
		if q, ok := r.HedgeQuantile(h.Quantile); ok {
			return min(max(q, h.MinDelay), h.After)
		}
	}
	return h.After
}

// NewPolicy validates o (all of it, as New does: a named policy of the configuration is a
// whole Options) and returns its per-call part under name, which events report
// (Event.Policy). It returns a *ValidationError listing every bad field.
func NewPolicy(name string, o Options) (*Policy, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return newPolicy(name, o), nil
}

func newPolicy(name string, o Options) *Policy {
	p := &Policy{
		name:    name,
		count:   o.RetryCount,
		base:    seconds(o.RetryBaseDelaySeconds),
		max:     seconds(o.RetryMaxDelaySeconds),
		backoff: o.RetryBackoff,
		jitter:  o.RetryUseJitter,
		attempt: seconds(o.AttemptTimeoutSeconds),
		total:   seconds(o.TimeoutSeconds),
		call:    seconds(o.CallTimeoutSeconds),
		idle:    seconds(o.StreamIdleTimeoutSeconds),

		firstToken: seconds(o.FirstTokenTimeoutSeconds),
		stall: stallLimits{factor: o.StreamStallFactor, min: seconds(o.StreamStallMinSeconds),
			max: seconds(o.StreamStallMaxSeconds)},
		rescue: o.StreamRescue,
		hedge: Hedge{After: seconds(o.HedgeAfterSeconds), Quantile: o.HedgeQuantile,
			MinDelay: seconds(o.HedgeMinDelaySeconds), Max: max(o.MaxHedges, 1)},
		class: o.Priority.class(),
	}
	for _, c := range o.RetryableStatusCodes {
		p.retryable.add(c)
	}
	return p
}

// Hedge returns the policy's hedging; its After is 0 when hedging is off.
func (p *Policy) Hedge() Hedge { return p.hedge }

// WithHedge returns a copy of p that hedges after h.After (0: not at all), for a call with
// its own hedging (client.WithHedge).
func (p *Policy) WithHedge(h Hedge) *Policy {
	cp := *p
	cp.hedge = h
	return &cp
}

// Priority returns the class of the calls that run under the policy and name none
// themselves (Options.Priority).
func (p *Policy) Priority() Priority { return p.class.priority() }

// Name returns the name the policy was built with.
func (p *Policy) Name() string { return p.name }

// Timeout returns the policy's total time limit (TimeoutSeconds), 0 for none.
func (p *Policy) Timeout() time.Duration { return p.total }

// CallTimeout returns the policy's whole-call deadline (CallTimeoutSeconds), 0 for none.
func (p *Policy) CallTimeout() time.Duration { return p.call }

// Retries returns the number of retries after the first attempt (RetryCount).
func (p *Policy) Retries() int { return p.count }

// WithTimeout returns a copy of p whose total time limit is d (0 for none), for a call that
// keeps a policy's retries but needs its own deadline. A d that is not above the policy's
// attempt timeout drops the attempt timeout, which could never fire first.
func (p *Policy) WithTimeout(d time.Duration) *Policy {
	cp := *p
	cp.total = max(d, 0)
	if cp.total > 0 && cp.attempt >= cp.total {
		cp.attempt = 0
	}
	return &cp
}

// FirstTokenTimeout returns the policy's first-token limit (FirstTokenTimeoutSeconds), 0 for
// none.
func (p *Policy) FirstTokenTimeout() time.Duration { return p.firstToken }

// WithFirstTokenTimeout returns a copy of p whose first-token limit is d (0 for none), for a
// call that needs another.
func (p *Policy) WithFirstTokenTimeout(d time.Duration) *Policy {
	cp := *p
	cp.firstToken = max(d, 0)
	return &cp
}

// Rescue returns the policy's StreamRescue mode: "" (for "off"), "continue",
// "continue-or-buffer", "restart" or "buffer".
func (p *Policy) Rescue() string {
	if p.rescue == RescueOff {
		return ""
	}
	return p.rescue
}

// WithoutRetries returns a copy of p that makes one attempt: for a call whose retry is left to
// a job queue (package deferral).
func (p *Policy) WithoutRetries() *Policy {
	cp := *p
	cp.count = 0
	return &cp
}

// WithPolicy returns a context whose calls through any pipeline run under p instead of the
// pipeline's own retries and time limits; the pipeline's circuit, bulkhead and retry budget
// apply as always. It is how a caller of a bare Pipeline.Wrap — go-openai, openai-go, any
// http.Client — gives one call its own policy. The context is a *Call: a client that embeds a
// Call sets its Policy field instead. A nil p leaves the pipeline's policy in force.
func WithPolicy(ctx context.Context, p *Policy) context.Context {
	c := &Call{}
	c.Init(ctx, false)
	c.Policy = p
	return c
}

// policyIn returns the policy that governs a call made with ctx, or nil for the pipeline's.
func policyIn(ctx context.Context) *Policy {
	if ctx == nil {
		return nil
	}
	if c, ok := ctx.(*call); ok {
		return c.pol
	}
	_, _, p := callers(ctx)
	return p
}
