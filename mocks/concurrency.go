package mocks

import (
	"fmt"
	"maps"
	"net/http"
	"sync"
	"sync/atomic"
)

// ConcurrencyLimit makes the fake serve at most Max calls at once, as a provider whose capacity
// is full: a call that arrives while Max are being served (from the moment its request is read
// until its answer, stream included, is written) is refused at once, before any rate limit or
// script step, the way each API says it is overloaded:
//
//   - Anthropic: 529 with {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}};
//   - OpenAI and Azure: 503 with an error of type server_error, "The server is overloaded or
//     not ready yet." (OpenAI's answer to an overloaded engine), or 529 with OpenAIStatus;
//   - or, with OpenAIStatus 429, the answer of an OpenAI-compatible server or gateway that
//     limits the calls at once: 429 "Too many concurrent requests", with no retry hint and the
//     usual rate-limit headers showing room in every budget (it is no rate limit: a call
//     succeeds as soon as one in flight ends).
//
// Routes limits the calls to one route (one of [Routes]) as well: a call is refused when its
// route is full even if the server is not, so that one deployment can be made to saturate
// while the others serve.
//
// A refused call costs nothing from the rate limits and takes no step of a script. Calls to
// GET /v1/models are never counted. Change the limits while the server runs with
// [Server.SetConcurrencyLimit] and [Server.SetRouteConcurrencyLimit] (or the admin API);
// [Server.Concurrency] tells what they did.
type ConcurrencyLimit struct {
	// Max is the number of calls served at once; 0 or less: no limit.
	Max int `json:"max,omitempty"`
	// OpenAIStatus is the status of an OpenAI or Azure call over the limit: 503 (the default),
	// 529 or 429.
	OpenAIStatus int `json:"openAIStatus,omitempty"`
	// Routes is the number of calls each route serves at once, by route; 0 or less: no limit
	// of its own.
	Routes map[string]int `json:"routes,omitempty"`
}

// MaxConcurrencyLimit bounds every concurrency limit (Max and each of Routes).
const MaxConcurrencyLimit = 1_000_000

// Validate reports every value of l out of its range, naming the field, the value and the
// range, or nil.
func (l ConcurrencyLimit) Validate() error {
	return joinProblems(l.problems(""))
}

func (l ConcurrencyLimit) problems(prefix string) []*Problem {
	var out []*Problem
	if l.Max < 0 || l.Max > MaxConcurrencyLimit {
		out = append(out, &Problem{Field: prefix + "max", Value: l.Max, Allowed: fmt.Sprintf("out of range [0, %d] (0: no limit)", MaxConcurrencyLimit)})
	}
	if l.OpenAIStatus != 0 && overloadStatus(l.OpenAIStatus) != l.OpenAIStatus {
		out = append(out, &Problem{Field: prefix + "openAIStatus", Value: l.OpenAIStatus, Allowed: "is none of 503, 529 and 429 (0: 503)"})
	}
	for route, n := range l.Routes {
		if !validRoute(route) {
			out = append(out, &Problem{Field: prefix + "routes", Value: clip(route, maxScenarioName), Allowed: fmt.Sprintf("is none of %v", Routes)})
		}
		if n < 0 || n > MaxConcurrencyLimit {
			out = append(out, &Problem{Field: prefix + "routes." + clip(route, maxScenarioName), Value: n,
				Allowed: fmt.Sprintf("out of range [0, %d] (0: no limit of its own)", MaxConcurrencyLimit)})
		}
	}
	return out
}

// overloadStatus is the OpenAI status over a concurrency limit that n asks for: n when it is
// 503, 529 or 429, else 503.
func overloadStatus(n int) int {
	switch n {
	case 529, http.StatusTooManyRequests:
		return n
	}
	return http.StatusServiceUnavailable
}

// WithConcurrencyLimit enforces l (see ConcurrencyLimit). NewServer panics for a limit out of
// range or an unknown route.
func WithConcurrencyLimit(l ConcurrencyLimit) Option {
	return func(o *options) {
		l.Routes = maps.Clone(l.Routes)
		o.concurrency = &l
	}
}

// ConcurrencyStats is what the concurrency limit did (Server.Concurrency).
type ConcurrencyStats struct {
	// Max is the limit now (0: none); InFlight the calls being served now, Peak the most served
	// at once since the server started (or its last Reset).
	Max      int `json:"max"`
	InFlight int `json:"inFlight"`
	Peak     int `json:"peak"`
	// Served counts the calls let through, Refused those answered 529, 503 or 429 for a limit.
	Served  int64 `json:"served"`
	Refused int64 `json:"refused"`
	// Routes holds, for each route that has a limit of its own or a call in flight, its limit
	// (0: none) and its calls in flight.
	Routes map[string]RouteConcurrency `json:"routes,omitempty"`
}

// RouteConcurrency is one route's part of ConcurrencyStats.
type RouteConcurrency struct {
	Max      int `json:"max"`
	InFlight int `json:"inFlight"`
}

// concLimits is the concurrency limits in force; a published value is never modified.
type concLimits struct {
	max          int64
	openAIStatus int
	routes       [numRoutes]int64 // by index in Routes; 0: no limit
}

// routeIndex returns the index of route in Routes, -1 for none.
func routeIndex(route string) int {
	for i, r := range routeNames {
		if r == route {
			return i
		}
	}
	return -1
}

// concurrency is the server's count of calls in flight, and its limits.
type concurrency struct {
	limits          atomic.Pointer[concLimits]
	inflight, peak  atomic.Int64
	routeIn         [numRoutes]atomic.Int64
	served, refused atomic.Int64
	mu              sync.Mutex // orders the counts against the limits, for exact limits; serialises changes
}

