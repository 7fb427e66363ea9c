package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	koanfjson "github.com/knadh/koanf/parsers/json"
)

// jsonParser is a koanf.Parser that decodes one JSON source and normalizes it against the
// schema: keys get their canonical spelling, leaf values their canonical Go type, and whatever
// is wrong becomes a Problem instead of an error, so that every problem of every source is
// reported at once. Keys outside LLM are dropped: they belong to the rest of the application.
type jsonParser struct {
	src     string
	ps      *problems
	names   *names
	broken  *bool           // set when the source cannot be decoded at all
	section *sectionFinding // what the document says about the LLM section
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// Unmarshal never fails: a problem is recorded and an empty tree returned instead.
func (p *jsonParser) Unmarshal(b []byte) (map[string]any, error) {
	b = bytes.TrimPrefix(b, utf8BOM) // editors on Windows write one; encoding/json rejects it
	doc, err := koanfjson.Parser().Unmarshal(b)
	if err != nil {
		p.syntax(b, err)
		*p.broken = true
		return map[string]any{}, nil
	}
	return p.document(doc), nil
}

// Marshal is required by koanf.Parser; the loader never calls it.
func (p *jsonParser) Marshal(m map[string]any) ([]byte, error) {
	return koanfjson.Parser().Marshal(m)
}

// syntax records a JSON decoding error with its line and column.
func (p *jsonParser) syntax(b []byte, err error) {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	offset, msg := int64(-1), err.Error()
	switch {
	case errors.As(err, &syn):
		offset = syn.Offset
	case errors.As(err, &typ):
		offset = typ.Offset
		if lit, ok := strings.CutPrefix(typ.Value, "number "); ok {
			// Offset is just past the number: point at its first character instead.
			offset = max(offset-int64(len(lit)), 0)
			msg = typ.Value + " is out of range"
		} else {
			msg = "the document must be a JSON object, not " + typ.Value
		}
	}
	pr := Problem{Source: p.src, Allowed: "invalid JSON: " + msg, Err: err}
	if offset >= 0 {
		pr.Line, pr.Column = position(b, offset)
	}
	p.ps.add(pr)
}

// position converts a byte offset reported by encoding/json (the number of bytes read when the
// error was found) to a 1-based line and column; the column counts runes.
func position(b []byte, offset int64) (line, col int) {
	at := int(min(max(offset-1, 0), int64(len(b))))
	before := b[:at]
	line = 1 + bytes.Count(before, []byte("\n"))
	lineStart := bytes.LastIndexByte(before, '\n') + 1
	return line, 1 + len([]rune(string(before[lineStart:])))
}

func (p *jsonParser) problem(path string, value any, allowed string) {
	p.ps.add(Problem{Source: p.src, Path: path, Value: value, Allowed: allowed})
}

// document keeps the LLM section of a decoded document, and notes in p.section whether it
// has one or what may have been meant for it (see checkSections).
func (p *jsonParser) document(doc map[string]any) map[string]any {
	out := map[string]any{}
	var others []string
	p.eachKey("", doc, []string{keyLLM}, func(_, key string) { others = append(others, key) }, func(_, _ string, v any) {
		p.section.found = true
		if llm := p.llm(keyLLM, v); llm != nil {
			out[keyLLM] = llm
		}
	})
	if !p.section.found {
		p.section.inspect(doc, others)
		if p.section.lost {
			p.ps.add(p.section.lostProblem())
		}
	}
	return out
}

// eachKey calls fn, in sorted key order, with the canonical name of each key of obj found in
// known, and reports keys that two spellings set twice. Unknown keys go to unknown.
func (p *jsonParser) eachKey(path string, obj map[string]any, known []string,
	unknown func(path, key string), fn func(path, canon string, v any)) {
	keys := sortedKeys(obj)
	seen := map[string]string{}
	for _, key := range keys {
		canon, ok := canonical(key, known)
		if !ok {
			unknown(path, key)
			continue
		}
		if first, dup := seen[canon]; dup {
			p.problem(joinPath(path, key), nil,
				fmt.Sprintf("set twice, as %s and %s: keys are case-insensitive", show(first), show(key)))
			continue
		}
		seen[canon] = key
		fn(joinPath(path, canon), canon, obj[key])
	}
}

// unknownKey reports a key that the schema does not know, with the closest known one.
func (p *jsonParser) unknownKey(known []string) func(path, key string) {
	return func(path, key string) {
		p.problem(joinPath(path, key), nil, "unknown key"+p.ps.didYouMean(key, known))
	}
}

// misplacedOrUnknown is unknownKey for objects next to Resilience: a resilience field written
// one level too high is pointed to its place.
func (p *jsonParser) misplacedOrUnknown(known []string) func(path, key string) {
	return func(path, key string) {
		if f, ok := lookupOption(key); ok {
			p.problem(joinPath(path, key), nil,
				fmt.Sprintf("unknown key; did you mean %s.%s?", keyResilience, f.name))
			return
		}
		p.unknownKey(known)(path, key)
	}
}

func (p *jsonParser) object(path string, v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		p.problem(path, describe(v), "must be an object")
	}
	return m, ok
}

