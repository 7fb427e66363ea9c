package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// envPrefix starts every variable this package reads, in any case ("llm__" too).
const envPrefix = "LLM__"

// maxEnvIndex bounds list indexes in variable names, so a typo cannot ask for a huge list.
const maxEnvIndex = 999

// envReader maps environment variables written in the .NET convention
// (LLM__Providers__openai__BaseURL, LLM__Fallback__0) to canonical koanf keys. It is the
// TransformFunc of koanf's env provider. koanf's own mapping (replace "__" by the delimiter)
// would give LLM.PROVIDERS… or keep the variable's spelling, a different key from the file's,
// and the override would be silently lost; here every segment is matched against the schema
// and the names already declared, case-insensitively.
//
// List elements cannot be merged by koanf one index at a time (it replaces whole values), so
// they are collected here and merged with the list from the files by finishLists.
type envReader struct {
	ps    *problems
	names *names
	base  map[string]any    // the merged tree before the environment
	seen  map[string]string // target key → the first variable that set it
	// origins maps the JSON path of each setting a variable set (as problems show it: see
	// envTarget.display) to that variable, so that a problem the checks of the merged result
	// find with the value can name the variable the user wrote (see loader.attribute).
	origins map[string]string
	lists   map[string]*envList
	maps    map[string]*envMap  // map entries set by variables, by koanf key
	whole   map[string][]string // lists set whole by a JSON object (LLM__FallbackOn), by koanf key
}

// envTarget is the setting a variable names.
type envTarget struct {
	path   []string // canonical, starting with LLM
	kind   kind
	index  int    // list element index, or -1
	mapKey string // the key of a map entry (a kind that isMap), or ""
	whole  bool   // the variable names a map itself and holds a JSON object of its entries
}

func newEnvReader(ps *problems, n *names, base map[string]any) *envReader {
	return &envReader{ps: ps, names: n, base: base, seen: map[string]string{}, origins: map[string]string{},
		lists: map[string]*envList{}, maps: map[string]*envMap{}, whole: map[string][]string{}}
}

// transform returns the koanf key and normalized value for one variable, or "" to skip it.
func (r *envReader) transform(name, value string) (string, any) {
	if len(name) < len(envPrefix) || !strings.EqualFold(name[:len(envPrefix)], envPrefix) {
		return "", nil // not ours
	}
	t, ok := r.target(name, strings.Split(name[len(envPrefix):], "__"))
	if !ok {
		return "", nil
	}
	key := strings.Join(t.path, delim)
	if t.whole {
		if t.kind == kindFallbackOn {
			r.wholeFallbackOn(name, t, value)
		} else {
			r.wholeMap(name, key, t, value)
		}
		return "", nil
	}
	id := key
	switch {
	case t.index >= 0:
		id += delim + strconv.Itoa(t.index)
	case t.mapKey != "":
		id += delim + "=" + t.mapKey
	}
	if !r.claim(id, name, t.display()) || (t.index >= 0 && !r.notWhole(key, name, t.display())) {
		return "", nil
	}

	k := t.kind
	if t.index >= 0 || t.mapKey != "" {
		k = k.elem()
	}
	v, ok := fromEnv(k, value)
	switch {
	case !ok:
		r.problem(name, t.display(), value, k.allowed())
		return "", nil
	case t.path[len(t.path)-1] == keyAPIKeyEnv && !validEnvName(value):
		r.problem(name, t.display(), nil, envNameAdvice)
		return "", nil
	case t.index >= 0:
		l := r.lists[key]
		if l == nil {
			l = &envList{path: t.path, kind: t.kind, elems: map[int]any{}, vars: map[int]string{}}
			r.lists[key] = l
		}
		l.elems[t.index], l.vars[t.index] = v, name
		return "", nil
	case t.mapKey != "":
		r.setEntry(key, t.kind, t.mapKey, v)
		return "", nil
	}
	return key, v
}

// claim records that variable name sets the setting id, and reports whether it is the first
// to do so. Another variable that set it first is a problem; the same variable listed twice in
// the environment is not (the first wins, as with os.Getenv).
func (r *envReader) claim(id, name, display string) bool {
	first, dup := r.seen[id]
	switch {
	case !dup:
		r.seen[id] = name
		r.origins[display] = name
		return true
	case first == name:
	case strings.EqualFold(first, name):
		r.problem(name, display, nil, fmt.Sprintf("also set by %s: names are case-insensitive", showName(first)))
	default:
		r.problem(name, display, nil, fmt.Sprintf("also set by %s", showName(first)))
	}
	return false
}

func (r *envReader) problem(src, path string, value any, allowed string) {
	r.ps.add(Problem{Source: src, Path: path, Value: value, Allowed: allowed})
}

