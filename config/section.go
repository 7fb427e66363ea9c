package config

import (
	"strings"
)

// The LLM section must come from somewhere. A file that holds no LLM object used to load as
// the defaults with no provider, and the mistake (a misspelt "LMM", settings written at the top
// level, the wrong file) only showed when the first call failed. The rule:
//
//   - At least one source must hold the section: a JSON source with a top-level LLM key (in
//     any case), or an LLM__ variable. Otherwise every JSON source is reported ("no LLM section
//     found"), or, with no JSON source at all, the load as a whole.
//   - A source may leave the section to another one (an appsettings.Production.json that only
//     changes logging), unless it holds a top-level key spelt close to LLM whose object holds
//     LLM settings: that is a misspelt section whose settings would be lost, and is reported
//     whatever the other sources hold.
//   - A variable spelt close to LLM__ whose next segment names an LLM setting is reported for
//     the same reason; other variables stay the application's business.

// sectionFinding is what one JSON source says about the LLM section.
type sectionFinding struct {
	src   string
	found bool   // the source has a top-level LLM key, valid or not
	key   string // a top-level key that may be the section misspelt or flattened, or ""
	hint  string // what to write instead of key: "LLM" or "LLM.<setting>"
	lost  bool   // key is spelt close to LLM and holds LLM settings: reported in any case
}

// inspect looks, in a document without an LLM key, for the key the author most likely meant:
// first a near miss of LLM holding LLM settings, then any near miss of LLM, then an LLM setting
// written at the top level. keys are sorted, so the choice does not depend on map order.
func (f *sectionFinding) inspect(doc map[string]any, keys []string) {
	rank := 0
	for _, k := range keys {
		r, hint := 0, ""
		switch near, holds := nearLLM(k), holdsLLMSettings(doc[k]); {
		case near && holds:
			r, hint = 3, keyLLM
		case near:
			r, hint = 2, keyLLM
		default:
			if c, ok := canonical(k, llmKeys); ok {
				r, hint = 1, keyLLM+"."+c
			}
		}
		if r > rank {
			rank, f.key, f.hint = r, k, hint
		}
	}
	f.lost = rank == 3
}

// nearLLM reports whether a top-level key or variable prefix looks like an attempt at "LLM":
// one edit away from it ("LMM", "LLMs", "Llm_"), or holding it ("LLMSettings"). Two-letter
// names such as "ML" are one edit away too; they only count as misspelt sections when they
// also hold LLM settings.
func nearLLM(key string) bool {
	lower := strings.ToLower(key)
	return levenshtein(lower, "llm") <= 1 || strings.Contains(lower, "llm")
}

// holdsLLMSettings reports whether v is an object with a key of the LLM section (Providers,
// Resilience, …) in any case.
func holdsLLMSettings(v any) bool {
	m, _ := v.(map[string]any)
	for k := range m {
		if _, ok := canonical(k, llmKeys); ok {
			return true
		}
	}
	return false
}

// Messages of the section checks.
const (
	noSection = "no LLM section found: steady reads its settings from the top-level LLM object " +
		"(its name is case-insensitive), and no LLM__ variable sets any"
	noSectionNoFile = "no LLM section found: no configuration file was given and no LLM__ " +
		"environment variable is set"
	lostSection = "no LLM section found in this source, and this object of LLM settings would not " +
		"be read; did you mean LLM? (steady reads only the top-level LLM object, whose name is case-insensitive)"
)

// lostProblem reports a misspelt section that holds settings. It is recorded as the source is
// parsed, since it does not depend on the other sources.
func (f *sectionFinding) lostProblem() Problem {
	return Problem{Source: f.src, Path: joinPath("", f.key), Allowed: lostSection}
}

// missingProblem reports a source without the section when no source has one.
func (f *sectionFinding) missingProblem() Problem {
	if f.key == "" {
		return Problem{Source: f.src, Allowed: noSection}
	}
	return Problem{Source: f.src, Path: joinPath("", f.key),
		Allowed: "no LLM section found; did you mean " + f.hint + "? (steady reads only the top-level " +
			"LLM object, whose name is case-insensitive)"}
}

// checkSections adds the problems of a load in which no source holds the LLM section.
func (l *loader) checkSections() {
	if l.envHasLLM {
		return
	}
	for _, f := range l.sections {
		if f.found {
			return
		}
	}
	if len(l.sections) == 0 {
		l.ps.add(Problem{Allowed: noSectionNoFile})
	}
	for _, f := range l.sections {
		if !f.lost { // a lost section is already reported, with the same suggestion
			l.ps.add(f.missingProblem())
		}
	}
}

// scanEnvPrefixes notes whether any variable starts with LLM__, and reports the variables
// whose prefix is a near miss of it and whose next segment names an LLM setting
// ("LMM__Providers__openai__Model"): they were meant for this package and would be lost.
func (l *loader) scanEnvPrefixes(sorted []string) {
	for _, kv := range sorted {
		name, _, _ := strings.Cut(kv, "=")
		if len(name) >= len(envPrefix) && strings.EqualFold(name[:len(envPrefix)], envPrefix) {
			l.envHasLLM = true
			continue
		}
		prefix, rest, ok := strings.Cut(name, "__")
		if !ok || !nearLLM(prefix) {
			continue
		}
		next, _, _ := strings.Cut(rest, "__")
		if _, ok := canonical(next, llmKeys); ok {
			l.ps.add(Problem{Source: name, Allowed: "is not read: steady reads only variables that start with " +
				envPrefix + "; did you mean " + showName(envPrefix+rest) + "?"})
		}
	}
}
