package tiktoken_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/steadyllm/steady/providers"
)

// corpusCase is one prompt of ../testdata/corpus.txt (its format is described at its top).
type corpusCase struct {
	name     string // "prose/gettysburg"
	category string // "prose"
	req      providers.ChatRequest
}

// readCorpus parses the corpus file.
func readCorpus(t testing.TB, path string) []corpusCase {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		cases []corpusCase
		cur   *corpusCase
		lines []string
		sink  func(string) // where the text of the current block goes
	)
	flush := func() {
		if sink != nil {
			sink(strings.Join(lines, "\n"))
		}
		sink, lines = nil, nil
	}
	last := func() *providers.Message { return &cur.req.Messages[len(cur.req.Messages)-1] }
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if !strings.HasPrefix(line, "%%") {
			if sink != nil {
				lines = append(lines, line)
			} else if cur != nil && line != "" {
				t.Fatalf("%s:%d: text outside a block", path, n)
			}
			continue
		}
		flush()
		f := strings.Fields(line[2:])
		if len(f) == 0 {
			t.Fatalf("%s:%d: empty directive", path, n)
		}
		if f[0] != "case" && cur == nil {
			t.Fatalf("%s:%d: %q before the first case", path, n, f[0])
		}
		switch f[0] {
		case "case":
			cases = append(cases, corpusCase{name: f[1], category: strings.SplitN(f[1], "/", 2)[0]})
			cur = &cases[len(cases)-1]
		case "system", "user", "assistant":
			role := providers.Role(f[0])
			cur.req.Messages = append(cur.req.Messages, providers.Message{Role: role})
			sink = func(s string) { last().Content = s }
		case "part":
			m := last()
			if m.Content != "" {
				m.Parts = append(m.Parts, providers.TextPart(m.Content))
				m.Content = ""
			}
			sink = func(s string) { m.Parts = append(m.Parts, providers.TextPart(s)) }
		case "call":
			m := last()
			id, name := f[1], f[2]
			sink = func(s string) {
				m.ToolCalls = append(m.ToolCalls, providers.ToolCall{ID: id, Name: name, Arguments: s})
			}
		case "tool":
			cur.req.Messages = append(cur.req.Messages, providers.Message{Role: providers.RoleTool, ToolCallID: f[1]})
			sink = func(s string) { last().Content = s }
		case "tools":
			c := cur
			sink = func(s string) {
				var defs []struct {
					Name        string          `json:"name"`
					Description string          `json:"description"`
					Parameters  json.RawMessage `json:"parameters"`
				}
				if err := json.Unmarshal([]byte(s), &defs); err != nil {
					t.Fatalf("%s: tools: %v", c.name, err)
				}
				for _, d := range defs {
					c.req.Tools = append(c.req.Tools, providers.Tool{Name: d.Name, Description: d.Description, Parameters: d.Parameters})
				}
			}
		case "schema":
			c, name := cur, f[1]
			sink = func(s string) {
				c.req.Schema = &providers.JSONSchema{Name: name, Schema: json.RawMessage(s)}
				c.req.Format = providers.FormatJSONSchema
			}
		default:
			t.Fatalf("%s:%d: unknown directive %q", path, n, f[0])
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

// TestReadCorpus_Shape keeps the corpus what the issue asks of it: at least 60 prompts, in
// every category.
func TestReadCorpus_Shape(t *testing.T) {
	cases := readCorpus(t, corpusPath)
	byCat := map[string]int{}
	for _, c := range cases {
		byCat[c.category]++
		if len(c.req.Messages) == 0 {
			t.Errorf("%s: no messages", c.name)
		}
	}
	if len(cases) < 60 {
		t.Errorf("%d cases, want at least 60", len(cases))
	}
	for _, cat := range []string{"prose", "code", "json", "chat", "tools", "multi"} {
		if byCat[cat] < 5 {
			t.Errorf("category %s has %d cases, want at least 5", cat, byCat[cat])
		}
	}
	t.Log(fmt.Sprint(byCat))
}

const corpusPath = "../testdata/corpus.txt"
