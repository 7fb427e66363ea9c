package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/steadyllm/steady/cost"
	"github.com/steadyllm/steady/deferral"
	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/resilience"
)

// RequestIDHeader is the request header that carries a call's own ID (WithRequestID) on every
// attempt to every provider of the chain. OpenAI reads it as the client's ID for the request
// and echoes it in its logs; gateways and proxies can correlate on it.
const RequestIDHeader = "X-Client-Request-Id"

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
// "off", "restart" or "buffer" (see ChatStream). Another value is a bad_request.
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

// sendsExtras reports whether the call changes the HTTP requests (headers, request ID, fields).
func (o *callOptions) sendsExtras() bool {
	return o != nil && (o.header != nil || o.fields != nil || o.requestID != "")
}

// WithPolicies gives the client named policies for WithPolicy: LLM.Policies of the
// configuration, each a whole Options whose retries and time limits a call may run under.
// Every policy is validated by New.
func WithPolicies(policies map[string]resilience.Options) Option {
	return func(b *builder) error {
		if b.c.policies == nil {
			b.c.policies = map[string]*resilience.Policy{}
		}
		for name, o := range policies {
			p, err := resilience.NewPolicy(name, o)
			if err != nil {
				return fmt.Errorf("client: policy %q: %w", name, err)
			}
			b.c.policies[name] = p
		}
		return nil
	}
}

// plan is what the client does for one call with options: the providers it tries, and the
// policy each runs under.
type plan struct {
	chain  []string
	policy *resilience.Policy // nil: each provider's own
	sticky string             // WithStickyKey
	// budget and shadowBudget are what the budgets decided for the call, and what those in
	// shadow mode would have (cost.Action's names), "" when none counts it (WithBudgets).
	budget, shadowBudget string
}

// planFor checks o against the client and returns the call's plan; an option naming what the
// client does not have is a bad_request.
func (c *Client) planFor(o *callOptions) (plan, error) {
	p := plan{chain: c.chain}
	if o == nil {
		return p, nil
	}
	if err := c.checkOptions(o); err != nil {
		return p, err
	}
	p.sticky = o.sticky
	if o.policy != "" {
		p.policy = c.policy(o.policy)
		if p.policy == nil {
			return p, badOption("WithPolicy", o.policy, "must name a policy of the client (WithPolicies, LLM.Policies)", c.policyNames())
		}
	}
	for _, list := range [][]string{o.only, o.skip} {
		for i, n := range list {
			e := c.lookup(n)
			if e == nil {
				return p, badOption("WithProviders/WithoutProviders", n, "must name a provider of the client", c.order)
			}
			list[i] = e.name
		}
	}
	if o.only != nil || o.skip != nil || o.noFall {
		var chain []string
		src := c.chain
		if o.only != nil {
			src = o.only
		}
		for _, n := range src {
			if !slices.Contains(o.skip, n) && !slices.Contains(chain, n) {
				chain = append(chain, n)
			}
		}
		if o.noFall && len(chain) > 1 {
			chain = chain[:1]
		}
		if len(chain) == 0 {
			return p, &providers.Error{Kind: providers.KindBadRequest,
				Message: "the call's options leave no provider to try"}
		}
		p.chain = chain
	}
	return p, nil
}

// policyFor returns the policy provider e runs the call under: the plan's named policy or the
// provider's own, with the call's own time limit when it set one. nil means the pipeline's.
func (p plan) policyFor(d *deployment, o *callOptions) *resilience.Policy {
	pol := p.policy
	if o != nil && o.hasTO {
		if pol == nil {
			pol = d.pipeline.Policy()
		}
		pol = pol.WithTimeout(o.timeout)
	}
	if o != nil && o.deferred {
		if pol == nil {
			pol = d.pipeline.Policy()
		}
		pol = pol.WithoutRetries()
	}
	return pol
}