func (p *jsonParser) llm(path string, v any) map[string]any {
	m, ok := p.object(path, v)
	if !ok {
		return nil
	}
	out := map[string]any{}
	p.eachKey(path, m, llmKeys, p.misplacedOrUnknown(llmKeys), func(path, canon string, v any) {
		var sub any
		switch canon {
		case keyResilience:
			sub = p.options(path, v)
		case keyPolicies:
			sub = p.named(path, v, &p.names.policies, p.options)
		case keyProviders:
			sub = p.named(path, v, &p.names.providers, p.provider)
		case keyFallback:
			sub = p.leaf(path, kindStringList, v)
		case keyFallbackOn:
			if m := p.fallbackOn(path, v); m != nil {
				sub = m
			}
		case keyFailover:
			sub = p.leaf(path, kindSeconds, v)
		case keyVerify:
			sub = p.leaf(path, kindBool, v)
		case keyRouting:
			if m := p.stringMap(path, v); m != nil {
				sub = m
			}
		case keyCost:
			if m := p.cost(path, v); m != nil {
				sub = m
			}
		case keySharedState:
			if m, ok := p.object(path, v); ok {
				fields := map[string]any{}
				p.eachKey(path, m, sharedStateKeys, p.unknownKey(sharedStateKeys), func(path, canon string, v any) {
					if nv := p.leaf(path, sharedStateFields[canon], v); nv != nil {
						fields[canon] = nv
					}
				})
				sub = fields
			}
		}
		if sub != nil {
			out[canon] = sub
		}
	})
	return out
}

// options normalizes a (partial) resilience object. It returns nil when v is not an object.
func (p *jsonParser) options(path string, v any) map[string]any {
	m, ok := p.object(path, v)
	if !ok {
		return nil
	}
	out := map[string]any{}
	p.eachKey(path, m, optionNames, p.unknownKey(optionNames), func(path, canon string, v any) {
		f, _ := lookupOption(canon)
		if nv := p.leaf(path, f.kind, v); nv != nil {
			out[canon] = nv
		}
	})
	return out
}

// named normalizes a map from user-chosen names to objects (policies, providers).
func (p *jsonParser) named(path string, v any, known *nameSet,
	each func(path string, v any) map[string]any) map[string]any {
	m, ok := p.object(path, v)
	if !ok {
		return nil
	}
	out := map[string]any{}
	seen := map[string]string{}
	for _, key := range sortedKeys(m) {
		if msg := checkName(key); msg != "" {
			p.problem(joinPath(path, key), key, msg)
			continue
		}
		lower := strings.ToLower(key)
		if first, dup := seen[lower]; dup {
			p.problem(joinPath(path, key), nil,
				fmt.Sprintf("declared twice, as %s and %s: names are case-insensitive", show(first), show(key)))
			continue
		}
		seen[lower] = key
		name := known.resolve(key)
		if sub := each(joinPath(path, key), m[key]); sub != nil {
			out[name] = sub
		}
	}
	return out
}

