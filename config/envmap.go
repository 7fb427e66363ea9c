package config

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Maps (Deployments, ModelMap, Routing, ContextWindows) are set from the environment in two
// ways:
//
//   - entry by entry, the key as the last segment of the name:
//     LLM__Providers__azure__Deployments__gpt-4o=prod-gpt4o;
//   - as a whole, a JSON object in the map's own variable:
//     LLM__Providers__azure__Deployments={"gpt-4o": "prod-gpt4o"}.
//
// The second exists because map keys are model names, which hold hyphens and dots: bash's
// export refuses a name with either, AWS Lambda allows only letters, digits and _ in names, and
// Azure App Service only letters, digits, . and _. Either way the entries merge into the map
// of the files one by one; an entry set both ways is a problem, as is any setting set twice.

// envMap collects the entries of one map set from the environment.
type envMap struct {
	kind    kind
	entries map[string]any // normalized values of kind.elem()
}

// mapEntry resolves the key of an entry of a map of kind k at segment i, taken as written
// (model names are case-sensitive). A name that ends at the map sets it as a JSON object (see
// wholeMap).
func (w *envWalk) mapEntry(i int, k kind) (envTarget, bool) {
	if i >= len(w.segs) {
		return envTarget{path: w.path, kind: k, index: -1, whole: true}, true
	}
	key := w.segs[i]
	if !validMapKey(key) || len(w.segs) > i+1 {
		w.fail(i, "a map key must be one non-empty segment without control characters")
		return envTarget{}, false
	}
	return envTarget{path: w.path, kind: k, index: -1, mapKey: key}, true
}

// setEntry records the entry mapKey of the map at key, of kind k.
func (r *envReader) setEntry(key string, k kind, mapKey string, v any) {
	m := r.maps[key]
	if m == nil {
		m = &envMap{kind: k, entries: map[string]any{}}
		r.maps[key] = m
	}
	m.entries[mapKey] = v
}

// wholeMap sets the entries of the map at key from a variable whose value is a JSON object of
// the map's values. Nothing of it is set when any entry is wrong, as for a file.
func (r *envReader) wholeMap(name, key string, t envTarget, value string) {
	var obj map[string]any
	if err := json.Unmarshal([]byte(value), &obj); err != nil || obj == nil {
		r.problem(name, t.display(), value, t.kind.allowed()+
			fmt.Sprintf(", or set one entry at a time, as %s", showName(name+"__gpt-4o")))
		return
	}
	entries := mapEntries(t.kind, obj, func(k string, v any, allowed string) {
		r.problem(name, joinPath(t.display(), k), v, allowed)
	})
	for _, k := range sortedKeys(entries) {
		if r.claim(key+delim+"="+k, name, joinPath(t.display(), k)) {
			r.setEntry(key, t.kind, k, entries[k])
		}
	}
}

// finishMaps merges the map entries set by variables into the maps of the files, entry by
// entry, and returns them as koanf keys.
func (r *envReader) finishMaps(out map[string]any) {
	for key, m := range r.maps {
		merged := untypedMap(lookup(r.base, strings.Split(key, delim)))
		for k, v := range m.entries {
			merged[k] = v
		}
		out[key] = typedMap(m.kind, merged)
	}
}
