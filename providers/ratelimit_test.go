package providers

import (
	"net/http"
	"testing"
	"time"
)

func TestParseRateLimit_EveryHeaderForm(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	openai := http.Header{}
	openai.Set("x-ratelimit-limit-requests", "60")
	openai.Set("x-ratelimit-remaining-requests", "59")
	openai.Set("x-ratelimit-reset-requests", "1s")
	openai.Set("x-ratelimit-limit-tokens", "150000")
	openai.Set("x-ratelimit-remaining-tokens", "149984")
	openai.Set("x-ratelimit-reset-tokens", "6m0s")
	rl := ParseRateLimit(openai, now)
	if rl == nil || rl.Requests != (RateBudget{60, 59, now.Add(time.Second)}) ||
		rl.Tokens != (RateBudget{150000, 149984, now.Add(6 * time.Minute)}) || !rl.At.Equal(now) {
		t.Fatalf("openai: %+v", rl)
	}

	anthropic := http.Header{}
	reset := "2026-11-23T12:00:30Z"
	for _, k := range []string{"requests", "tokens", "input-tokens", "output-tokens"} {
		anthropic.Set("anthropic-ratelimit-"+k+"-limit", "1000")
		anthropic.Set("anthropic-ratelimit-"+k+"-remaining", "999")
		anthropic.Set("anthropic-ratelimit-"+k+"-reset", reset)
	}
	rl = ParseRateLimit(anthropic, now)
	want := RateBudget{1000, 999, now.Add(30 * time.Second)}
	if rl == nil || rl.Requests != want || rl.Tokens != want || rl.InputTokens != want || rl.OutputTokens != want {
		t.Fatalf("anthropic: %+v", rl)
	}

	for v, d := range map[string]time.Duration{"17ms": 17 * time.Millisecond, "1m30s": 90 * time.Second, "2": 2 * time.Second, "0.5": 500 * time.Millisecond} {
		h := http.Header{"X-Ratelimit-Reset-Tokens": {v}}
		if rl := ParseRateLimit(h, now); rl == nil || !rl.Tokens.Reset.Equal(now.Add(d)) {
			t.Errorf("reset %q: %+v", v, rl)
		}
	}
	if rl := ParseRateLimit(http.Header{"X-Ratelimit-Limit-Tokens": {"lots"}, "X-Ratelimit-Reset-Tokens": {"soon"}}, now); rl == nil ||
		rl.Tokens != (RateBudget{}) {
		t.Errorf("garbage parses as zero: %+v", rl)
	}
	if ParseRateLimit(http.Header{"Content-Type": {"application/json"}}, now) != nil || ParseRateLimit(nil, now) != nil {
		t.Error("no rate-limit headers must give nil")
	}
}
