package headers

import "testing"

func TestValidNameAndValue(t *testing.T) {
	for name, want := range map[string]bool{"X-Tenant": true, "x_y.z~1": true, "": false, "X Tenant": false,
		"X:Tenant": false, "X\r\nY": false, "X\x00": false, "é": false} {
		if got := ValidName(name); got != want {
			t.Errorf("ValidName(%q) = %v", name, got)
		}
	}
	for v, want := range map[string]int{"ok value\twith tab": -1, "a\rb": 1, "\nx": 0, "nul\x00": 3, "del\x7f": 3, "é ü": -1} {
		if got := BadValueByte(v); got != want {
			t.Errorf("BadValueByte(%q) = %d, want %d", v, got, want)
		}
	}
	if k, bad := Invalid(map[string][]string{"Ok": {"fine"}, "X-Id": {"a\nb"}}); !bad || k != "X-Id" {
		t.Errorf("Invalid found %q %v", k, bad)
	}
	if _, bad := Invalid(map[string][]string{"Ok": {"fine"}, "Connection": {"close"}, "Transfer-Encoding": {"chunked"}}); bad {
		t.Error("Invalid flagged valid headers")
	}
	for _, h := range []map[string][]string{{"Upgrade": {"h2c"}}, {"Connection": {"upgrade"}}, {"Connection": {"close", "x"}},
		{"Transfer-Encoding": {"gzip"}}} {
		if _, bad := Invalid(h); !bad {
			t.Errorf("Invalid passed %v, which HTTP/2 refuses", h)
		}
	}
	if !TransportOwned("Keep-Alive") || TransportOwned("X-Tenant") {
		t.Error("TransportOwned")
	}
}