// maxWait is the call's resilience.Call.MaxWait for a try that the chain computed as wait:
// a deferred call never waits.
func (o *callOptions) maxWait(wait time.Duration) time.Duration {
	if o != nil && o.deferred {
		return -1
	}
	return wait
}

// deferred wraps the failure err of a call with options o in a *deferral.Error when the call
// runs in deferred mode; err otherwise.
func (c *Client) deferred(o *callOptions, err error) error {
	if err == nil || o == nil || !o.deferred {
		return err
	}
	pol := c.policy(o.policy)
	if pol == nil && len(c.chain) > 0 {
		pol = c.entries[c.chain[0]].pipeline.Policy()
	}
	return &deferral.Error{Decision: deferral.Decider{Policy: pol}.Decide(err, o.attempt), Err: err}
}

// policy returns the named policy of the client, matched exactly, else case-insensitively;
// nil when there is none.
func (c *Client) policy(name string) *resilience.Policy {
	if p := c.policies[name]; p != nil {
		return p
	}
	for n, p := range c.policies {
		if strings.EqualFold(n, name) {
			return p
		}
	}
	return nil
}

func (c *Client) policyNames() []string {
	names := make([]string, 0, len(c.policies))
	for n := range c.policies {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func badOption(option, value, rule string, known []string) *providers.Error {
	return &providers.Error{Kind: providers.KindBadRequest,
		Message: fmt.Sprintf("%s %q: %s (have %v)", option, value, rule, known)}
}

// callExtras carries the HTTP changes of a call to the client's transport, under its key in
// the call's context.
type callExtras struct {
	context.Context
	o *callOptions
}

type extrasKey struct{}

func (x *callExtras) Value(key any) any {
	if _, ok := key.(extrasKey); ok {
		return x
	}
	return x.Context.Value(key)
}

// extrasTransport applies the HTTP changes of a call (headers, request ID, body fields) to
// each request of provider name, whose GenAI system is system, before its pipeline: every
// attempt and every fallback sends them.
type extrasTransport struct {
	name   string
	system string // the provider's GenAI system, set by New once the provider is built
	next   http.RoundTripper
	// headersOnly leaves the body as it is: a token count's request (count.go), whose
	// endpoint refuses what only shapes an answer.
	headersOnly bool
}

// authHeaders are the headers a call's options may not set: each provider's credentials.
var authHeaders = []string{"Authorization", "X-Api-Key", "Api-Key"}

func (t *extrasTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	x, _ := req.Context().Value(extrasKey{}).(*callExtras)
	if x == nil {
		return t.next.RoundTrip(req)
	}
	o := x.o
	fields := o.fields[t.name]
	if sys := o.fields[t.system]; t.system != "" && len(sys) > 0 {
		// The system's fields, then the provider's own over them: the name wins.
		merged := make(map[string]any, len(sys)+len(fields))
		for k, v := range sys {
			merged[k] = v
		}
		for k, v := range fields {
			merged[k] = v
		}
		fields = merged
	}
	r := req.Clone(req.Context())
	for k, vs := range o.header {
		if slices.Contains(authHeaders, http.CanonicalHeaderKey(k)) {
			continue
		}
		r.Header[http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
	}
	if o.requestID != "" {
		r.Header.Set(RequestIDHeader, o.requestID)
	}
	if len(fields) > 0 && !t.headersOnly && req.Body != nil && req.Body != http.NoBody {
		body, err := mergeFields(req, fields)
		if err != nil {
			return nil, &providers.Error{Provider: t.name, Kind: providers.KindBadRequest,
				Message: "WithExtraFields: " + err.Error(), Err: err}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		r.ContentLength = int64(len(body))
	}
	return t.next.RoundTrip(r)
}

// mergeFields reads req's JSON object body (closing it) and returns it with fields set.
func mergeFields(req *http.Request, fields map[string]any) ([]byte, error) {
	raw, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("the provider's request body is not a JSON object: %w", err)
	}
	for k, v := range fields {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", k, err)
		}
		obj[k] = b
	}
	return json.Marshal(obj)
}
