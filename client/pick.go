package client

import (
	"fmt"
	"slices"
	"time"

	"github.com/steadyllm/steady/providers"
)

// Picking: which routes may serve a call, in which order, and which can take it now.
//
// A route is one deployment of one provider asked for one model. "May this route serve this
// call?" has one answer, mayServe, and every place that needs it asks it: the walk along the
// chain, hedging, the fail-over wait, the budgets' pre-flight count and price, CountTokens, the
// pre-flight context-window check, the route a failure's telemetry names as next, and a
// per-kind fallback. A route may serve a call when its provider has every capability the call
// needs and, for raw tools, is of their system (takes); it holds the provider state the call
// continues from (holds); its declared context window can hold the call (fits); a call that
// continues a cut answer goes only to a route that can continue one (continuesBy); and the walk
// has not tried it yet. "Can it take the call now?" is a separate question, ready: its circuits
// let calls through, it is not pausing after a rate limit, and its known per-minute limits have
// room. A new picking rule goes in mayServe (or ready), and nowhere else.

// route is one route of a call: deployment d of provider e, asked for model (the request's
// model field, the deployment's own when it has one; "" leaves it to the provider), kept under
// key (its circuit, pause and limits: the model, with the provider's default filled in).
type route struct {
	e     *entry
	d     *deployment
	model string
	key   string
}

// routeOf is the route of deployment d of provider e for a call that asks e for model m.
func routeOf(e *entry, d *deployment, m string) route {
	return route{e: e, d: d, model: d.modelFor(m), key: d.modelFor(e.telemetryModel(m))}
}

// ask is what a call asks of the routes that may serve it, fixed once the call is planned.
type ask struct {
	model string // the model asked of the chain, "" for each provider's default
	need  providers.Capabilities
	// system is the GenAI system whose providers alone take the call's raw tools
	// (providers.Tool.Raw), "" for any.
	system string
	// req is the chat request, whose estimate on a route (its prompt and the most it may
	// answer) a context window the route declares must hold; nil for embeddings, which no
	// window bounds.
	req *providers.ChatRequest
	// pin is the provider state the call continues from (ChatRequest.Pin), when pinned.
	pin    providers.Pin
	pinned bool
}

// askOf is what a chat request asks, a stream or not.
func askOf(req *providers.ChatRequest, stream bool) ask {
	a := ask{model: req.Model, need: req.Needs(stream), system: rawSystem(req), req: req}
	a.pin, a.pinned = req.Pin()
	return a
}

// takes reports whether provider e can take the call: it has every capability the call needs
// and, for a call with raw tools, is of their system.
func (a *ask) takes(e *entry) bool {
	return e.caps.Has(a.need) && (a.system == "" || e.system == a.system)
}

// whyNot says why provider e cannot take the call (see takes), for the call's skipped list.
func (a *ask) whyNot(e *entry) string {
	if missing := e.caps.Missing(a.need); missing != 0 {
		return e.name + " (no " + missing.String() + ")"
	}
	return e.name + " (takes no " + a.system + " tools)"
}

// verdict is mayServe's answer.
type verdict uint8

// The verdicts of mayServe.
const (
	serves    verdict = iota // the route may serve the call
	tried                    // the walk tried it already
	lacks                    // its provider cannot take the call (ask.takes)
	notHolder                // it does not hold the state the call is pinned to (holds)
	tooSmall                 // its context window cannot hold the call (fits)
	noCarry                  // the call continues an answer, which the route cannot (continuesBy)
)

// mayServe says whether route r may serve the walk's call, and if not, why.
func (w *walk) mayServe(r route) verdict {
	switch {
	case !w.takes(r.e):
		return lacks
	case w.isTried(r.d):
		return tried
	case !w.holds(r.d):
		return notHolder
	case !w.fits(r):
		return tooSmall
	case w.op.cont != nil && w.op.cont.prefill != "" && w.c.continuesBy(r, w.op.chat) == ContinueNone:
		return noCarry
	}
	return serves
}

