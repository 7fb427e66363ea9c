package config

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/steadyllm/steady/internal/dialect"
	"github.com/steadyllm/steady/providers"
)

// referenceFile is the configuration reference: every key the loader accepts, one table row
// each, under the heading of the object that holds it.
const referenceFile = "../docs/configuration.md"

// referenceSections maps each object's heading in the reference to the keys the schema
// accepts in it. A key added to the schema (a field of resilience.Options, a provider setting,
// a shared-state setting…) fails TestReference_DocumentsEveryKey until it has its row.
func referenceSections() map[string][]string {
	return map[string][]string{
		"LLM":                                llmKeys,
		"LLM.Resilience":                     optionNames,
		"LLM.Providers.<name>":               append([]string{keyTypeAlias}, providerKeys...),
		"LLM.Providers.<name>.Limits":        limitKeys,
		"LLM.SharedState":                    sharedStateKeys,
		"LLM.Cost":                           costKeys,
		"LLM.Cost.Prices.<provider>.<model>": priceKeys,
		"LLM.Cost.Budgets.<name>":            budgetKeys,
		"LLM.Cost.Budgets.<name>.Downgrade":  downgradeKeys,
	}
}

// referenceTables reads the reference: for each section heading (a heading that is one code
// span naming an object of referenceSections), the rows of its tables, by key. A row's key is
// its first cell when that cell is one code span; a section runs to the next heading of the
// same or a higher level.
func referenceTables(doc string) (map[string]map[string][]string, error) {
	sections := referenceSections()
	out := map[string]map[string][]string{}
	heading := regexp.MustCompile("^(#{1,6})\\s+`([^`]+)`\\s*$")
	anyHeading := regexp.MustCompile(`^(#{1,6})\s`)
	keyCell := regexp.MustCompile("^`([A-Za-z][A-Za-z0-9]*)`$")
	current, level := "", 0
	for n, line := range strings.Split(doc, "\n") {
		if m := anyHeading.FindStringSubmatch(line); m != nil {
			if current != "" && len(m[1]) <= level {
				current = ""
			}
			if h := heading.FindStringSubmatch(line); h != nil {
				if _, ok := sections[h[2]]; ok {
					if _, dup := out[h[2]]; dup {
						return nil, fmt.Errorf("line %d: a second section for %s", n+1, h[2])
					}
					current, level = h[2], len(h[1])
					out[current] = map[string][]string{}
				}
			}
			continue
		}
		if current == "" || !strings.HasPrefix(strings.TrimSpace(line), "|") {
			continue
		}
		cells := tableCells(line)
		if len(cells) == 0 {
			continue
		}
		if m := keyCell.FindStringSubmatch(cells[0]); m != nil {
			if _, dup := out[current][m[1]]; dup {
				return nil, fmt.Errorf("line %d: %s.%s has two rows", n+1, current, m[1])
			}
			out[current][m[1]] = cells[1:]
		}
	}
	return out, nil
}

// tableCells splits a Markdown table row into its trimmed cells (an escaped \| stays inside
// its cell).
func tableCells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	line = strings.TrimSuffix(line, "|")
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

func readReference(t *testing.T) (string, map[string]map[string][]string) {
	t.Helper()
	b, err := os.ReadFile(referenceFile)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := referenceTables(string(b))
	if err != nil {
		t.Fatalf("%s: %v", referenceFile, err)
	}
	return string(b), tables
}

// Every key the loader accepts has its row in the reference, and every row names a key the
// loader accepts: a key added without documentation, or documentation left behind by a key
// removed or renamed, fails here.
func TestReference_DocumentsEveryKey(t *testing.T) {
	_, tables := readReference(t)
	for section, keys := range referenceSections() {
		rows, ok := tables[section]
		if !ok {
			t.Errorf("%s has no section headed `%s`", referenceFile, section)
			continue
		}
		for _, k := range keys {
			if _, ok := rows[k]; !ok {
				t.Errorf("%s: %s.%s is accepted by the loader but has no row", referenceFile, section, k)
			}
		}
		var extra []string
		for k := range rows {
			if !slices.Contains(keys, k) {
				extra = append(extra, k)
			}
		}
		sort.Strings(extra)
		for _, k := range extra {
			t.Errorf("%s: the row %s.%s names a key the loader does not accept", referenceFile, section, k)
		}
	}
}

