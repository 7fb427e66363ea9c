package providers

import "slices"

// Kinds returns every error kind, sorted by name: the values a configuration may name (a
// per-kind fallback chain, say). The slice is the caller's to keep or change.
func Kinds() []ErrorKind {
	out := make([]ErrorKind, 0, len(kindTraits))
	for k := range kindTraits {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
