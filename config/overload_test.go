package config

import (
	"testing"

	"github.com/steadyllm/steady/resilience"
)

func TestOverloadKeys_LoadFromFileAndEnvironment(t *testing.T) {
	cfg := parse(t, `{"LLM": {
		"Resilience": {"AdaptiveConcurrency": true, "AdaptiveMaxConcurrency": 40, "PriorityReservePercent": 20},
		"Policies": {"Nightly": {"Priority": "batch"}}}}`,
		"LLM__Resilience__AdaptiveMinConcurrency=4", "LLM__Resilience__PriorityMinSharePercent=5")
	r := cfg.Resilience
	if !r.AdaptiveConcurrency || r.AdaptiveMinConcurrency != 4 || r.AdaptiveMaxConcurrency != 40 ||
		r.PriorityReservePercent != 20 || r.PriorityMinSharePercent != 5 || r.Priority != resilience.PriorityDefault {
		t.Fatalf("resilience %+v", r)
	}
	// A policy layers over LLM.Resilience: the class is its own, the adaptive limit inherited.
	if p := cfg.Policies["Nightly"]; p.Priority != resilience.PriorityBatch || !p.AdaptiveConcurrency {
		t.Fatalf("policy %+v", p)
	}
}

func TestOverloadKeys_BadValuesNameTheirPath(t *testing.T) {
	cfg, err := ParseWithEnv([]byte(`{"LLM": {"Resilience": {"Priority": "urgent", "AdaptiveConcurrency": true,
		"AdaptiveMinConcurrency": 50, "AdaptiveMaxConcurrency": 10}}}`), []string{"LLM__Resilience__PriorityReservePercent=95"})
	ps := problemsOf(t, cfg, err)
	for _, path := range []string{"LLM.Resilience.Priority", "LLM.Resilience.AdaptiveMinConcurrency", "LLM.Resilience.PriorityReservePercent"} {
		problemAt(t, ps, path)
	}
}