func (p *jsonParser) provider(path string, v any) map[string]any {
	m, ok := p.object(path, v)
	if !ok {
		return nil
	}
	m = p.dialectAlias(path, m)
	out := map[string]any{}
	unknown := func(path, key string) {
		if isSecretKey(key) {
			p.problem(joinPath(path, key), nil, secretAdvice)
			return
		}
		p.misplacedOrUnknown(providerKeys)(path, key)
	}
	p.eachKey(path, m, providerKeys, unknown, func(path, canon string, v any) {
		var nv any
		switch k := providerFields[canon].kind; {
		case canon == keyResilience:
			if sub := p.options(path, v); sub != nil {
				nv = sub
			}
		case k.isMap():
			nv = p.mapOf(path, k, v)
		case k == kindLimits:
			if sub := p.limits(path, v); sub != nil {
				nv = sub
			}
		default:
			nv = p.leaf(path, k, v)
		}
		if s, ok := nv.(string); ok && canon == keyAPIKeyEnv && !validEnvName(s) {
			p.problem(path, nil, envNameAdvice)
			return
		}
		if nv != nil {
			out[canon] = nv
		}
	})
	return out
}

// dialectAlias accepts Type, the former name of Dialect: it returns m with that key renamed, or
// reports a provider that sets both.
func (p *jsonParser) dialectAlias(path string, m map[string]any) map[string]any {
	var alias, canon string
	for k := range m {
		switch {
		case strings.EqualFold(k, keyTypeAlias):
			alias = k
		case strings.EqualFold(k, keyDialect):
			canon = k
		}
	}
	if alias == "" {
		return m
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != alias {
			out[k] = v
		}
	}
	if canon != "" {
		p.problem(joinPath(path, alias), nil, fmt.Sprintf("set twice, as %s and %s: %s is the former name of %s",
			show(canon), show(alias), keyTypeAlias, keyDialect))
		return out
	}
	out[keyDialect] = m[alias]
	return out
}

// limits normalizes the Limits object of a provider.
func (p *jsonParser) limits(path string, v any) map[string]any {
	m, ok := p.object(path, v)
	if !ok {
		return nil
	}
	out := map[string]any{}
	p.eachKey(path, m, limitKeys, p.unknownKey(limitKeys), func(path, canon string, v any) {
		if nv := p.leaf(path, kindInt, v); nv != nil {
			out[canon] = nv
		}
	})
	return out
}

// leaf normalizes a value of kind k. It returns nil, after recording a problem, when the
// value does not fit.
func (p *jsonParser) leaf(path string, k kind, v any) any {
	if !k.isList() {
		nv, ok := fromJSON(k, v)
		switch {
		case ok:
			return nv
		case namesCredential(path): // "PasswordEnv": 271828 is a password in the wrong place
			p.problem(path, nil, k.allowed())
		default:
			p.problem(path, describe(v), k.allowed())
		}
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		p.problem(path, describe(v), k.allowed())
		return nil
	}
	var ints []int
	var strs []string
	good := true
	for i, e := range list {
		nv, ok := fromJSON(k.elem(), e)
		if !ok {
			p.problem(fmt.Sprintf("%s[%d]", path, i), describe(e), k.elem().allowed())
			good = false
			continue
		}
		switch nv := nv.(type) {
		case int:
			ints = append(ints, nv)
		case string:
			strs = append(strs, nv)
		}
	}
	switch {
	case !good:
		return nil
	case k == kindIntList:
		return append([]int{}, ints...) // non-nil: an empty list is a setting too
	default:
		return append([]string{}, strs...)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