func newConcurrency(l *ConcurrencyLimit) *concurrency {
	c := &concurrency{}
	c.limits.Store(toConcLimits(l))
	return c
}

// toConcLimits resolves l (nil: no limit) to the form the server reads.
func toConcLimits(l *ConcurrencyLimit) *concLimits {
	cl := &concLimits{openAIStatus: http.StatusServiceUnavailable}
	if l == nil {
		return cl
	}
	cl.max = int64(max(l.Max, 0))
	cl.openAIStatus = overloadStatus(l.OpenAIStatus)
	for route, n := range l.Routes {
		if i := routeIndex(route); i >= 0 {
			cl.routes[i] = int64(max(n, 0))
		}
	}
	return cl
}

// limit returns the limits in force as a ConcurrencyLimit.
func (cl *concLimits) limit() ConcurrencyLimit {
	l := ConcurrencyLimit{Max: int(cl.max), OpenAIStatus: cl.openAIStatus}
	for i, n := range cl.routes {
		if n > 0 {
			if l.Routes == nil {
				l.Routes = map[string]int{}
			}
			l.Routes[routeNames[i]] = int(n)
		}
	}
	return l
}

// change publishes a changed copy of the limits.
func (cc *concurrency) change(f func(cl *concLimits)) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cl := *cc.limits.Load()
	f(&cl)
	cc.limits.Store(&cl)
}

// SetConcurrencyLimit changes the number of calls the server serves at once (see
// ConcurrencyLimit) while it runs; 0 or less removes the limit. Calls in flight above a lower
// limit finish; the next ones are refused until the count is below it.
func (s *Server) SetConcurrencyLimit(n int) {
	s.conc.change(func(cl *concLimits) { cl.max = int64(max(min(n, MaxConcurrencyLimit), 0)) })
}

// SetRouteConcurrencyLimit changes the number of calls route serves at once (see
// ConcurrencyLimit.Routes) while the server runs, as SetConcurrencyLimit does for the
// server; 0 removes the route's own limit. It fails for an unknown route or n out of
// [0, MaxConcurrencyLimit].
func (s *Server) SetRouteConcurrencyLimit(route string, n int) error {
	i := routeIndex(route)
	if i < 0 {
		return fmt.Errorf("mocks: route concurrency limit: unknown route %q (want one of %v)", clip(route, maxScenarioName), Routes)
	}
	if n < 0 || n > MaxConcurrencyLimit {
		return fmt.Errorf("mocks: route concurrency limit %s: %d out of range [0, %d]", route, n, MaxConcurrencyLimit)
	}
	s.conc.change(func(cl *concLimits) { cl.routes[i] = int64(n) })
	return nil
}

// setConcurrency replaces every concurrency limit with l, which must be valid.
func (s *Server) setConcurrency(l ConcurrencyLimit) {
	s.conc.change(func(cl *concLimits) { *cl = *toConcLimits(&l) })
}

// Concurrency returns what the concurrency limits did so far.
func (s *Server) Concurrency() ConcurrencyStats {
	c := s.conc
	cl := c.limits.Load()
	st := ConcurrencyStats{Max: int(cl.max), InFlight: int(c.inflight.Load()), Peak: int(c.peak.Load()),
		Served: c.served.Load(), Refused: c.refused.Load()}
	for i := range routeNames {
		if n, in := cl.routes[i], c.routeIn[i].Load(); n > 0 || in > 0 {
			if st.Routes == nil {
				st.Routes = map[string]RouteConcurrency{}
			}
			st.Routes[routeNames[i]] = RouteConcurrency{Max: int(n), InFlight: int(in)}
		}
	}
	return st
}

// admit counts call c in, or refuses it with the provider's overloaded answer when its
// server's or its route's limit is reached; it reports whether c goes on, in which case the
// caller must call leave when its answer is written.
func (cc *concurrency) admit(c *call, entry *Request) bool {
	if c.endpoint == modelsEndpoint {
		return true
	}
	cc.mu.Lock()
	cl := cc.limits.Load()
	full := cl.max > 0 && cc.inflight.Load() >= cl.max
	var ri int64 = -1
	if i := routeIndex(c.route); i >= 0 {
		ri = int64(i)
		full = full || (cl.routes[i] > 0 && cc.routeIn[i].Load() >= cl.routes[i])
	}
	if full {
		cc.mu.Unlock()
		cc.refused.Add(1)
		st := Step{Status: 529}
		if c.api != anthropic {
			st.Status = cl.openAIStatus
		}
		if st.Status == http.StatusTooManyRequests {
			st.Message = "Too many concurrent requests. Please retry when a request in flight has finished."
			c.overCapacity = true // no rate limit: the headers show room (see call.headers)
		}
		c.s.journal.setStep(entry, "", st.String()+" (concurrency limit)")
		c.serve(st)
		return false
	}
	n := cc.inflight.Add(1)
	if ri >= 0 {
		cc.routeIn[ri].Add(1)
	}
	c.concRoute = int(ri)
	cc.mu.Unlock()
	cc.served.Add(1)
	for {
		p := cc.peak.Load()
		if n <= p || cc.peak.CompareAndSwap(p, n) {
			break
		}
	}
	return true
}

// leave counts a call that admit let through out again.
func (cc *concurrency) leave(c *call) {
	if c.endpoint != modelsEndpoint {
		cc.inflight.Add(-1)
		if c.concRoute >= 0 {
			cc.routeIn[c.concRoute].Add(-1)
		}
	}
}

// resetStats zeroes the counters, the peak to the calls in flight.
func (cc *concurrency) resetStats() {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.served.Store(0)
	cc.refused.Store(0)
	cc.peak.Store(cc.inflight.Load())
}