// skip records that route r was skipped for v (a verdict other than serves or tried), in
// what the call reports as skipped.
func (w *walk) skip(r route, v verdict) {
	switch v {
	case lacks:
		w.skipped = append(w.skipped, w.whyNot(r.e))
	case notHolder:
		w.skipped = append(w.skipped, r.d.name+" (does not hold "+w.pin.What+")")
		w.pinSkips++
	case tooSmall:
		w.skipped = append(w.skipped, r.d.name+" ("+windowReason(w.c.windowOf(r.e.name, r.key), w.needs(r), w.minWindow)+")")
		w.windowSkips++
	case noCarry:
		w.skipped = append(w.skipped, r.d.name+" (cannot continue an answer: not sent it)")
	}
}

// ready reports whether route r can take a call now (see deployment.available).
func (r route) ready() bool { return r.d.available(r.key) }

// holds reports whether route d may serve the call: every route, unless provider state pins
// the call (ChatRequest.Pin: a stored answer, a conversation, a pruned compaction item). Then
// only the route whose provider's sharing scope is the state's Origin holds it — or, for state
// that names no origin, the first route the walk tried, and no other: after that route fails
// the call does not fall back, because no other provider holds the conversation (see
// providers/state.go).
func (w *walk) holds(d *deployment) bool {
	switch {
	case !w.pinned:
		return true
	case w.pin.Origin == "":
		return (w.ntried == 0 && len(w.triedMore) == 0) || w.isTried(d)
	}
	s, ok := d.provider.(providers.Scoper)
	return ok && s.SharingScope() == w.pin.Origin
}

// fits reports whether route r, which may declare a context window, can hold the call: the
// call's estimate on r is within the window, and, once a route answered that the prompt
// exceeds its window (minWindow), r declares a larger one. A route that declares none is not
// estimated.
func (w *walk) fits(r route) bool {
	window := w.c.windowOf(r.e.name, r.key)
	if window == 0 {
		return w.minWindow == 0
	}
	return window > w.minWindow && w.needs(r) <= window
}

// needs returns the call's estimate on route r — its prompt as r estimates it and the most it
// may answer — for the context windows: counted once per route and kept for the walk (on its
// own goroutine), 0 for embeddings.
func (w *walk) needs(r route) int {
	if w.req == nil {
		return 0
	}
	for i := range w.counted[:w.ncounted] {
		if k := &w.counted[i]; k.d == r.d && k.key == r.key {
			return k.n
		}
	}
	n := w.c.estimatePrompt(r, w.req).n + answerTokens(w.req) + w.carried
	if w.ncounted < len(w.counted) {
		w.counted[w.ncounted] = routeCount{d: r.d, key: r.key, n: n}
		w.ncounted++
	}
	return n
}

// routeCount is a call's estimate on one route (walk.needs).
type routeCount struct {
	d   *deployment
	key string
	n   int
}

// widen sends a call whose chain ran out after skipping routes whose context window was too
// small to the providers of its context-window fallback (FallbackOn context_too_long) not tried
// yet, as a prompt too long answered by a route would have: reports whether there are any. It
// does so once.
func (w *walk) widen() bool {
	to, ok := w.c.fallbackOn[providers.KindContextTooLong]
	if !ok || w.windowSkips == 0 || w.widened {
		return false
	}
	w.widened = true
	cur := &w.cur
	n := len(cur.chain)
	for _, name := range to {
		if !w.triedProvider(name) && !slices.Contains(cur.chain[min(cur.i, n):], name) {
			cur.chain = append(slices.Clip(cur.chain), name)
		}
	}
	if len(cur.chain) == n {
		return false
	}
	// The cursor stands past the end of the chain: the next pick enters the first added.
	cur.i, cur.e, cur.deps, cur.inOrder, cur.k = n, nil, nil, 0, 0
	return true
}

// windowReason says why a route was skipped for its context window.
func windowReason(window, tokens, minWindow int) string {
	switch {
	case window == 0:
		return "no context window declared, and a smaller one was too small"
	case minWindow > 0 && window <= minWindow:
		return fmt.Sprintf("context window %d, not above the %d that was too small", window, minWindow)
	}
	return fmt.Sprintf("context window %d, below the call's estimate of %d tokens", window, tokens)
}

