package observe

import (
	"errors"
	"strings"
	"testing"
)

func TestSafeText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"dial tcp 10.0.0.1:443: connection refused", "dial tcp 10.0.0.1:443: connection refused"},
		{`Post "https://api.example.com/v1/chat?key=abc123": EOF`, `Post "https://api.example.com": EOF`},
		{"GET http://user:secret@host:8080/p#frag failed", "GET http://host:8080 failed"},
		{"Authorization: Bearer abc.def.ghi rejected", "Authorization: [REDACTED] [REDACTED] rejected"},
		{"bad api_key=xyz987 given", "bad api_key=[REDACTED] given"},
		{"key sk-ant-api03-AbCdEf123456 leaked", "key sk-[REDACTED] leaked"},
		{"weird ://nohost here", "weird ://nohost here"},
	} {
		var err error
		if tc.in != "" {
			err = errors.New(tc.in)
		}
		if got := safeText(err); got != tc.want {
			t.Errorf("safeText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSafeText_CutsLongText(t *testing.T) {
	got := safeText(errors.New(strings.Repeat("é", 400)))
	if len(got) > maxErrorText+len("…") || !strings.HasSuffix(got, "…") || !strings.HasPrefix(got, "éé") {
		t.Errorf("%d bytes: %q", len(got), got)
	}
	if strings.ContainsRune(got, '\uFFFD') {
		t.Error("cut in the middle of a rune")
	}
}
