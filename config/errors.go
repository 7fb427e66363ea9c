package config

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/steadyllm/steady/internal/redact"
)

// ErrNoAPIKey is matched (errors.Is) by the error of [Provider.APIKey] when the environment
// variable named by APIKeyEnv is unset or empty.
var ErrNoAPIKey = errors.New("config: API key not set")

// Error is returned by [Load], [Parse] and their variants when the configuration is unusable.
// It lists every problem found, in a stable order: per source in load order (defaults, files,
// environment), then the checks of the merged result. Match it with errors.As.
//
// Unwrap exposes the underlying errors of the problems that have one (a *fs.PathError for a
// missing file, a *json.SyntaxError for invalid JSON), so errors.Is(err, fs.ErrNotExist) works.
type Error struct {
	Problems []Problem
}

// Problem is one thing wrong with the configuration.
type Problem struct {
	// Source is where the value came from: a file name, "input" for [Parse], or the name of
	// the environment variable that set it — for a problem the checks of the merged
	// configuration found too (a value out of range, a name no provider has), so a value from
	// the environment is reported by the variable the user wrote as well as by its JSON path.
	// It is "" for a check of the merged configuration whose value came from a file (the path
	// finds it there) or from no source at all (a required key that is missing).
	Source string
	// Line and Column (both 1-based) locate invalid JSON in Source; 0 otherwise.
	Line, Column int
	// Path is the JSON path of the setting, such as "LLM.Resilience.RetryCount" or
	// "LLM.Resilience.RetryableStatusCodes[1]"; "" when the whole source is at fault.
	Path string
	// Value is the value found, as decoded (string, float64, int, bool); for an object, a
	// list or null, a description of it. It is nil when showing it could leak a secret or
	// would not help: unknown keys, API keys written into the configuration, credentials.
	Value any
	// Allowed says what is allowed or what to do instead.
	Allowed string
	// Err is the underlying error, if any (reading a file, decoding JSON).
	Err error
}

// Error formats the problem as "source:line:col: path = value: allowed", leaving out the
// parts that are empty.
func (p Problem) Error() string {
	var b strings.Builder
	if p.Source != "" {
		b.WriteString(showName(p.Source))
		if p.Line > 0 {
			fmt.Fprintf(&b, ":%d:%d", p.Line, p.Column)
		}
		b.WriteString(": ")
	}
	if p.Path != "" {
		b.WriteString(p.Path)
		if p.Value != nil {
			b.WriteString(" = ")
			b.WriteString(showValue(p.Value))
		}
		b.WriteString(": ")
	}
	b.WriteString(p.Allowed)
	return b.String()
}

// Unwrap returns the underlying error, if any.
func (p Problem) Unwrap() error { return p.Err }

// Error lists the problems, one per line after a summary.
func (e *Error) Error() string {
	switch len(e.Problems) {
	case 0:
		return "config: invalid configuration"
	case 1:
		return "config: " + e.Problems[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "config: %d problems:", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n\t")
		b.WriteString(p.Error())
	}
	return b.String()
}

// Unwrap returns the underlying errors of the problems that have one.
func (e *Error) Unwrap() []error {
	var errs []error
	for _, p := range e.Problems {
		if p.Err != nil {
			errs = append(errs, p.Err)
		}
	}
	return errs
}

// maxShown bounds how much of a string value a problem repeats.
const maxShown = 64

// show renders a name taken from the input (a key, a policy or provider name) for a message:
// quoted, control characters escaped (a name with a newline cannot forge a line of its own),
// and cut to maxShown bytes.
func show(s string) string {
	if redact.LooksLikeKey(s) {
		return redact.Mask // a secret written where a name or value belongs: never repeat it
	}
	if len(s) > maxShown {
		return strconv.Quote(clipShown(s)) + "…"
	}
	return strconv.Quote(s)
}

// maxName bounds a source (a file path, a variable name) in a message.
const maxName = 256

// showName renders a source or variable name: as it is when it is printable and not too long,
// else quoted with control characters escaped, and cut.
func showName(s string) string {
	if redact.LooksLikeKey(s) {
		return redact.Mask
	}
	printable := !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) })
	switch {
	case printable && len(s) <= maxName:
		return s
	case len(s) <= maxName:
		return strconv.Quote(s)
	}
	cut := maxName
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "…"
}

// clipShown cuts s to at most maxShown bytes on a rune boundary.
func clipShown(s string) string {
	if len(s) <= maxShown {
		return s
	}
	cut := maxShown
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// showValue renders a value for a message: strings quoted and shortened, containers by kind only.
func showValue(v any) string {
	switch v := v.(type) {
	case string:
		return show(v)
	case literal:
		return string(v)
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case nil:
		return "null"
	}
	return fmt.Sprint(v)
}

// literal is a Problem.Value shown as is, without quotes.
type literal string

// describe returns what a problem shows of a decoded JSON value: scalars as they are, the kind
// of a container (its content could be large or secret).
func describe(v any) any {
	switch v.(type) {
	case map[string]any, map[string]string, map[string]int:
		return literal("an object")
	case []any, []string, []int:
		return literal("a list")
	case nil:
		return literal("null")
	}
	return v
}

// problems collects the problems of one load.
type problems struct {
	list    []Problem
	guesses int // suggestions computed so far: each costs a scan of the candidates
}

// maxGuesses bounds the suggestions one load computes, so a file with thousands of unknown
// names still loads in time linear in its size.
const maxGuesses = 32

func (ps *problems) add(p Problem) { ps.list = append(ps.list, p) }

func (ps *problems) err() error {
	if len(ps.list) == 0 {
		return nil
	}
	return &Error{Problems: ps.list}
}

// maxSuggestLen is the longest name for which a suggestion is computed.
const maxSuggestLen = 128

// suggest returns the candidate closest to name (case-insensitively) when it is close enough to
// be a likely typo, else "". Ties go to the candidate first in sorted order, so the answer does
// not depend on map iteration.
func suggest(name string, candidates []string) string {
	n := utf8.RuneCountInString(name)
	if n > maxSuggestLen {
		return "" // nobody mistypes a name this long, and the distance would cost n²
	}
	limit := max(2, n/3)
	best, bestDist := "", limit+1
	sorted := append([]string(nil), candidates...)
	sort.Strings(sorted)
	lower := strings.ToLower(name)
	for _, c := range sorted {
		m := utf8.RuneCountInString(c)
		if m > maxSuggestLen || m-n > limit || n-m > limit {
			continue
		}
		if d := levenshtein(lower, strings.ToLower(c)); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// levenshtein is the edit distance between a and b, counted in runes.
func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// didYouMean formats the hint for an unknown name, while the load's budget of suggestions
// lasts.
func (ps *problems) didYouMean(name string, candidates []string) string {
	if s := ps.suggest(name, candidates); s != "" {
		return fmt.Sprintf("; did you mean %s?", showName(s))
	}
	return ""
}

// suggest is suggest within the load's budget.
func (ps *problems) suggest(name string, candidates []string) string {
	if ps.guesses >= maxGuesses {
		return ""
	}
	ps.guesses++
	return suggest(name, candidates)
}
