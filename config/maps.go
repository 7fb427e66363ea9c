package config

import (
	"strings"
	"unicode"
)

// Maps are objects whose keys the user chooses: model names, kept as written (they are
// case-sensitive), to strings (Deployments, ModelMap, Routing: kindStringMap) or to whole
// numbers (ContextWindows: kindIntMap). A file and a variable holding a JSON object decode
// their entries alike (mapEntries); the environment can also set them one at a time
// (envmap.go).

// mapEntries normalizes the entries of a decoded JSON object to values of k.elem(). Each wrong
// entry is passed to bad, with the value to show (nil for a key at fault) and what is allowed;
// the result is nil when any entry was wrong, so a map is set whole or not at all.
func mapEntries(k kind, obj map[string]any, bad func(key string, value any, allowed string)) map[string]any {
	out := make(map[string]any, len(obj))
	good := true
	for _, key := range sortedKeys(obj) {
		if !validMapKey(key) {
			bad(key, nil, "a key must be a non-empty name without control characters")
			good = false
			continue
		}
		nv, ok := fromJSON(k.elem(), obj[key])
		if !ok {
			bad(key, describe(obj[key]), k.elem().allowed())
			good = false
			continue
		}
		out[key] = nv
	}
	if !good {
		return nil
	}
	return out
}

// validMapKey reports whether key can be a map's key: not empty, no control characters.
func validMapKey(key string) bool {
	return key != "" && !strings.ContainsFunc(key, unicode.IsControl)
}

// typedMap converts normalized entries to the map type of kind k: map[string]int for
// kindIntMap, map[string]string otherwise.
func typedMap(k kind, entries map[string]any) any {
	if k == kindIntMap {
		out := make(map[string]int, len(entries))
		for key, v := range entries {
			out[key], _ = v.(int)
		}
		return out
	}
	out := make(map[string]string, len(entries))
	for key, v := range entries {
		out[key], _ = v.(string)
	}
	return out
}

// untypedMap is the inverse of typedMap, for merging: nil for what is not a map.
func untypedMap(m any) map[string]any {
	out := map[string]any{}
	switch m := m.(type) {
	case map[string]string:
		for k, v := range m {
			out[k] = v
		}
	case map[string]int:
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// mapOf normalizes the object v, a map of kind k, for a file. It returns nil (untyped, so that
// the caller can test it) after a problem.
func (p *jsonParser) mapOf(path string, k kind, v any) any {
	m, ok := p.object(path, v)
	if !ok {
		return nil
	}
	entries := mapEntries(k, m, func(key string, value any, allowed string) {
		p.problem(joinPath(path, key), value, allowed)
	})
	if entries == nil {
		return nil
	}
	return typedMap(k, entries)
}

// stringMap is mapOf for an object of strings (Routing).
func (p *jsonParser) stringMap(path string, v any) map[string]string {
	m, _ := p.mapOf(path, kindStringMap, v).(map[string]string)
	return m
}
