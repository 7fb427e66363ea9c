package mocks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// The scenario file form of a latency profile, and its checks.

// latencyJSON is the scenario file form of a LatencyProfile (durations in milliseconds).
type latencyJSON struct {
	FirstTokenMs   float64 `json:"firstTokenMs,omitempty"`
	JitterMs       float64 `json:"jitterMs,omitempty"`
	Spread         float64 `json:"spread,omitempty"`
	StragglerRate  float64 `json:"stragglerRate,omitempty"`
	StragglerEvery int     `json:"stragglerEvery,omitempty"`
	StragglerMs    float64 `json:"stragglerMs,omitempty"`
	ChunkDelayMs   float64 `json:"chunkDelayMs,omitempty"`
	HeadersFirst   bool    `json:"headersFirst,omitempty"`
	Seed           uint64  `json:"seed,omitempty"`
}

// MarshalJSON writes p in the scenario file format (see [Config]).
func (p LatencyProfile) MarshalJSON() ([]byte, error) {
	return json.Marshal(latencyJSON{FirstTokenMs: toMs(p.FirstToken), JitterMs: toMs(p.Jitter), Spread: p.Spread,
		StragglerRate: p.StragglerRate, StragglerEvery: p.StragglerEvery, StragglerMs: toMs(p.Straggler),
		ChunkDelayMs: toMs(p.ChunkDelay), HeadersFirst: p.HeadersFirst, Seed: p.Seed})
}

// UnmarshalJSON reads a profile in the scenario file format; unknown keys are errors, and so
// is a duration too large to hold (the ranges are checked with the rest of the file, where
// the error can say whose profile it is).
func (p *LatencyProfile) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var w latencyJSON
	if err := dec.Decode(&w); err != nil {
		return err
	}
	for key, v := range map[string]float64{"firstTokenMs": w.FirstTokenMs, "jitterMs": w.JitterMs,
		"stragglerMs": w.StragglerMs, "chunkDelayMs": w.ChunkDelayMs} {
		if math.Abs(v) > 1e12 { // ~31 years: beyond, a Duration could not hold it
			return fmt.Errorf("%s %s out of range [0, %s]", key, msText(v), msText(toMs(MaxLatencyDelay)))
		}
	}
	*p = LatencyProfile{FirstToken: ms(w.FirstTokenMs), Jitter: ms(w.JitterMs), Spread: w.Spread, StragglerRate: w.StragglerRate,
		StragglerEvery: w.StragglerEvery, Straggler: ms(w.StragglerMs), ChunkDelay: ms(w.ChunkDelayMs),
		HeadersFirst: w.HeadersFirst, Seed: w.Seed}
	return nil
}

// Validate reports every value of p out of its range, naming the field, the value and the
// range, or nil. Options panic with its error, the Server's setters return it.
func (p LatencyProfile) Validate() error { return p.validate(false) }

// validate is Validate, naming the fields as a scenario file does when file is set.
func (p LatencyProfile) validate(file bool) error {
	prefix := ""
	if !file {
		prefix = "Go:"
	}
	return joinProblems(p.problems(prefix))
}

// problems lists what is wrong with p: its fields named as a scenario file names them after
// prefix, or, for the prefix "Go:", as the Go fields (the durations in Go's notation).
func (p LatencyProfile) problems(prefix string) []*Problem {
	var out []*Problem
	goNames := prefix == "Go:"
	if goNames {
		prefix = ""
	}
	for _, f := range []struct {
		name, key string
		d         time.Duration
	}{
		{"FirstToken", "firstTokenMs", p.FirstToken},
		{"Jitter", "jitterMs", p.Jitter},
		{"Straggler", "stragglerMs", p.Straggler},
		{"ChunkDelay", "chunkDelayMs", p.ChunkDelay},
	} {
		if f.d >= 0 && f.d <= MaxLatencyDelay {
			continue
		}
		if goNames {
			out = append(out, &Problem{Field: f.name, Value: f.d, Allowed: fmt.Sprintf("out of range [0s, %v]", MaxLatencyDelay)})
		} else {
			out = append(out, &Problem{Field: prefix + f.key, Value: json.Number(msText(toMs(f.d))),
				Allowed: fmt.Sprintf("out of range [0, %s]", msText(toMs(MaxLatencyDelay)))})
		}
	}
	rate, every, spread := "StragglerRate", "StragglerEvery", "Spread"
	if !goNames {
		rate, every, spread = prefix+"stragglerRate", prefix+"stragglerEvery", prefix+"spread"
	}
	if !(p.StragglerRate >= 0 && p.StragglerRate <= 1) { // NaN included
		out = append(out, &Problem{Field: rate, Value: p.StragglerRate, Allowed: "out of range [0, 1]"})
	}
	if !(p.Spread >= 0 && p.Spread <= MaxLatencySpread) { // NaN included
		out = append(out, &Problem{Field: spread, Value: p.Spread, Allowed: fmt.Sprintf("out of range [0, %v]", MaxLatencySpread)})
	}
	if p.StragglerEvery < 0 || p.StragglerEvery > math.MaxInt32 {
		out = append(out, &Problem{Field: every, Value: p.StragglerEvery, Allowed: fmt.Sprintf("out of range [0, %d]", math.MaxInt32)})
	}
	if p.StragglerRate > 0 && p.StragglerEvery > 0 {
		out = append(out, &Problem{Field: rate, Value: p.StragglerRate,
			Allowed: fmt.Sprintf("and %s %d both set: give one", every, p.StragglerEvery)})
	}
	return out
}

// msText writes milliseconds as a scenario file would, without an exponent.
func msText(v float64) string {
	if math.Abs(v) >= 1e15 {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// validateLatency reports what is wrong with cfg's latency profiles.
func (cfg *Config) validateLatency() []error {
	var errs []error
	if cfg.Latency != nil {
		if err := cfg.Latency.validate(true); err != nil {
			errs = append(errs, fmt.Errorf("latency: %w", err))
		}
	}
	for route := range cfg.RouteLatency {
		if !validRoute(route) {
			errs = append(errs, fmt.Errorf("routeLatency: route %q is none of %v", route, Routes))
		}
	}
	for what, m := range map[string]map[string]LatencyProfile{"modelLatency": cfg.ModelLatency, "keyLatency": cfg.KeyLatency,
		"routeLatency": cfg.RouteLatency} {
		if len(m) > MaxModels {
			errs = append(errs, fmt.Errorf("%s names %d, more than %d", what, len(m), MaxModels))
		}
		for name, p := range m {
			if name == "" {
				errs = append(errs, fmt.Errorf("%s: a profile for an empty name", what))
			}
			if what == "keyLatency" {
				name = "[key]" // a key is a secret: say which list, not which key
			}
			if err := p.validate(true); err != nil {
				errs = append(errs, fmt.Errorf("%s.%s: %w", what, name, err))
			}
		}
	}
	return errs
}
