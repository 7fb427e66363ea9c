package mocks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// The scenario file form of a latency profile, and its checks.

// latencyJSON is the scenario file form of a LatencyProfile (durations in milliseconds).
type latencyJSON struct {
	FirstTokenMs   float64 `json:"firstTokenMs,omitempty"`
	JitterMs       float64 `json:"jitterMs,omitempty"`
	StragglerRate  float64 `json:"stragglerRate,omitempty"`
	StragglerEvery int     `json:"stragglerEvery,omitempty"`
	StragglerMs    float64 `json:"stragglerMs,omitempty"`
	ChunkDelayMs   float64 `json:"chunkDelayMs,omitempty"`
	HeadersFirst   bool    `json:"headersFirst,omitempty"`
	Seed           uint64  `json:"seed,omitempty"`
}

// MarshalJSON writes p in the scenario file format (see [Config]).
func (p LatencyProfile) MarshalJSON() ([]byte, error) {
	return json.Marshal(latencyJSON{FirstTokenMs: toMs(p.FirstToken), JitterMs: toMs(p.Jitter),
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
	*p = LatencyProfile{FirstToken: ms(w.FirstTokenMs), Jitter: ms(w.JitterMs), StragglerRate: w.StragglerRate,
		StragglerEvery: w.StragglerEvery, Straggler: ms(w.StragglerMs), ChunkDelay: ms(w.ChunkDelayMs),
		HeadersFirst: w.HeadersFirst, Seed: w.Seed}
	return nil
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
