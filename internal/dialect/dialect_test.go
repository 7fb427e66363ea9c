package dialect

import "testing"

func TestRules(t *testing.T) {
	for _, tc := range []struct {
		d               string
		known, url, key bool
	}{
		{OpenAI, true, false, true},
		{Azure, true, true, true},
		{Compatible, true, true, false},
		{Anthropic, true, false, true},
		{"openai_compatible", false, false, true},
		{"", false, false, true},
	} {
		if got := Known(tc.d); got != tc.known {
			t.Errorf("Known(%q) = %v, want %v", tc.d, got, tc.known)
		}
		if got := NeedsBaseURL(tc.d); got != tc.url {
			t.Errorf("NeedsBaseURL(%q) = %v, want %v", tc.d, got, tc.url)
		}
		if got := NeedsKey(tc.d); got != tc.key {
			t.Errorf("NeedsKey(%q) = %v, want %v", tc.d, got, tc.key)
		}
	}
}
