package mocks

import (
	"errors"
	"fmt"
	"time"
)

// Rate limits of a route, and the changes of every rate limit while the server runs.

// WithRouteRateLimits enforces l for the calls to route (one of [Routes]), each API key with a
// budget of its own there, instead of the limits of [WithRateLimits]; a key's own limits
// ([WithKeyRateLimits]) still win. The zero RateLimits exempts the route. NewServer panics
// for an unknown route or limits out of range.
func WithRouteRateLimits(route string, l RateLimits) Option {
	return func(o *options) {
		if o.routeLimits == nil {
			o.routeLimits = map[string]RateLimits{}
		}
		o.routeLimits[route] = l
	}
}

// MaxRatePerMinute bounds RequestsPerMinute and TokensPerMinute, and MaxLimitMinute the
// fake's minute, so that no budget arithmetic overflows.
const (
	MaxRatePerMinute = 1_000_000_000
	MaxLimitMinute   = 24 * time.Hour
)

// Validate reports every value of l out of its range, naming the field, the value and the
// range, or nil.
func (l RateLimits) Validate() error {
	return joinProblems(l.problems(""))
}

// problems lists what is wrong with l, its fields named after prefix as a scenario file names
// them.
func (l RateLimits) problems(prefix string) []*Problem {
	var out []*Problem
	for _, f := range []struct {
		name string
		v    int
	}{{"requestsPerMinute", l.RequestsPerMinute}, {"tokensPerMinute", l.TokensPerMinute}} {
		if f.v < 0 || f.v > MaxRatePerMinute {
			out = append(out, &Problem{Field: prefix + f.name, Value: f.v, Allowed: fmt.Sprintf("out of range [0, %d] (0: no limit)", MaxRatePerMinute)})
		}
	}
	if l.MinuteMs < 0 || time.Duration(l.MinuteMs) > MaxLimitMinute/time.Millisecond {
		out = append(out, &Problem{Field: prefix + "minuteMs", Value: l.MinuteMs,
			Allowed: fmt.Sprintf("out of range [0, %d] (0: a real minute)", MaxLimitMinute.Milliseconds())})
	}
	if l.Minute < 0 || l.Minute > MaxLimitMinute {
		out = append(out, &Problem{Field: prefix + "Minute", Value: l.Minute,
			Allowed: fmt.Sprintf("out of range [0s, %s] (0: a real minute)", MaxLimitMinute)})
	}
	return out
}

// RateLimits replaces the limits of every API key ([WithRateLimits]) while the server runs;
// nil removes them. Route and key limits ([Server.RouteRateLimits], [Server.KeyRateLimits])
// stay. It applies to the requests that arrive after it returns: a budget kept under other
// limits starts again, full, under the new ones the next time its key sends a request. It
// returns an error, changing nothing, for limits out of range. It is safe for concurrent use.
func (s *Server) RateLimits(l *RateLimits) error {
	if l != nil {
		if err := l.Validate(); err != nil {
			return fmt.Errorf("mocks: rate limits: %w", err)
		}
		cp := *l
		l = &cp
	}
	s.limiter.change(func(ls *limitSet) { ls.def = l })
	return nil
}

// RouteRateLimits replaces the limits of the calls to route (see [WithRouteRateLimits]) as
// RateLimits does for every key; nil removes them, and the route's calls fall back to the
// limits of every key. It fails for an unknown route or limits out of range.
func (s *Server) RouteRateLimits(route string, l *RateLimits) error {
	if !validRoute(route) {
		return fmt.Errorf("mocks: route rate limits: unknown route %q (want one of %v)", clip(route, maxScenarioName), Routes)
	}
	if l != nil {
		if err := l.Validate(); err != nil {
			return fmt.Errorf("mocks: route rate limits %s: %w", route, err)
		}
	}
	s.limiter.change(func(ls *limitSet) {
		if l == nil {
			delete(ls.routes, route)
		} else {
			ls.routes[route] = *l
		}
	})
	return nil
}

// KeyRateLimits replaces the limits of one API key (see [WithKeyRateLimits]) as RateLimits
// does for every key; nil removes them, and the key falls back to its route's or every key's
// limits. The zero RateLimits exempts the key. It fails for an empty key, limits out of range,
// or a key beyond [MaxModels]; its errors do not repeat the key, a secret.
func (s *Server) KeyRateLimits(key string, l *RateLimits) error {
	if key == "" {
		return errors.New("mocks: key rate limits: the key is empty")
	}
	if l != nil {
		if err := l.Validate(); err != nil {
			return fmt.Errorf("mocks: key rate limits: %w", err)
		}
	}
	var err error
	s.limiter.change(func(ls *limitSet) {
		switch _, known := ls.keys[key]; {
		case l == nil:
			delete(ls.keys, key)
		case !known && len(ls.keys) >= MaxModels:
			err = fmt.Errorf("mocks: key rate limits: more than %d keys have limits", MaxModels)
		default:
			ls.keys[key] = *l
		}
	})
	return err
}