// target walks the segments of a variable name through the schema.
func (r *envReader) target(name string, segs []string) (envTarget, bool) {
	w := envWalk{r: r, name: name, segs: segs, path: []string{keyLLM}}
	sec, ok := w.match(0, llmKeys)
	if !ok {
		return envTarget{}, false
	}
	switch sec {
	case keyResilience:
		return w.option(1)
	case keyFallback:
		return w.list(1, kindStringList)
	case keyFailover:
		return w.leaf(1, kindSeconds)
	case keyVerify:
		return w.leaf(1, kindBool)
	case keyFallbackOn:
		return w.fallbackOn(1)
	case keyRouting:
		return w.mapEntry(1, kindStringMap)
	case keyCost:
		return w.cost(1)
	case keySharedState:
		field, ok := w.match(1, sharedStateKeys)
		if !ok {
			return envTarget{}, false
		}
		return w.leaf(2, sharedStateFields[field])
	case keyPolicies:
		if !w.declared(1, &r.names.policies) {
			return envTarget{}, false
		}
		return w.option(2)
	}
	if !w.declared(1, &r.names.providers) || !w.more(2, "a provider", keyDialect) {
		return envTarget{}, false
	}
	if strings.EqualFold(segs[2], keyTypeAlias) { // the former name of Dialect
		segs = slices.Clone(segs)
		segs[2] = keyDialect
		w.segs = segs
	}
	if isSecretKey(segs[2]) {
		w.fail(2, secretAdvice)
		return envTarget{}, false
	}
	field, ok := w.match(2, providerKeys)
	if !ok {
		return envTarget{}, false
	}
	switch k := providerFields[field].kind; {
	case field == keyResilience:
		return w.option(3)
	case k == kindStringList:
		return w.list(3, k)
	case k.isMap():
		return w.mapEntry(3, k)
	case k == kindLimits:
		if _, ok := w.match(3, limitKeys); !ok {
			return envTarget{}, false
		}
		return w.leaf(4, kindInt)
	default:
		return w.leaf(3, k)
	}
}

// leaf ends the walk at a setting of kind k, which must be the last segment (i-1).
func (w *envWalk) leaf(i int, k kind) (envTarget, bool) {
	if len(w.segs) > i {
		w.fail(i, "unknown key: "+w.path[len(w.path)-1]+" has no fields")
		return envTarget{}, false
	}
	return envTarget{path: w.path, kind: k, index: -1}, true
}

// envWalk is the state of target's walk: the canonical path so far.
type envWalk struct {
	r    *envReader
	name string
	segs []string
	path []string
}

// fail reports a problem at segment i.
func (w *envWalk) fail(i int, allowed string) {
	path := displayPath(w.path, -1)
	if i < len(w.segs) {
		path = joinPath(path, w.segs[i])
	}
	w.r.problem(w.name, path, nil, allowed)
}

// more reports whether segment i exists; what names the object that ends the variable.
func (w *envWalk) more(i int, what, example string) bool {
	if i < len(w.segs) {
		return true
	}
	w.r.problem(w.name, displayPath(w.path, -1), nil, fmt.Sprintf(
		"names %s, not a setting: set one of its fields, such as %s", what, showName(w.name+"__"+example)))
	return false
}

// match matches segment i against known keys, suggesting a corrected variable name if it fails.
func (w *envWalk) match(i int, known []string) (string, bool) {
	if !w.more(i, "an object", known[0]) {
		return "", false
	}
	c, ok := canonical(w.segs[i], known)
	if ok {
		w.path = append(w.path, c)
		return c, true
	}
	fix := w.r.ps.suggest(w.segs[i], known)
	if fix == "" {
		if f, ok := lookupOption(w.segs[i]); ok && slices.Contains(known, keyResilience) {
			fix = keyResilience + "__" + f.name
		}
	}
	msg := "unknown key"
	if fix != "" {
		fixed := slices.Clone(w.segs)
		fixed[i] = fix
		msg += "; did you mean " + showName(envPrefix+strings.Join(fixed, "__")) + "?"
	}
	w.fail(i, msg)
	return "", false
}

// declared resolves a policy or provider name at segment i against the names already declared.
func (w *envWalk) declared(i int, known *nameSet) bool {
	if !w.more(i, "a map of names", "<name>") {
		return false
	}
	if msg := checkName(w.segs[i]); msg != "" {
		w.fail(i, msg)
		return false
	}
	w.path = append(w.path, known.resolve(w.segs[i]))
	return true
}

// option resolves a resilience field at segment i.
func (w *envWalk) option(i int) (envTarget, bool) {
	if !w.more(i, "a resilience object", optionNames[0]) {
		return envTarget{}, false
	}
	field, ok := w.match(i, optionNames)
	if !ok {
		return envTarget{}, false
	}
	f, _ := lookupOption(field)
	if f.kind.isList() {
		return w.list(i+1, f.kind)
	}
	if len(w.segs) > i+1 {
		w.fail(i+1, "unknown key: "+field+" has no fields")
		return envTarget{}, false
	}
	return envTarget{path: w.path, kind: f.kind, index: -1}, true
}

func (t envTarget) display() string {
	if t.mapKey != "" {
		return joinPath(displayPath(t.path, -1), t.mapKey)
	}
	return displayPath(t.path, t.index)
}

// displayPath renders a canonical path as a JSON path, with an element index when index ≥ 0.
func displayPath(path []string, index int) string {
	s := ""
	for _, p := range path {
		s = joinPath(s, p)
	}
	if index >= 0 {
		s += fmt.Sprintf("[%d]", index)
	}
	return s
}
