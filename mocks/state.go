package mocks

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
)

// State is what a server does now, as [Server.State] and the admin API (GET /_fake/state)
// report it: the scripts with their positions, the latency profiles, the limits, and the
// counters of the concurrency limit and of the journal. API keys never appear in it: a key's
// settings are listed under its fingerprint ([KeyFingerprint]).
type State struct {
	// Routes lists the route names the settings may name (see Routes).
	Routes []string `json:"routes"`
	// Scripts is the fault selection: the default, route and model sequences.
	Scripts ScriptsState `json:"scripts"`
	// Latency is the latency profiles in force.
	Latency LatencyState `json:"latency"`
	// RateLimits is the rate limits in force.
	RateLimits RateLimitsState `json:"rateLimits"`
	// ConcurrencyLimit is the concurrency limit in force, Concurrency what it did.
	ConcurrencyLimit ConcurrencyLimit `json:"concurrencyLimit"`
	Concurrency      ConcurrencyStats `json:"concurrency"`
	// Journal is the journal's counters.
	Journal JournalStats `json:"journal"`
}

// LatencyState is the latency profiles in force (see [LatencyProfile]).
type LatencyState struct {
	// All is the profile of every request ([Server.Latency]); nil for none.
	All *LatencyProfile `json:"all,omitempty"`
	// Routes, Models and Keys are the profiles of routes, models and API keys (by
	// fingerprint).
	Routes map[string]LatencyProfile `json:"routes,omitempty"`
	Models map[string]LatencyProfile `json:"models,omitempty"`
	Keys   map[string]LatencyProfile `json:"keys,omitempty"`
}

// RateLimitsState is the rate limits in force (see [RateLimits]).
type RateLimitsState struct {
	// All is the limits of every key ([Server.RateLimits]); nil for none.
	All *RateLimits `json:"all,omitempty"`
	// Routes and Keys are the limits of routes and of API keys (by fingerprint).
	Routes map[string]RateLimits `json:"routes,omitempty"`
	Keys   map[string]RateLimits `json:"keys,omitempty"`
}

// KeyFingerprint is how a [State] names an API key: "sha256:" and the first 12 hex digits of
// the key's SHA-256, enough to tell a test's keys apart and useless to anyone else.
func KeyFingerprint(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "sha256:" + hex.EncodeToString(sum[:6])
}

// State returns what the server does now (see [State]). It is safe for concurrent use; each
// part is read atomically, the parts one after the other.
func (s *Server) State() State {
	st := State{Routes: append([]string(nil), Routes...), Scripts: s.script.state(), Concurrency: s.Concurrency(),
		Journal: s.journal.Stats()}
	st.ConcurrencyLimit = s.conc.limits.Load().limit()
	if t := s.latency.Load(); t != nil {
		if t.all != nil {
			p := t.all.p
			st.Latency.All = &p
		}
		st.Latency.Routes = profiles(t.routes, nil)
		st.Latency.Models = profiles(t.models, nil)
		st.Latency.Keys = profiles(t.keys, KeyFingerprint)
	}
	ls := s.limiter.set.Load()
	if ls.def != nil {
		l := minuteMs(*ls.def)
		st.RateLimits.All = &l
	}
	for route, l := range ls.routes {
		if st.RateLimits.Routes == nil {
			st.RateLimits.Routes = map[string]RateLimits{}
		}
		st.RateLimits.Routes[route] = minuteMs(l)
	}
	for key, l := range ls.keys {
		if st.RateLimits.Keys == nil {
			st.RateLimits.Keys = map[string]RateLimits{}
		}
		st.RateLimits.Keys[KeyFingerprint(key)] = minuteMs(l)
	}
	return st
}

// profiles lists the profiles of m, their names passed through name (nil: as they are).
func profiles(m map[string]*latencyState, name func(string) string) map[string]LatencyProfile {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]LatencyProfile, len(m))
	for k, l := range m {
		if name != nil {
			k = name(k)
		}
		out[k] = l.p
	}
	return out
}

// minuteMs returns l with its minute in MinuteMs, the field JSON carries.
func minuteMs(l RateLimits) RateLimits {
	if l.Minute > 0 {
		l.MinuteMs, l.Minute = int(l.Minute.Milliseconds()), 0
	}
	return l
}

// Reset puts the server back as NewServer left it, while it runs: the scripts, scenarios,
// outages and chaos mode it was started with, rewound; its latency profiles (their counts and
// sources restarted); its rate limits, every budget full again; its concurrency limits, their
// counters at zero; and an empty journal, its counters at zero. Requests in flight finish as
// they began. The prompt cache is forgotten; the Responses answers stored for
// previous_response_id and those run in background mode are kept. It is safe for concurrent
// use.
func (s *Server) Reset() {
	o := &s.initial
	s.script.load(o, s.outageWindows(o.outages))
	s.latencyMu.Lock()
	s.latency.Store(latencyTableOf(o))
	s.latencyMu.Unlock()
	s.limiter.change(func(ls *limitSet) {
		*ls = limitSet{routes: maps.Clone(o.routeLimits), keys: maps.Clone(o.keyLimits)}
		if o.limits != nil {
			l := *o.limits
			ls.def = &l
		}
	})
	s.limiter.forget(true, "")
	s.setConcurrency(concurrencyOf(o))
	s.conc.resetStats()
	s.journal.Reset()
	s.cacheMu.Lock()
	s.cache, s.cacheOrder, s.cacheNext = nil, nil, 0
	s.cacheMu.Unlock()
}

// concurrencyOf is the concurrency limit of o (the zero limit for none).
func concurrencyOf(o *options) ConcurrencyLimit {
	if o.concurrency == nil {
		return ConcurrencyLimit{}
	}
	return *o.concurrency
}

// ResetRoute puts one route back as NewServer left it: its script (rewound, or none), its
// latency profile, its rate limits (its budgets full again) and its concurrency limit. The
// default script, the other routes, models and keys, and the journal are left as they are. It
// fails for an unknown route.
func (s *Server) ResetRoute(route string) error {
	i := routeIndex(route)
	if i < 0 {
		return fmt.Errorf("mocks: reset: unknown route %q (want one of %v)", clip(route, maxScenarioName), Routes)
	}
	o := &s.initial
	s.script.setRoute(route, o.routes[route])
	if err := s.RouteLatency(route, o.routeLatency[route]); err != nil {
		return err // cannot happen: NewServer checked it
	}
	s.limiter.change(func(ls *limitSet) {
		if l, ok := o.routeLimits[route]; ok {
			ls.routes[route] = l
		} else {
			delete(ls.routes, route)
		}
	})
	s.limiter.forget(false, "route "+route)
	n := concurrencyOf(o).Routes[route]
	s.conc.change(func(cl *concLimits) { cl.routes[i] = int64(max(n, 0)) })
	return nil
}
