package config

import (
	"fmt"
	"slices"
	"strconv"
)

// Lists (Fallback, a FallbackOn kind's, RetryableStatusCodes, Beta, Capabilities) are set
// from the environment element by element, by index, as .NET does: LLM__Fallback__0=openai.
// koanf replaces whole values, so the elements are collected here and merged with the list of
// the files by finishLists.

// envList collects the elements of one list set from the environment.
type envList struct {
	path  []string // canonical path of the list
	kind  kind
	elems map[int]any
	vars  map[int]string // index → variable, for messages
}

// list resolves the index of a list element at segment i.
func (w *envWalk) list(i int, k kind) (envTarget, bool) {
	if i >= len(w.segs) {
		msg := fmt.Sprintf("is a list: set its elements by index, as %s, %s, …", showName(w.name+"__0"), showName(w.name+"__1"))
		if len(w.path) > 1 && w.path[1] == keyFallbackOn {
			msg += fmt.Sprintf(`, or set kinds' lists whole (an empty one too) as a JSON object in %s, such as {%q: []}`,
				envPrefix+keyFallbackOn, w.path[len(w.path)-1])
		}
		w.r.problem(w.name, displayPath(w.path, -1), nil, msg)
		return envTarget{}, false
	}
	idx, err := strconv.Atoi(w.segs[i])
	if err != nil || idx < 0 || idx > maxEnvIndex || strconv.Itoa(idx) != w.segs[i] {
		w.fail(i, fmt.Sprintf("must be a list index between 0 and %d", maxEnvIndex))
		return envTarget{}, false
	}
	if len(w.segs) > i+1 {
		w.r.problem(w.name, joinPath(displayPath(w.path, idx), w.segs[i+1]), nil,
			"unknown key: a list element has no fields")
		return envTarget{}, false
	}
	return envTarget{path: w.path, kind: k, index: idx}, true
}

// finishLists merges the collected list elements into the lists of the files, element by
// element as .NET does, and returns them as koanf keys. An index past the end of the list must
// not leave a gap: the values in between would be undefined.
func (r *envReader) finishLists() map[string]any {
	out := map[string]any{}
	keys := make([]string, 0, len(r.lists))
	for k := range r.lists {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
		l := r.lists[key]
		var base []any
		switch b := lookup(r.base, l.path).(type) {
		case []int:
			for _, v := range b {
				base = append(base, v)
			}
		case []string:
			for _, v := range b {
				base = append(base, v)
			}
		}
		top := len(base) - 1
		for i := range l.elems {
			top = max(top, i)
		}
		merged := make([]any, top+1)
		copy(merged, base)
		gap := false
		for i := len(base); i <= top && !gap; i++ {
			if _, ok := l.elems[i]; !ok {
				next := i + 1
				for l.elems[next] == nil {
					next++
				}
				r.problem(l.vars[next], displayPath(l.path, next), nil, fmt.Sprintf(
					"leaves %s unset: the list has %d elements before the environment, so its "+
						"indexes must continue from %d without gaps", displayPath(l.path, i), len(base), len(base)))
				gap = true
			}
		}
		if gap {
			continue
		}
		for i, v := range l.elems {
			merged[i] = v
		}
		out[key] = typedList(l.kind, merged)
	}
	for key, list := range r.whole {
		out[key] = list
	}
	r.finishMaps(out)
	return out
}

// typedList converts normalized elements to the list type of kind k.
func typedList(k kind, elems []any) any {
	if k == kindIntList {
		ints := make([]int, len(elems))
		for i, v := range elems {
			ints[i], _ = v.(int)
		}
		return ints
	}
	strs := make([]string, len(elems))
	for i, v := range elems {
		strs[i], _ = v.(string)
	}
	return strs
}

// lookup returns the value at a canonical path of a tree, or nil.
func lookup(tree map[string]any, path []string) any {
	var cur any = tree
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}
