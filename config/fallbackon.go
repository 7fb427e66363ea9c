package config

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/steadyllm/steady/providers"
)

// LLM.FallbackOn sends a call that fails with an error kind to the providers listed for that
// kind (client.WithFallbackOn):
//
//	"FallbackOn": {"context_too_long": ["large"], "refused": ["other"], "unavailable": []}
//
// Its keys are the kinds of providers.Kinds but canceled, matched case-insensitively and kept
// in their canonical spelling; its values are lists of provider names, as LLM.Fallback's are.
// From the environment, a kind's list is set by index like any list
// (LLM__FallbackOn__context_too_long__0=large), or several kinds' lists at once, each whole, by
// a JSON object in LLM__FallbackOn itself — the only way to set an empty list from a variable.

// fallbackKinds are the kinds LLM.FallbackOn may name, sorted: every kind but canceled and
// budget_exhausted.
var fallbackKinds = func() []string {
	var out []string
	for _, k := range providers.Kinds() {
		if k != providers.KindCanceled && k != providers.KindBudgetExhausted {
			out = append(out, string(k))
		}
	}
	return out
}()

// canceledAdvice says why LLM.FallbackOn cannot name canceled.
var canceledAdvice = fmt.Sprintf("%s is the caller's own cancellation, which always ends the call: it never goes on "+
	"to another provider", show(string(providers.KindCanceled)))

// budgetAdvice says why LLM.FallbackOn cannot name budget_exhausted.
var budgetAdvice = fmt.Sprintf("%s is a budget of LLM.Cost refusing the call before any provider is asked: there is "+
	"no chain to go on (give the budget a Downgrade to send such calls elsewhere)", show(string(providers.KindBudgetExhausted)))

// fallbackKind resolves key, an error kind LLM.FallbackOn names: its canonical spelling, or why
// it cannot be named, with the kind it most likely means ("" when none).
func fallbackKind(ps *problems, key string) (kind, why, guess string) {
	if strings.EqualFold(key, string(providers.KindCanceled)) {
		return "", canceledAdvice, ""
	}
	if strings.EqualFold(key, string(providers.KindBudgetExhausted)) {
		return "", budgetAdvice, ""
	}
	if c, ok := canonical(key, fallbackKinds); ok {
		return c, "", ""
	}
	return "", "must be an error kind: " + strings.Join(fallbackKinds, ", "), ps.suggest(key, fallbackKinds)
}

// fallbackOn normalizes LLM.FallbackOn from a file. It returns nil when v is not an object.
func (p *jsonParser) fallbackOn(path string, v any) map[string]any {
	m, ok := p.object(path, v)
	if !ok {
		return nil
	}
	out := map[string]any{}
	unknown := func(path, key string) {
		_, why, guess := fallbackKind(p.ps, key)
		if guess != "" {
			why += fmt.Sprintf("; did you mean %s?", showName(guess))
		}
		p.problem(joinPath(path, key), nil, why)
	}
	p.eachKey(path, m, fallbackKinds, unknown, func(path, kind string, v any) {
		if nv := p.leaf(path, kindStringList, v); nv != nil {
			out[kind] = nv
		}
	})
	return out
}

// fallbackOn resolves the error kind at segment i of a variable under LLM__FallbackOn, then the
// index of an element of its list. A name that ends at FallbackOn sets lists whole from a JSON
// object (see wholeFallbackOn).
func (w *envWalk) fallbackOn(i int) (envTarget, bool) {
	if i >= len(w.segs) {
		return envTarget{path: w.path, kind: kindFallbackOn, index: -1, whole: true}, true
	}
	kind, why, guess := fallbackKind(w.r.ps, w.segs[i])
	if why != "" {
		if guess != "" {
			fixed := slices.Clone(w.segs)
			fixed[i] = guess
			why += "; did you mean " + showName(envPrefix+strings.Join(fixed, "__")) + "?"
		}
		w.fail(i, why)
		return envTarget{}, false
	}
	w.path = append(w.path, kind)
	return w.list(i+1, kindStringList)
}

// wholeSuffix marks, in envReader.seen, a list set whole by a JSON object.
const wholeSuffix = delim + "*"

// wholeFallbackOn sets the lists of the kinds a JSON object in LLM__FallbackOn names, each
// replacing the files' list for its kind (the others keep theirs). Nothing of it is set when
// any part is wrong, as for a file.
func (r *envReader) wholeFallbackOn(name string, t envTarget, value string) {
	var obj map[string]any
	if err := json.Unmarshal([]byte(value), &obj); err != nil || obj == nil {
		r.problem(name, t.display(), value, kindFallbackOn.allowed()+fmt.Sprintf(
			", or set one kind's list by index, as %s", showName(name+"__context_too_long__0")))
		return
	}
	lists := map[string][]string{}
	seen := map[string]string{}
	good := true
	for _, key := range sortedKeys(obj) {
		path := joinPath(t.display(), key)
		kind, why, guess := fallbackKind(r.ps, key)
		if guess != "" {
			why += fmt.Sprintf("; did you mean %s?", showName(guess))
		}
		switch first, dup := seen[kind]; {
		case why != "":
			r.problem(name, path, nil, why)
			good = false
			continue
		case dup:
			r.problem(name, path, nil, fmt.Sprintf("set twice, as %s and %s: keys are case-insensitive", show(first), show(key)))
			good = false
			continue
		}
		seen[kind] = key
		elems, ok := obj[key].([]any)
		if !ok {
			r.problem(name, joinPath(t.display(), kind), describe(obj[key]), kindStringList.allowed())
			good = false
			continue
		}
		list := make([]string, 0, len(elems))
		for i, e := range elems {
			s, ok := e.(string)
			if !ok {
				r.problem(name, fmt.Sprintf("%s[%d]", joinPath(t.display(), kind), i), describe(e), kindString.allowed())
				good = false
			}
			list = append(list, s)
		}
		lists[kind] = list
	}
	if !good {
		return
	}
	for _, kind := range sortedKeys(lists) {
		key := strings.Join(append(slices.Clone(t.path), kind), delim)
		display := joinPath(t.display(), kind)
		if !r.claim(key+wholeSuffix, name, display) {
			continue
		}
		if l := r.lists[key]; l != nil {
			r.problem(name, display, nil, "also set by "+showName(l.vars[minKey(l.vars)]))
			continue
		}
		r.whole[key] = lists[kind]
	}
}

// notWhole reports whether the list at key was not set whole by a JSON object, and reports
// the variable name, which sets one of its elements, when it was.
func (r *envReader) notWhole(key, name, display string) bool {
	first, ok := r.seen[key+wholeSuffix]
	if ok {
		r.problem(name, display, nil, "also set by "+showName(first))
	}
	return !ok
}

// minKey returns the smallest key of m.
func minKey(m map[int]string) int {
	first := true
	var lo int
	for k := range m {
		if first || k < lo {
			lo, first = k, false
		}
	}
	return lo
}

// checkFallbackOn resolves the provider names of LLM.FallbackOn, kind by kind, as
// checkFallback does those of LLM.Fallback. It returns nil when no kind is set.
func checkFallbackOn(ps *problems, callable index, tree map[string]any) map[string][]string {
	if len(tree) == 0 {
		return nil
	}
	out := make(map[string][]string, len(tree))
	for _, kind := range sortedKeys(tree) {
		names, _ := tree[kind].([]string)
		if names == nil {
			names = []string{}
		}
		out[kind] = checkNames(ps, joinPath(keyLLM+"."+keyFallbackOn, kind), callable, names)
	}
	return out
}
