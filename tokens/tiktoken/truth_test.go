package tiktoken_test

import (
	"encoding/json"
	"flag"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/steadyllm/steady/providers"
	"github.com/steadyllm/steady/tokens"
	_ "github.com/steadyllm/steady/tokens/tiktoken"
	"github.com/tiktoken-go/tokenizer/codec"
)

var update = flag.Bool("update", false, "rewrite ../testdata/expected.json from the tokenizer")

const expectedPath = "../testdata/expected.json"

// expected is one case's prompt tokens in each encoding, as the tokenizer counts the
// rendered chat format.
type expected struct {
	Name  string `json:"name"`
	O200k int    `json:"o200k_base"`
	Cl100 int    `json:"cl100k_base"`
}

// models are the models each encoding's expectations are counted for.
var models = map[string]string{tokens.O200kBase: "gpt-4o", tokens.Cl100kBase: "gpt-4"}

// TestCorpus_CountChatMatchesTheTokenizer checks CountChat, through the registered
// encodings, against expected.json: the library's own token counts of each prompt laid out in
// the chat format (render, written independently of package tokens, with the library's codec
// called directly). go test -run TestCorpus -update rewrites the file.
func TestCorpus_CountChatMatchesTheTokenizer(t *testing.T) {
	cases := readCorpus(t, corpusPath)
	codecs := map[string]*codec.Codec{tokens.O200kBase: codec.NewO200kBase(), tokens.Cl100kBase: codec.NewCl100kBase()}
	if *update {
		var out []expected
		for _, c := range cases {
			out = append(out, expected{Name: c.name,
				O200k: render(t, codecs[tokens.O200kBase], &c.req),
				Cl100: render(t, codecs[tokens.Cl100kBase], &c.req)})
		}
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(expectedPath, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(expectedPath)
	if err != nil {
		t.Fatal(err)
	}
	var want []expected
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if len(want) != len(cases) {
		t.Fatalf("expected.json has %d cases, the corpus %d: run go test -run TestCorpus -update", len(want), len(cases))
	}
	for i, c := range cases {
		if want[i].Name != c.name {
			t.Fatalf("case %d is %s in expected.json, %s in the corpus: run -update", i, want[i].Name, c.name)
		}
		for encName, n := range map[string]int{tokens.O200kBase: want[i].O200k, tokens.Cl100kBase: want[i].Cl100} {
			enc, ok := tokens.Lookup(encName)
			if !ok {
				t.Fatalf("%s not registered", encName)
			}
			if got := tokens.CountChatAs(enc, models[encName], &c.req); got != n {
				t.Errorf("%s %s: CountChat = %d, the tokenizer counts %d", c.name, encName, got, n)
			}
			// The stored numbers are still the library's: a change of library version that
			// tokenizes differently shows here rather than passing silently.
			if got := render(t, codecs[encName], &c.req); got != n {
				t.Errorf("%s %s: the rendered prompt now counts %d, expected.json says %d", c.name, encName, got, n)
			}
		}
	}
}

// render counts req as the chat format lays it out, each special token (start, separator,
// end) one token and every text run encoded by the library: per message
// <start>role<sep>content<end>, a tool call <call>name<sep>arguments<end> inside it, then
// <start>assistant<sep> to prime the reply. The tool definitions follow the cookbook's
// num_tokens_for_tools, walked here over the decoded JSON; the schema is its name and text.
func render(t testing.TB, c *codec.Codec, req *providers.ChatRequest) int {
	t.Helper()
	const special = 1
	text := func(s string) int {
		n, err := c.Count(s)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	n := 0
	for _, m := range req.Messages {
		n += special + text(string(m.Role)) + special
		n += text(m.Content)
		for _, p := range m.Parts {
			n += text(p.Text)
		}
		for _, tc := range m.ToolCalls {
			n += special + text(tc.Name) + special + text(tc.Arguments) + special
		}
		n += special
	}
	n += special + text("assistant") + special
	n += renderTools(t, c.GetName(), text, req.Tools)
	if s := req.Schema; s != nil {
		n += text(s.Name) + text(s.Description) + text(string(s.Schema))
	}
	return n
}

// renderTools is the cookbook's tool rule (func_init 7 for o200k_base models, 10 for
// cl100k_base; prop_init 3, prop_key 3, enum_init -3, enum_item 3, func_end 12), with nested
// properties counted like top-level ones.
func renderTools(t testing.TB, encoding string, text func(string) int, tools []providers.Tool) int {
	if len(tools) == 0 {
		return 0
	}
	funcInit := 7
	if encoding == tokens.Cl100kBase {
		funcInit = 10
	}
	var props func(map[string]any) int
	props = func(p map[string]any) int {
		if len(p) == 0 {
			return 0
		}
		n := 3
		for key, v := range p {
			def, _ := v.(map[string]any)
			n += 3
			if enum, ok := def["enum"].([]any); ok && len(enum) > 0 {
				n -= 3
				for _, item := range enum {
					s, ok := item.(string)
					if !ok {
						b, _ := json.Marshal(item)
						s = string(b)
					}
					n += 3 + text(s)
				}
			}
			typ, _ := def["type"].(string)
			if list, ok := def["type"].([]any); ok {
				var names []string
				for _, x := range list {
					s, _ := x.(string)
					names = append(names, s)
				}
				typ = strings.Join(names, " | ")
			}
			desc, _ := def["description"].(string)
			n += text(key + ":" + typ + ":" + strings.TrimSuffix(desc, "."))
			if sub, ok := def["properties"].(map[string]any); ok {
				n += props(sub)
			}
			if items, ok := def["items"].(map[string]any); ok {
				if sub, ok := items["properties"].(map[string]any); ok {
					n += props(sub)
				}
			}
		}
		return n
	}
	n := 0
	for _, tool := range tools {
		n += funcInit + text(tool.Name+":"+strings.TrimSuffix(tool.Description, "."))
		var params map[string]any
		if err := json.Unmarshal(tool.Parameters, &params); err != nil {
			t.Fatalf("tool %s: %v", tool.Name, err)
		}
		if p, ok := params["properties"].(map[string]any); ok {
			n += props(p)
		}
	}
	return n + 12
}

// estimate4 is client.EstimateInputTokens at the time of writing (client/estimate.go): four
// bytes a token, rounded up per message and once for the tools and schema together.
func estimate4(req *providers.ChatRequest) int {
	n := 0
	for _, m := range req.Messages {
		b := len(m.Content)
		for _, p := range m.Parts {
			b += len(p.Text)
		}
		for _, tc := range m.ToolCalls {
			b += len(tc.Name) + len(tc.Arguments)
		}
		n += (b + 3) / 4
	}
	b := 0
	for _, tl := range req.Tools {
		b += len(tl.Name) + len(tl.Description) + len(tl.Parameters)
	}
	if req.Schema != nil {
		b += len(req.Schema.Schema)
	}
	return n + (b+3)/4
}

// TestEstimate_FourBytesIsFarOff measures the client's four-bytes-a-token estimate against
// CountChat (o200k_base, gpt-4o) on the corpus, logs per category its median and worst error
// (the table the README publishes), and fails unless most prompts are off by more than 5 %:
// the reason the exact count exists.
func TestEstimate_FourBytesIsFarOff(t *testing.T) {
	enc, _ := tokens.Lookup(tokens.O200kBase)
	errs := map[string][]float64{}
	far := 0
	cases := readCorpus(t, corpusPath)
	for _, c := range cases {
		exact := tokens.CountChatAs(enc, "gpt-4o", &c.req)
		e := 100 * float64(estimate4(&c.req)-exact) / float64(exact)
		errs[c.category] = append(errs[c.category], e)
		errs["all"] = append(errs["all"], e)
		if e > 5 || e < -5 {
			far++
		}
	}
	cats := make([]string, 0, len(errs))
	for k := range errs {
		cats = append(cats, k)
	}
	sort.Strings(cats)
	t.Logf("4-bytes estimate vs CountChat (o200k_base, gpt-4o), signed error in %%:")
	t.Logf("%-8s %5s %8s %8s", "category", "cases", "median", "worst")
	for _, k := range cats {
		med, worst := medianWorst(errs[k])
		t.Logf("%-8s %5d %+7.1f%% %+7.1f%%", k, len(errs[k]), med, worst)
	}
	t.Logf("%d of %d prompts off by more than 5 %%", far, len(cases))
	if far*10 < len(cases)*8 {
		t.Errorf("only %d of %d prompts are off by more than 5 %%: is the estimate still four bytes a token?", far, len(cases))
	}
}

// medianWorst returns the median of errs and the one farthest from zero.
func medianWorst(errs []float64) (median, worst float64) {
	s := append([]float64(nil), errs...)
	sort.Float64s(s)
	median = s[len(s)/2]
	if len(s)%2 == 0 {
		median = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	for _, e := range s {
		if e*e > worst*worst {
			worst = e
		}
	}
	return median, worst
}