// cursor is where the walk stands on its chain: the provider chain[i], asked for model m, whose
// deployments it tries in its strategy's order (walk.deps), the next being the k-th.
type cursor struct {
	chain []string
	i     int
	e     *entry
	m     string
	// deps is the order of e's deployments, unless it is in the walk's own room for it
	// (walk.order, its first inOrder): a walk holds no pointer into itself, so that one
	// that stays on the stack keeps doing so.
	deps    []*deployment
	inOrder int
	k       int
	// entered is set once a provider that takes the call was entered: the first keeps the
	// model the call asked for, the others map it (Client.modelFor).
	entered bool
	// retry, when retrying, is the next route to pick: the one that failed, asked again (see
	// decide).
	retry    route
	retrying bool
}

// pick returns the next route of the chain that may serve the call, recording on the way
// those that may not (w.skipped); false when the chain has no more.
func (w *walk) pick() (route, bool) {
	cur := &w.cur
	if cur.retrying {
		cur.retrying = false
		return cur.retry, true
	}
	for {
		for deps := w.deps(); cur.e != nil && cur.k < len(deps); {
			r := routeOf(cur.e, deps[cur.k], cur.m)
			cur.k++
			switch v := w.mayServe(r); v {
			case serves:
				return r, true
			case tried:
			default:
				w.skip(r, v)
			}
		}
		if cur.e != nil {
			cur.i++
		}
		if cur.i >= len(cur.chain) {
			return route{}, false
		}
		e := w.c.entries[cur.chain[cur.i]]
		if !w.takes(e) {
			w.skipped = append(w.skipped, w.whyNot(e))
			cur.e, cur.deps, cur.inOrder, cur.k = e, nil, 0, 0
			continue
		}
		cur.e, cur.m, cur.k = e, w.c.modelFor(e, w.model, !cur.entered), 0
		cur.entered = true
		cur.deps, cur.inOrder = e.deps, 0
		switch {
		case len(e.deps) > len(w.order):
			cur.deps = e.orderIn(nil, w, e.telemetryModel(cur.m))
		case len(e.deps) > 1:
			cur.deps, cur.inOrder = nil, len(e.order(w, e.telemetryModel(cur.m)))
		}
	}
}

// deps is the order in which the walk tries the deployments of the provider it stands on.
func (w *walk) deps() []*deployment {
	if w.cur.inOrder > 0 {
		return w.order[:w.cur.inOrder]
	}
	return w.cur.deps
}

// elsewhere reports whether a route the walk has not tried could serve the call at once: one of
// the deployments of the provider it stands on still to come, or a provider later in the
// chain, that may serve it and is ready.
func (w *walk) elsewhere() bool {
	cur := &w.cur
	for _, d := range w.deps()[cur.k:] {
		if r := routeOf(cur.e, d, cur.m); w.mayServe(r) == serves && r.ready() {
			return true
		}
	}
	for _, name := range cur.chain[min(cur.i+1, len(cur.chain)):] {
		e := w.c.entries[name]
		if !w.takes(e) {
			continue
		}
		m := w.c.modelFor(e, w.model, !cur.entered)
		for _, d := range e.deps {
			if r := routeOf(e, d, m); w.mayServe(r) == serves && r.ready() {
				return true
			}
		}
	}
	return false
}

// waitFor is resilience.Call.MaxWait for the try of a route: the client's fail-over threshold
// when another route could serve the call at once (elsewhere), else 0 (the route's policy and
// the call's deadline decide).
func (w *walk) waitFor() time.Duration {
	if w.elsewhere() {
		return w.c.failoverWait()
	}
	return 0
}

// failoverWait is resilience.Call.MaxWait for a try when the call can go elsewhere at once.
func (c *Client) failoverWait() time.Duration {
	if c.failoverAfter <= 0 {
		return -1 // never wait when another can serve
	}
	return c.failoverAfter
}

