package providers_test

import (
	"strings"
	"testing"

	"github.com/steadyllm/steady/providers"
)

// A sharing scope is stable, differs with the endpoint or the key, and never shows the key.
func TestSharingScope_NamesTheEndpointAndKeyWithoutTheKey(t *testing.T) {
	const key = "sk-SECRET-scope-1234"
	a := providers.SharingScope(key, "https://api.example.com/v1")
	if a != providers.SharingScope(key, "https://api.example.com/v1") {
		t.Fatal("not stable")
	}
	for _, other := range []string{
		providers.SharingScope("sk-other", "https://api.example.com/v1"),
		providers.SharingScope(key, "https://other.example.com/v1"),
		providers.SharingScope(key, "https://api.example.com/v1", "org"),
		providers.SharingScope("", "https://api.example.com/v1"),
	} {
		if other == a {
			t.Fatal("two different endpoints or keys share a scope")
		}
	}
	if strings.Contains(a, "SECRET") || len(a) != 32 {
		t.Fatalf("scope %q", a)
	}
}
