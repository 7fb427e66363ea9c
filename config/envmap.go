package config

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
)

// Maps (Deployments, ModelMap, Routing) are set from the environment in two ways:
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

// mapEntry resolves the key of a map entry at segment i, taken as written (model names are
// case-sensitive). A name that ends at the map sets it as a JSON object (see wholeMap).
func (w *envWalk) mapEntry(i int) (envTarget, bool) {
	if i >= len(w.segs) {
		return envTarget{path: w.path, kind: kindStringMap, index: -1, whole: true}, true
	}
	key := w.segs[i]
	if key == "" || strings.ContainsFunc(key, unicode.IsControl) || len(w.segs) > i+1 {
		w.fail(i, "a map key must be one non-empty segment without control characters")
		return envTarget{}, false
	}
	return envTarget{path: w.path, kind: kindStringMap, index: -1, mapKey: key}, true
}

// wholeMap sets the entries of the map at key from a variable whose value is a JSON object of
// strings. Nothing of it is set when any entry is wrong, as for a file.
func (r *envReader) wholeMap(name, key string, t envTarget, value string) {
	var obj map[string]any
	if err := json.Unmarshal([]byte(value), &obj); err != nil || obj == nil {
		r.problem(name, t.display(), value, kindStringMap.allowed()+
			fmt.Sprintf(", or set one entry at a time, as %s", showName(name+"__gpt-4o")))
		return
	}
	entries := make(map[string]string, len(obj))
	good := true
	for _, k := range sortedKeys(obj) {
		s, ok := obj[k].(string)
		switch {
		case k == "" || strings.ContainsFunc(k, unicode.IsControl):
			r.problem(name, joinPath(t.display(), k), nil, "a key must be a non-empty name without control characters")
			good = false
		case !ok:
			r.problem(name, joinPath(t.display(), k), describe(obj[k]), kindString.allowed())
			good = false
		default:
			entries[k] = s
		}
	}
	if !good {
		return
	}
	for _, k := range sortedKeys(entries) {
		if !r.claim(key+delim+"="+k, name, joinPath(t.display(), k)) {
			continue
		}
		m := r.maps[key]
		if m == nil {
			m = map[string]string{}
			r.maps[key] = m
		}
		m[k] = entries[k]
	}
}

// finishMaps merges the map entries set by variables into the maps of the files, entry by
// entry, and returns them as koanf keys.
func (r *envReader) finishMaps(out map[string]any) {
	for key, entries := range r.maps {
		path := strings.Split(key, delim)
		merged := map[string]string{}
		if base, ok := lookup(r.base, path).(map[string]string); ok {
			for k, v := range base {
				merged[k] = v
			}
		}
		for k, v := range entries {
			merged[k] = v
		}
		out[key] = merged
	}
}
