package mocks

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestContentText_JoinsTextOfStringsAndNestedBlocks(t *testing.T) {
	for _, tc := range []struct{ name, raw, want string }{
		{"empty", ``, ""},
		{"string", `"hello"`, "hello"},
		{"escaped string", `"a\"b\u00e9\n"`, "a\"bé\n"},
		{"null", `null`, ""},
		{"number", `12`, ""},
		{"blocks", `[{"type":"text","text":"one "},{"type":"image","source":{"text":"no"}},{"type":"text","text":"two"}]`, "one two"},
		{"nested tool result", `[{"type":"tool_result","content":[{"type":"text","text":"deep"}]},{"text":"!"}]`, "deep!"},
		{"tool result with string content", `[{"type":"tool_result","content":"plain"}]`, "plain"},
		{"keys match as encoding/json does", `[{"TEXT":"a"},{"te\u0078t":"b"}]`, "ab"},
		{"non-string text is ignored", `[{"text":5},{"text":{"text":"x"}},{"text":"y"}]`, "y"},
		{"elements that are not objects", `["s",1,null,[{"text":"no"}],{"text":"z"}]`, "z"},
		{"white space everywhere", " [ { \"text\" : \"w\" } , { \"content\" : [ { \"text\" : \"v\" } ] } ] ", "wv"},
		{"text in document order", `[{"content":[{"text":"first"}],"text":"second"}]`, "firstsecond"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := contentText(json.RawMessage(tc.raw)); got != tc.want {
				t.Errorf("contentText(%s) = %q, want %q", tc.raw, got, tc.want)
			}
		})
	}
}

func TestInstance_MatchesTheSchema(t *testing.T) {
	for _, tc := range []struct{ name, schema, want string }{
		{"string", `{"type":"string"}`, `"text"`},
		{"integer", `{"type":"integer"}`, `1`},
		{"type list takes the first", `{"type":["boolean","null"]}`, `true`},
		{"type list whose first is not a string", `{"type":[1,"string"]}`, `{}`},
		{"null", `{"type":"null"}`, `null`},
		{"enum", `{"type":"string","enum":["b","a"]}`, `"b"`},
		{"enum of objects", `{"enum":[{"k":[1,2]},"x"]}`, `{"k":[1,2]}`},
		{"const wins", `{"const":{"x":1},"enum":["e"],"type":"string"}`, `{"x":1}`},
		{"array", `{"type":"array","items":{"type":"number"}}`, `[1]`},
		{"array without items", `{"type":"array"}`, `[]`},
		{"object", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"object","properties":{"c":{"type":"boolean"}}}},"required":["a"]}`,
			`{"a":"text","b":{"c":true}}`},
		{"escaped property name", `{"properties":{"\u0061\"":{"type":"integer"}}}`, `{"a\"":1}`},
		{"keys match case-insensitively", `{"TYPE":"string"}`, `"text"`},
		{"not an object", `true`, `{}`},
		{"empty", ``, `{}`},
		{"unknown keys skipped", `{"description":"d","$defs":{"x":{"type":"string"}},"additionalProperties":false,"type":"integer"}`, `1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := instanceJSON(json.RawMessage(tc.schema)); got != tc.want {
				t.Errorf("instance(%s) = %s, want %s", tc.schema, got, tc.want)
			}
		})
	}
}

func TestInstance_GivesUpPastMaxJSONDepth(t *testing.T) {
	deep := strings.Repeat(`{"type":"array","items":`, MaxJSONDepth+5) + `{"type":"string"}` + strings.Repeat(`}`, MaxJSONDepth+5)
	got := instanceJSON(json.RawMessage(deep))
	if strings.Count(got, "[") != MaxJSONDepth+1 || !strings.Contains(got, "{}") {
		t.Errorf("instance nested %d arrays deep: %s", strings.Count(got, "["), got)
	}
}

func TestWithinDepth_CountsOnlyStructureOutsideStrings(t *testing.T) {
	for _, tc := range []struct {
		text  string
		limit int
		want  bool
	}{
		{`{}`, 1, true},
		{`{"a":[]}`, 1, false},
		{`{"a":[]}`, 2, true},
		{`"[[[[[["`, 1, true},
		{`{"a":"\"[[[["}`, 1, true},
		{`[[],[],[[]]]`, 2, false},
		{`[[],[],[[]]]`, 3, true},
		{`12`, 0, true},
	} {
		if got := withinDepth([]byte(tc.text), tc.limit); got != tc.want {
			t.Errorf("withinDepth(%s, %d) = %t", tc.text, tc.limit, got)
		}
	}
}

// FuzzScanner checks that the walkers end, without a panic, on any JSON text encoding/json
// accepts, and that skip consumes a value exactly as far as encoding/json reads it.
func FuzzScanner(f *testing.F) {
	for _, seed := range []string{`"x"`, `[{"text":"a","content":[{"text":"b"}]}]`, `{"type":"object","properties":{"a":{"enum":[1]}}}`,
		`[1, true, null, -2.5e3, "\"]", {"a":[{}]}]`, ` {"items" : {"type":["string"]}} `} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if !json.Valid([]byte(text)) || !withinDepth([]byte(text), MaxJSONDepth) {
			return
		}
		_ = contentText(json.RawMessage(text))
		_ = instanceJSON(json.RawMessage(text))
		s := scanner{b: []byte(text)}
		s.skip()
		if rest := strings.TrimSpace(text[s.i:]); rest != "" {
			t.Errorf("skip stopped at %d of %q, leaving %q", s.i, text, rest)
		}
	})
}
