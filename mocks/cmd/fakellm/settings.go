package main

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/steadyllm/steady/mocks"
)

// settings are the flags that set, at the start, what the admin API changes while the server
// runs: scripts, latency profiles and limits. Each applies after the scenario file, replacing
// only what it names of the file's settings.
type settings struct {
	// cfgs are the JSON flags, each parsed as a scenario file of one key (so they are checked
	// as a file is, unknown keys included), in the order given.
	cfgs []*mocks.Config

	rpm, tpm         int
	minute           time.Duration
	concurrency      int
	overloadStatus   int
	routeConcurrency map[string]int
}

// maxFlagFile bounds a JSON flag read from a file (@path).
const maxFlagFile = mocks.MaxAdminBodyBytes

// flags declares the settings' flags on fs.
func (st *settings) flags(fs *flag.FlagSet) {
	jsonFlag := func(name, key, usage string, routed bool) {
		fs.Func(name, usage, func(v string) error {
			value, route := v, ""
			if routed {
				var ok bool
				route, value, ok = strings.Cut(v, "=")
				if !ok || route == "" {
					return fmt.Errorf("want route=JSON, such as %s=..., with a route of %v", mocks.RouteMessages, mocks.Routes)
				}
			}
			data, err := jsonValue(value)
			if err != nil {
				return err
			}
			doc := `{"` + key + `":` + data + `}`
			if routed {
				doc = `{"` + key + `":{` + strconv.Quote(route) + `:` + data + `}}`
			}
			cfg, err := mocks.ParseConfig([]byte(doc))
			if err != nil {
				return fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "mocks: scenario file: "))
			}
			st.cfgs = append(st.cfgs, cfg)
			return nil
		})
	}
	jsonFlag("script", "script", "the default `script`: a JSON list of steps, or @file (see mocks.Config), such as '[{\"status\":503,\"repeat\":2}]'", false)
	jsonFlag("route-script", "routes", "a route's script, as `route=JSON` (a list of steps, or @file; repeatable), such as '/v1/messages=[{\"status\":529,\"forever\":true}]'", true)
	jsonFlag("latency", "latency", "the latency `profile` of every request: a JSON object, or @file, such as '{\"firstTokenMs\":80,\"jitterMs\":40}'", false)
	jsonFlag("route-latency", "routeLatency", "a route's latency profile, as `route=JSON` (repeatable)", true)
	jsonFlag("route-limits", "routeLimits", "a route's rate limits, as `route=JSON` (repeatable), such as '/v1/messages={\"requestsPerMinute\":50}'", true)
	fs.IntVar(&st.rpm, "rpm", 0, fmt.Sprintf("requests per minute of every API key, `0..%d` (0: no limit; with -tpm and -limit-minute, replaces the file's limits)", mocks.MaxRatePerMinute))
	fs.IntVar(&st.tpm, "tpm", 0, fmt.Sprintf("tokens per minute of every API key, `0..%d` (0: no limit)", mocks.MaxRatePerMinute))
	fs.DurationVar(&st.minute, "limit-minute", 0, fmt.Sprintf("the rate limits' `minute`, 0..%s (0: a real minute; shorter for fast tests)", mocks.MaxLimitMinute))
	fs.IntVar(&st.concurrency, "concurrency", 0, fmt.Sprintf("calls served at once, `0..%d` (0: no limit); the others are answered 529 (Anthropic) or 503 (OpenAI)", mocks.MaxConcurrencyLimit))
	fs.IntVar(&st.overloadStatus, "overload-status", 503, "`status` of an OpenAI or Azure call over a concurrency limit: 503, 529 or 429")
	fs.Func("route-concurrency", "calls a route serves at once, as `route=N` (repeatable)", func(v string) error {
		route, n, ok := strings.Cut(v, "=")
		limit, err := strconv.Atoi(n)
		if !ok || err != nil {
			return fmt.Errorf("want route=N, such as %s=2", mocks.RouteMessages)
		}
		if st.routeConcurrency == nil {
			st.routeConcurrency = map[string]int{}
		}
		st.routeConcurrency[route] = limit
		return nil
	})
}

// jsonValue returns a JSON flag's value: v itself, or the contents of the file @path.
func jsonValue(v string) (string, error) {
	path, ok := strings.CutPrefix(v, "@")
	if !ok {
		return v, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFlagFile+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxFlagFile {
		return "", fmt.Errorf("%s is longer than %d bytes", path, maxFlagFile)
	}
	return string(b), nil
}

// options returns the server options of the settings; set holds the names of the flags given,
// file the scenario file (nil for none). It checks the numeric flags' ranges, naming the flag,
// the value and the range.
func (st *settings) options(set map[string]bool, file *mocks.Config) ([]mocks.Option, error) {
	var opts []mocks.Option
	for _, cfg := range st.cfgs {
		opts = append(opts, mocks.WithConfig(cfg))
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"rpm", st.rpm}, {"tpm", st.tpm}} {
		if f.v < 0 || f.v > mocks.MaxRatePerMinute {
			return nil, fmt.Errorf("-%s %d out of range [0, %d]", f.name, f.v, mocks.MaxRatePerMinute)
		}
	}
	if st.minute < 0 || st.minute > mocks.MaxLimitMinute {
		return nil, fmt.Errorf("-limit-minute %s out of range [0s, %s]", st.minute, mocks.MaxLimitMinute)
	}
	if set["rpm"] || set["tpm"] || set["limit-minute"] {
		opts = append(opts, mocks.WithRateLimits(mocks.RateLimits{RequestsPerMinute: st.rpm, TokensPerMinute: st.tpm, Minute: st.minute}))
	}
	if st.concurrency < 0 || st.concurrency > mocks.MaxConcurrencyLimit {
		return nil, fmt.Errorf("-concurrency %d out of range [0, %d]", st.concurrency, mocks.MaxConcurrencyLimit)
	}
	if st.overloadStatus != 503 && st.overloadStatus != 529 && st.overloadStatus != 429 {
		return nil, fmt.Errorf("-overload-status %d is none of 503, 529 and 429", st.overloadStatus)
	}
	for route, n := range st.routeConcurrency {
		if !valid(route) {
			return nil, fmt.Errorf("-route-concurrency: route %q is none of %v", route, mocks.Routes)
		}
		if n < 0 || n > mocks.MaxConcurrencyLimit {
			return nil, fmt.Errorf("-route-concurrency %s=%d out of range [0, %d]", route, n, mocks.MaxConcurrencyLimit)
		}
	}
	if set["concurrency"] || set["overload-status"] || len(st.routeConcurrency) > 0 {
		// Each flag replaces only what it names: the file's other limits stay, as the JSON
		// route flags add to the file's routes.
		var l mocks.ConcurrencyLimit
		if file != nil && file.Concurrency != nil {
			l = *file.Concurrency
		}
		l.Routes = maps.Clone(l.Routes)
		if set["concurrency"] {
			l.Max = st.concurrency
		}
		if set["overload-status"] {
			l.OpenAIStatus = st.overloadStatus
		}
		for route, n := range st.routeConcurrency {
			if l.Routes == nil {
				l.Routes = map[string]int{}
			}
			l.Routes[route] = n
		}
		opts = append(opts, mocks.WithConcurrencyLimit(l))
	}
	return opts, nil
}

func valid(route string) bool {
	for _, r := range mocks.Routes {
		if r == route {
			return true
		}
	}
	return false
}
