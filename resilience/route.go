package resilience

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
)

// Providers limit and fail per model: OpenAI's and Anthropic's rate limits are per model, an
// overloaded model answers 529 while its siblings serve, and one OpenAI-compatible server often
// hosts several models behind one URL. So a pipeline keeps what one model's trouble teaches —
// its circuit, its rate-limit pause, its learnt per-minute limits and its retry budget — per
// route: one model of the pipeline's deployment, named by the call (Call.Route). Each route is
// a child Pipeline ("<name>:<model>"), made at the first call that names it, with the
// pipeline's options, clock, observer and shared state (its advice under the route's name); it
// shares the pipeline's bulkhead (concurrency is the endpoint's).
//
// What is the whole deployment's stays the pipeline's own: a refused key (401, 403) and a
// failure to reach the host (connection refused, DNS, TLS, a dial that fails) count in the
// pipeline's circuit alone — never in the route's too: one fault, one opening — which every
// route consults first, so one network failure counts for every model; Isolate, OpenFor and
// Reset act on every route. Calls that name no route (a bare
// Pipeline.Wrap under go-openai) run on the pipeline itself, as before.
//
// A pipeline keeps at most MaxRoutes routes; the models beyond share one more route, "<name>:*".
// RouteScope "deployment" turns routes off: every model shares the pipeline's state.

// RouteScopes accepted in Options.RouteScope.
const (
	RouteScopeModel      = "model"      // one circuit, pause, budget and retry budget per model (the default)
	RouteScopeDeployment = "deployment" // every model of the deployment shares them
)

// MaxRoutes bounds the routes of a pipeline, and so the label values its models add to
// metrics and health: the models beyond share one route.
const MaxRoutes = 32

// overflowRoute is the key of the route the models beyond MaxRoutes share.
const overflowRoute = "*"

// routes are a pipeline's child pipelines, by route key. The map is never changed once
// published: a new route publishes a copy, under mu, so that Route — on every call's path —
// reads without a lock.
type routes struct {
	mu sync.RWMutex
	m  atomic.Pointer[map[string]*Pipeline]
}

// Route returns the pipeline of the route key (a model) of p, making it at its first use: the
// pipeline that keeps that model's circuit, pause, budgets and retry budget (see MaxRoutes for
// the bound). It returns p itself for an empty key, for a pipeline whose RouteScope is
// "deployment", and for a route pipeline.
func (p *Pipeline) Route(key string) *Pipeline {
	if key == "" || p.parent != nil || p.opts.RouteScope == RouteScopeDeployment {
		return p
	}
	if m := p.routes.m.Load(); m != nil {
		if r := (*m)[key]; r != nil {
			return r
		}
	}
	p.routes.mu.Lock()
	defer p.routes.mu.Unlock()
	var old map[string]*Pipeline
	if m := p.routes.m.Load(); m != nil {
		old = *m
	}
	if r := old[key]; r != nil {
		return r
	}
	if len(old) >= MaxRoutes {
		key = overflowRoute
		if r := old[key]; r != nil {
			return r
		}
	}
	r := p.child(key)
	m := make(map[string]*Pipeline, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[key] = r
	p.routes.m.Store(&m)
	return r
}

// Routes returns the route pipelines made so far, by route key (a model, or "*" for the models
// beyond MaxRoutes), for health checks and dashboards. A route being made as it is called is
// listed once made (it waits for it).
func (p *Pipeline) Routes() map[string]*Pipeline {
	p.routes.mu.RLock()
	defer p.routes.mu.RUnlock()
	var cur map[string]*Pipeline
	if m := p.routes.m.Load(); m != nil {
		cur = *m
	}
	out := make(map[string]*Pipeline, len(cur))
	for k, r := range cur {
		out[k] = r
	}
	return out
}

// Parent returns the pipeline a route belongs to, nil for a pipeline that is no route.
func (p *Pipeline) Parent() *Pipeline { return p.parent }

// RouteKey returns the route a route pipeline keeps (its model), "" for a pipeline that is no
// route. Its events name its deployment (Event.Pipeline) and this route (Event.Route); its Name
// is "<deployment>:<route>", under which it shares state.
func (p *Pipeline) RouteKey() string { return p.route }

// child makes the route pipeline of key. The options were validated by New already.
func (p *Pipeline) child(key string) *Pipeline {
	// The options and the policy never change after New: the route shares its deployment's.
	c := &Pipeline{name: p.name + ":" + key, opts: p.opts, policy: p.policy, parent: p, route: key}
	c.ev.clock, c.ev.observer = p.ev.clock, p.ev.observer
	c.breaker.active = p.breaker.active.forRoute(c) // armed by c's circuit (breaker.init)
	if p.shared != nil && !p.sh.left.Load() {
		c.shared = p.shared // a route of a pipeline that stopped sharing shares nothing
	}
	c.init()
	if c.shared != nil {
		c.setSharedScope(p.sharedScope(), false) // made on a call's path: never wait on the store
	}
	return c
}

// routeOf returns the route a call made with ctx names (the innermost Call's Route), "" for
// none.
func routeOf(ctx context.Context) string {
	if c, _ := ctx.Value(callKey{}).(*Call); c != nil {
		return c.Route
	}
	return ""
}

// routed returns the chain of route key over base, made once per transport.
func (t *bulkheadTransport) routed(key string) http.RoundTripper {
	r := t.p.Route(key)
	if r == t.p {
		return nil
	}
	if rt, ok := t.chains.Load(r); ok {
		return rt.(http.RoundTripper)
	}
	rt, _ := t.chains.LoadOrStore(r, r.wrapOver(t.base))
	return rt.(http.RoundTripper)
}

// hostVerdict judges, for the pipeline a route belongs to, how a call of the route ended: any
// answer from the server but a refusal of the credentials shows the host reachable (a
// success); a refused key (401, 403) or a failure to reach the host (hostUnreachable) is the
// whole deployment's failure; anything else (a timeout, a broken stream) is the route's
// business and not counted here.
func hostVerdict(ctx context.Context, resp *http.Response, err error) verdict {
	switch {
	case callerGaveUp(ctx):
		return verdictExcluded
	case err != nil:
		if hostUnreachable(err) {
			return verdictFailure
		}
		return verdictExcluded
	case refusedKey(resp.StatusCode):
		return verdictFailure
	}
	return verdictSuccess
}

// hostUnreachable reports whether err says the host could not be reached at all: the
// connection refused, a DNS failure, a TLS or certificate failure, a dial that failed.
func hostUnreachable(err error) bool {
	var (
		dnsErr     *net.DNSError
		opErr      *net.OpError
		certErr    *tls.CertificateVerificationError
		unknownCA  x509.UnknownAuthorityError
		hostErr    x509.HostnameError
		invalidErr x509.CertificateInvalidError
		recErr     tls.RecordHeaderError
	)
	switch {
	case errors.Is(err, syscall.ECONNREFUSED), errors.As(err, &dnsErr), errors.As(err, &certErr),
		errors.As(err, &unknownCA), errors.As(err, &hostErr), errors.As(err, &invalidErr), errors.As(err, &recErr):
		return true
	case errors.As(err, &opErr):
		return opErr.Op == "dial"
	}
	return false
}