// The provider table's second column says which dialects use each key, as the schema does:
// "all", or the dialects by name. A key the loader refuses for a dialect is never documented
// as one it takes.
func TestReference_SaysWhichDialectsUseEachProviderKey(t *testing.T) {
	_, tables := readReference(t)
	rows := tables["LLM.Providers.<name>"]
	word := regexp.MustCompile("`?([a-z-]+)`?")
	for key, f := range providerFields {
		cells, ok := rows[key]
		if !ok || len(cells) == 0 {
			continue // TestReference_DocumentsEveryKey reports it
		}
		want := "all"
		if f.types != nil {
			ts := slices.Clone(f.types)
			sort.Strings(ts)
			want = strings.Join(ts, ", ")
		}
		var got []string
		for _, m := range word.FindAllStringSubmatch(cells[0], -1) {
			got = append(got, m[1])
		}
		sort.Strings(got)
		if strings.Join(got, ", ") != want {
			t.Errorf("%s: LLM.Providers.<name>.%s: the dialects column says %q, the loader takes it for %s", referenceFile, key, cells[0], want)
		}
	}
}

// Every value the loader accepts from a closed set is named in the reference: dialects, chat
// APIs, routing strategies, capabilities, the active probe's kinds and the error kinds of
// LLM.FallbackOn.
func TestReference_NamesEveryAllowedValue(t *testing.T) {
	doc, _ := readReference(t)
	values := map[string][]string{
		"Dialect":      dialect.All,
		"API":          dialect.APIs,
		"Routing":      routingStrategies,
		"Capabilities": providers.CapabilityNames(),
		"ActiveProbe":  {ProbeChat, ProbeNone},
		"FallbackOn":   fallbackKinds,
	}
	for key, vs := range values {
		for _, v := range vs {
			if !strings.Contains(doc, "`"+v+"`") && !strings.Contains(doc, "`\""+v+"\"`") {
				t.Errorf("%s does not name %s's value %q (in a code span)", referenceFile, key, v)
			}
		}
	}
}

// The reader of the reference finds what it should: these cases would pass vacuously if it
// read nothing.
func TestReferenceTables_ReadsSectionsRowsAndEnds(t *testing.T) {
	doc := "# Reference\n## `LLM`\n| key | what |\n|---|---|\n| `Fallback` | the chain |\n| not a key | x |\n" +
		"### `LLM.SharedState`\n| `Address` | host:port \\| socket |\n## Other\n| `Stray` | outside every section |\n"
	got, err := referenceTables(doc)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got["LLM"]["Fallback"]; !ok || len(got["LLM"]) != 1 {
		t.Errorf("LLM rows %v", got["LLM"])
	}
	if cells := got["LLM.SharedState"]["Address"]; len(cells) != 1 || cells[0] != "host:port | socket" {
		t.Errorf("SharedState rows %v", got["LLM.SharedState"])
	}
	for _, rows := range got {
		if _, ok := rows["Stray"]; ok {
			t.Error("a row after the sections' end was read into one")
		}
	}
	if _, err := referenceTables(doc + "## `LLM`\n"); err == nil {
		t.Error("a section given twice was accepted")
	}
}

// The reference ends with examples/config/appsettings.json, which the tests load, in full: a
// reader sees every section together in a file known to be valid.
func TestReference_ShowsTheCompleteExample(t *testing.T) {
	doc, _ := readReference(t)
	example, err := os.ReadFile(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(doc, "```json\n"+string(example)+"```") {
		t.Fatalf("%s does not show %s whole: copy the file into its json block", referenceFile, exampleFile)
	}
}