// nextReady returns the route a hedge of the walk's current try goes to: the next of the
// current provider's deployments in their order, else the first route of a later provider,
// that may serve the call and is ready.
func (w *walk) nextReady() (route, bool) {
	cur := &w.cur
	for _, d := range w.deps()[cur.k:] {
		if r := routeOf(cur.e, d, cur.m); w.mayServe(r) == serves && r.ready() {
			return r, true
		}
	}
	for _, name := range cur.chain[min(cur.i+1, len(cur.chain)):] {
		e := w.c.entries[name]
		if !w.takes(e) {
			continue
		}
		m := w.c.modelFor(e, w.model, false)
		deps := e.deps
		if len(deps) > 1 {
			deps = e.orderIn(nil, w, e.telemetryModel(m)) // not into w.order: the walk's own order is in use
		}
		for _, d := range deps {
			if r := routeOf(e, d, m); w.mayServe(r) == serves && r.ready() {
				return r, true
			}
		}
	}
	return route{}, false
}

// nextName names, for telemetry (TryResult.Next), where the walk goes after a failure on its
// current route: the next deployment of the same provider that may serve the call (by its
// deployment's name), else the next provider that takes it (by its name); "" for none.
func (w *walk) nextName() string {
	cur := &w.cur
	if cur.retrying {
		return cur.retry.d.name
	}
	for _, d := range w.deps()[cur.k:] {
		if w.mayServe(routeOf(cur.e, d, cur.m)) == serves {
			return d.name
		}
	}
	for _, name := range cur.chain[min(cur.i+1, len(cur.chain)):] {
		e := w.c.entries[name]
		if !w.takes(e) {
			continue
		}
		m := w.c.modelFor(e, w.model, !cur.entered)
		for _, d := range e.deps {
			if w.mayServe(routeOf(e, d, m)) == serves {
				return e.name
			}
		}
	}
	return ""
}

// first returns the first route of the chain that may serve the call, in the chain's order and
// each provider's configured order of deployments; false for none. The prologue asks it before
// the walk starts (the budgets' pre-flight count and price, the pre-flight window check).
func (w *walk) first() (route, bool) {
	entered := false
	for _, name := range w.cur.chain {
		e := w.c.entries[name]
		if !w.takes(e) {
			continue
		}
		m := w.c.modelFor(e, w.model, !entered)
		entered = true
		for _, d := range e.deps {
			if r := routeOf(e, d, m); w.mayServe(r) == serves {
				return r, true
			}
		}
	}
	return route{}, false
}

// preflight refuses, before anything is sent, a call that no route of the chain can hold: every
// route that may serve it — those of the chain, and those of its context-window fallback
// (FallbackOn context_too_long) — declares a context window for its model, and the call's
// estimate exceeds them all.
func (w *walk) preflight() *providers.Error {
	largest, requested, entered := 0, 0, false
	chain := w.cur.chain
	if wider := w.c.fallbackOn[providers.KindContextTooLong]; len(wider) > 0 {
		chain = append(slices.Clip(chain), wider...) // a copy: the walk's chain is not changed
	}
	for _, name := range chain {
		e := w.c.entries[name]
		if !w.takes(e) {
			continue
		}
		m := w.c.modelFor(e, w.model, !entered)
		entered = true
		for _, d := range e.deps {
			r := routeOf(e, d, m)
			if !w.holds(d) {
				continue
			}
			window := w.c.windowOf(name, r.key)
			if window == 0 {
				return nil // a route whose window nobody declared may hold it
			}
			n := w.needs(r)
			if n <= window {
				return nil
			}
			if window > largest {
				largest, requested = window, n
			}
		}
	}
	if largest == 0 {
		return nil
	}
	return &providers.Error{Kind: providers.KindContextTooLong,
		Overflow: &providers.ContextOverflow{Window: largest, Requested: requested},
		Message: fmt.Sprintf("the call needs about %d tokens (prompt and max_tokens), more than the largest context window of the chain (%d): not sent",
			requested, largest)}
}
