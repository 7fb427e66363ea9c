package providers

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// Scoper is implemented by providers that can say what they call, so that the instances
// sharing their state (resilience.WithSharedState) share with the instances that call the same
// thing and with no one else: two applications on one Redis whose providers are both named
// "openai" do not pause each other unless they call the same endpoint with the same key. The
// client gives the scope to the provider's pipeline (resilience.Pipeline.SetSharedScope) as
// soon as the provider is built, before its first call. It is optional: a provider without it
// shares under its name alone.
type Scoper interface {
	// SharingScope returns an opaque, stable string naming what the provider calls ("" for
	// nothing in particular). It must never contain a secret; see SharingScope.
	SharingScope() string
}

// SharingScope returns the sharing scope of a provider that calls endpoint (its base URL,
// and anything else that changes what it calls: dialect, organization) with apiKey: 32 hex
// digits of an HMAC-SHA256 keyed with the API key. Equal inputs give equal scopes on every
// machine; the scope does not reveal the key, and without the key no one can tell which key
// made it. An empty key (a local server that needs none) still gives a scope of its own.
func SharingScope(apiKey string, endpoint ...string) string {
	m := hmac.New(sha256.New, []byte(apiKey))
	_, _ = m.Write([]byte("steady sharing scope v1"))
	for _, e := range endpoint {
		_, _ = m.Write([]byte{0})
		_, _ = m.Write([]byte(e))
	}
	return hex.EncodeToString(m.Sum(nil)[:16])
}
